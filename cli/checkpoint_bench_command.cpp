// ibt checkpoint-bench: checkpoint write and read bandwidth of the current job for a
// given state size, without training. Every rank writes a synthetic state of SIZE bytes
// through the same path as `ibt train --checkpoint-every` (models/checkpoint/: one
// serial-HDF5 shard per rank, fsync, checksum, manifest written last by rank 0) and then
// reads its shard back, checking the data against what it wrote.
#include <zlib.h>
#include <boost/program_options.hpp>

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/cli.hpp"
#include "cli/commands.hpp"
#include "collectives/host_memory.hpp"
#include "collectives/runtime/job_guard.hpp"
#include "collectives/runtime/mpi_session.hpp"
#include "collectives/runtime/run_recorder.hpp"
#include "collectives/sizes.hpp"
#include "core/errors.hpp"
#include "core/stats.hpp"
#include "core/text_wrap.hpp"
#include "models/checkpoint/bench_tables.hpp"
#include "models/checkpoint/checkpointer.hpp"
#include "models/checkpoint/shard_io.hpp"
#include "models/training/train_runner.hpp"

namespace ibt::suites {
namespace {

namespace po = boost::program_options;
namespace fs = std::filesystem;

struct BenchArgs {
  std::string state_bytes, dir = "ibt-checkpoint-bench", out;
  int repeats = 3;
  bool keep = false;
  bool cached_reads = false;
  bool wide = false;  // the "#" lines on one line each, however long
  double timeout = 600;
};

// A "#" line of the report within 120 columns (continued on "#   " lines), or whole with --wide.
void print_comment(const BenchArgs& args, const char* format, ...) __attribute__((format(printf, 2, 3)));
void print_comment(const BenchArgs& args, const char* format, ...) {
  char line[2048];
  va_list list;
  va_start(list, format);
  std::vsnprintf(line, sizeof line, format, list);
  va_end(list);
  std::fputs(comment_lines(line, report_width(args.wide)).c_str(), stdout);
}

const char* kUsage = "mpiexec -n N ibt checkpoint-bench --state-bytes SIZE [--dir D] [--repeats N] [--out F] [--keep]";
const char* kAbout =
    "Each rank writes a synthetic training state of SIZE bytes (K, M, G suffixes) as a checkpoint\n"
    "shard, exactly as `ibt train --checkpoint-every` does (serial HDF5, one file per rank, fsync,\n"
    "checksum, then rank 0's manifest), then reads its shard back and checks every value.\n"
    "Per repeat: write time per rank = create + write + close + fsync of its shard; read time = open\n"
    "and read of its shard. Per-rank bandwidth = bytes / own time; aggregate = all bytes / the\n"
    "slowest rank's time. Before reading, each rank asks the kernel to drop its (fsynced) shard from\n"
    "the page cache (posix_fadvise DONTNEED) and reports how much stayed resident (mincore); with\n"
    "--cached-reads it does not, and reads come from the page cache. Either way reads may still be\n"
    "served from a cache (the page cache, or a virtual disk's host): read figures are optimistic,\n"
    "an upper bound for a restart on a cold node.\n"
    "D must not hold checkpoints already; the step directories written are removed afterwards\n"
    "unless --keep.\n";

po::options_description describe_options(BenchArgs& a) {
  po::options_description o("options");
  o.add_options()("help,h", "show this help")("state-bytes", po::value(&a.state_bytes),
                                              "bytes of state per rank (required; K, M, G suffixes)")(
      "dir", po::value(&a.dir)->default_value(a.dir), "directory for the checkpoints (shared by all ranks)")(
      "repeats", po::value(&a.repeats)->default_value(a.repeats), "write+read rounds")(
      "out", po::value(&a.out), "append this run (kind checkpoint_bench) to an HDF5 results file")(
      "keep", po::bool_switch(&a.keep), "keep the written checkpoints")(
      "wide", po::bool_switch(&a.wide),
      "the header and summary lines on one line each, however long; by default every line fits 120 columns, a "
      "long one continuing on a '#   ' line")("cached-reads", po::bool_switch(&a.cached_reads),
                                              "do not drop the shards from the page cache before reading")(
      "timeout,T", po::value(&a.timeout)->default_value(a.timeout),
      "seconds one write+read round may take before the job is ended naming the rank, op and group (exit 3)");
  return o;
}

std::uint32_t data_crc(const std::vector<float>& d) {
  return static_cast<std::uint32_t>(
      crc32_z(crc32(0L, Z_NULL, 0), reinterpret_cast<const Bytef*>(d.data()), d.size() * sizeof(float)));
}

struct Stats {
  double median = 0, min = 0, max = 0;
};
Stats stats_of(const std::vector<double>& v) {
  return {quantile(v, 0.5), *std::min_element(v.begin(), v.end()), *std::max_element(v.begin(), v.end())};
}

// Parses argv into `args`; false when --help was asked for (rank 0 has printed it).
bool parse_bench_args(int argc, char** argv, const MpiSession& mpi, BenchArgs& args) {
  const po::options_description options = describe_options(args);
  po::variables_map vm;
  store_command_line(argc, argv, options, vm);
  if (vm.count("help")) {
    if (mpi.rank() == 0)
      print_help(std::cout, kUsage, kAbout, options,
                 {"mpiexec -n 2 ibt checkpoint-bench --state-bytes 256M --repeats 5 --out ckpt-bench.h5"});
    return false;
  }
  po::notify(vm);
  refuse_nonsense_numbers(vm);
  return true;
}

// The flags checked; returns the state's bytes per rank.
std::size_t check_bench_args(const BenchArgs& args) {
  require_timeout(args.timeout, "--timeout");
  if (args.state_bytes.empty()) throw UsageError("--state-bytes SIZE is required (e.g. 256M)");
  const std::size_t bytes = parse_size(args.state_bytes, "--state-bytes");
  if (bytes < sizeof(float) || bytes % sizeof(float) != 0)
    throw UsageError("--state-bytes " + args.state_bytes + " must be a positive multiple of 4 (fp32 values)");
  if (args.repeats < 1) throw UsageError("--repeats must be at least 1, got " + std::to_string(args.repeats));
  return bytes;
}

// Refused on every rank before anything is written: too little memory, an --out that
// cannot take the run, a --dir that holds checkpoints.
void check_job_can_run(const BenchArgs& args, std::size_t bytes) {
  // The state and the copy read back, on every rank of this host: planned, not tried.
  require_memory_on_every_host(MPI_COMM_WORLD, 2.0 * static_cast<double>(bytes),
                               "--state-bytes " + args.state_bytes + " (the state and its read-back copy)");
  check_output_on_all_ranks(args.out, MPI_COMM_WORLD);
  checkpoint::refuse_existing_checkpoints(
      args.dir, "--dir", "choose another directory (the benchmark removes what it writes)", MPI_COMM_WORLD);
}

const char* read_note_for(const BenchArgs& args) {
  return args.cached_reads ? "--cached-reads: reads follow the writes and come from the page cache (optimistic)"
                           : "shards are dropped from the page cache before reading (resident fraction "
                             "shown), but reads may still be served from a cache (optimistic)";
}

void record_bench_config(RunRecorder& recorder, const BenchArgs& args, std::size_t bytes) {
  recorder.set_attr("config", nlohmann::json({{"state_bytes_per_rank", bytes},
                                              {"dir", args.dir},
                                              {"repeats", args.repeats},
                                              {"cached_reads", args.cached_reads},
                                              {"format", "serial HDF5, one shard per rank, manifest last"}})
                                  .dump());
  recorder.set_attr("read_note", std::string(read_note_for(args)));
}

// The state: one fp32 array of distinct values per rank (no two ranks write the same bytes).
models::TrainingState synthetic_state(std::size_t bytes, int rank) {
  models::TrainingState state;
  state.seed = 1;
  state.arrays.push_back({"bench/state", std::vector<float>(bytes / sizeof(float))});
  std::uint32_t x = 2463534242u + static_cast<std::uint32_t>(rank);
  for (float& v : state.arrays[0].data) {
    x ^= x << 13, x ^= x >> 17, x ^= x << 5;  // xorshift32
    v = static_cast<float>(x) * 1e-9f;
  }
  return state;
}

void print_bench_header(const BenchArgs& args, std::size_t bytes, int size) {
  print_comment(args, "# ibt checkpoint-bench: %d ranks x %s per rank into %s, %d repeats\n", size,
                format_size(bytes).c_str(), args.dir.c_str(), args.repeats);
  print_comment(args, "# %s\n", read_note_for(args));
  print_comment(args,
                "# %6s %14s %14s %14s %14s %9s  (GB/s = 1e9 B/s; per rank: median over ranks;"
                " resident: max over ranks of the shard's pages in the page cache before reading)\n",
                "repeat", "write_agg", "write_rank", "read_agg", "read_rank", "resident");
}

// One write+read round on every rank: the shard saved, dropped from the page cache
// (unless --cached-reads), read back and checked against what was written.
struct RoundTrip {
  checkpoint::SaveReport write;
  std::vector<double> resident;  // per rank: fraction of the shard in the page cache before reading
  std::vector<double> read_s;    // per rank
  int bad = 0;                   // ranks that read back other data
};

RoundTrip write_and_read_back(const BenchArgs& args, const models::TrainingState& state,
                              const checkpoint::RunIdentity& identity, std::uint32_t want, int rank, int size,
                              std::vector<std::string>& written) {
  RoundTrip t;
  t.write = checkpoint::save_checkpoint(args.dir, state, identity, MPI_COMM_WORLD);
  written.push_back(t.write.step_dir);
  const std::string shard = (fs::path(t.write.step_dir) / checkpoint::shard_file_name(rank)).string();
  double resident = 1.0;
  std::string error;
  try {
    if (!args.cached_reads) resident = checkpoint::evict_from_page_cache(shard);
  } catch (const std::exception& e) {
    error = e.what();
  }
  error = checkpoint::agree_on_error(error, MPI_COMM_WORLD);
  if (!error.empty()) throw RuntimeError(error);
  t.resident.resize(size);
  MPI_Allgather(&resident, 1, MPI_DOUBLE, t.resident.data(), 1, MPI_DOUBLE, MPI_COMM_WORLD);
  MPI_Barrier(MPI_COMM_WORLD);
  const double t0 = MPI_Wtime();
  models::TrainingState back;
  try {
    back = checkpoint::read_shard(shard);
  } catch (const std::exception& e) {
    error = e.what();
  }
  double read_s = MPI_Wtime() - t0;
  error = checkpoint::agree_on_error(error, MPI_COMM_WORLD);
  if (!error.empty()) throw RuntimeError(error);
  t.bad = back.arrays.size() != 1 || data_crc(back.arrays[0].data) != want;
  MPI_Allreduce(MPI_IN_PLACE, &t.bad, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  t.read_s.resize(size);
  MPI_Allgather(&read_s, 1, MPI_DOUBLE, t.read_s.data(), 1, MPI_DOUBLE, MPI_COMM_WORLD);
  return t;
}

// The bandwidths of every round, for the summary.
struct BenchTotals {
  std::vector<double> write_rank_bw, read_rank_bw, write_agg, read_agg;
  int wrong = 0;
  double max_resident = 0;
};

// Adds a round to the totals; rank 0 prints its line and stores its per-rank samples.
void add_round(int rep, const RoundTrip& t, int rank, int size, RunRecorder* recorder, BenchTotals& totals) {
  const checkpoint::SaveReport& w = t.write;
  totals.max_resident = std::max(totals.max_resident, *std::max_element(t.resident.begin(), t.resident.end()));
  totals.wrong += t.bad;
  const std::vector<double> wbw = w.rank_bandwidths();
  std::vector<double> rbw;
  for (int r = 0; r < size; ++r) rbw.push_back(static_cast<double>(w.bytes[r]) / t.read_s[r]);
  const double ragg = static_cast<double>(w.total_bytes()) / *std::max_element(t.read_s.begin(), t.read_s.end());
  totals.write_rank_bw.insert(totals.write_rank_bw.end(), wbw.begin(), wbw.end());
  totals.read_rank_bw.insert(totals.read_rank_bw.end(), rbw.begin(), rbw.end());
  totals.write_agg.push_back(w.aggregate_bandwidth());
  totals.read_agg.push_back(ragg);
  if (rank != 0) return;
  std::printf("  %6d %14.3f %14.3f %14.3f %14.3f %8.1f%%%s\n", rep, w.aggregate_bandwidth() * 1e-9,
              quantile(wbw, 0.5) * 1e-9, ragg * 1e-9, quantile(rbw, 0.5) * 1e-9,
              100 * *std::max_element(t.resident.begin(), t.resident.end()), t.bad ? "  WRONG DATA READ BACK" : "");
  std::fflush(stdout);
  if (recorder->active())
    for (int r = 0; r < size; ++r)
      recorder->append(checkpoint::BenchSampleRow{rep, r, static_cast<double>(w.bytes[r]), w.write_seconds[r],
                                                  wbw[r] * 1e-9, t.read_s[r], rbw[r] * 1e-9, t.resident[r]});
}

// Rank 0: removes the step directories written (and --dir when left empty).
void remove_written(const BenchArgs& args, const std::vector<std::string>& written, int size) {
  std::error_code ec;
  for (const std::string& d : written) {
    for (int r = 0; r < size; ++r) fs::remove(fs::path(d) / checkpoint::shard_file_name(r), ec);
    fs::remove(fs::path(d) / checkpoint::kManifestName, ec);
    fs::remove(d, ec);  // only when now empty
  }
  fs::remove(args.dir, ec);  // only when empty
}

// Rank 0: the write and read summary lines and rows, the run's status; the exit status.
int finish_bench(const BenchArgs& args, const BenchTotals& totals, RunRecorder& recorder) {
  const Stats wr = stats_of(totals.write_rank_bw), rr = stats_of(totals.read_rank_bw), wa = stats_of(totals.write_agg),
              ra = stats_of(totals.read_agg);
  print_comment(
      args, "# %-6s per rank GB/s median %.3f (min %.3f, max %.3f); aggregate GB/s median %.3f (min %.3f, max %.3f)\n",
      "write", wr.median * 1e-9, wr.min * 1e-9, wr.max * 1e-9, wa.median * 1e-9, wa.min * 1e-9, wa.max * 1e-9);
  print_comment(args,
                "# %-6s per rank GB/s median %.3f (min %.3f, max %.3f); aggregate GB/s median %.3f (min %.3f, max %.3f)"
                " (optimistic: up to %.0f%% of a shard's pages were in the page cache when read, and a cache below it"
                " may serve the rest)\n",
                "read", rr.median * 1e-9, rr.min * 1e-9, rr.max * 1e-9, ra.median * 1e-9, ra.min * 1e-9, ra.max * 1e-9,
                100 * totals.max_resident);
  if (recorder.active()) {
    for (auto [op, r, a] : {std::tuple{"write", wr, wa}, std::tuple{"read", rr, ra}})
      recorder.append(checkpoint::BenchSummaryRow{op, r.median * 1e-9, r.min * 1e-9, r.max * 1e-9, a.median * 1e-9,
                                                  a.min * 1e-9, a.max * 1e-9});
    std::printf("# results: %s, run %s\n", args.out.c_str(), recorder.run_id().c_str());
  }
  if (totals.wrong) {
    std::printf("# WRONG: %d rank-repeats read back data that differs from what they wrote\n", totals.wrong);
    recorder.finish(store::RunStatus::failed, "data read back differs from what was written");
    return kExitFailure;
  }
  recorder.finish(store::RunStatus::complete);
  return kExitOk;
}

int run(int argc, char** argv, MpiSession& mpi) {
  BenchArgs args;
  if (!parse_bench_args(argc, argv, mpi, args)) return kExitOk;
  const std::size_t bytes = check_bench_args(args);
  check_job_can_run(args, bytes);
  const int rank = mpi.rank(), size = mpi.size();

  std::unique_ptr<RunRecorder> recorder = open_run_on_all_ranks(args.out, "checkpoint_bench", MPI_COMM_WORLD);
  JobGuard guard("checkpoint-bench", rank, recorder.get());
  record_provenance(recorder.get(), argc, argv, MPI_COMM_WORLD);
  if (recorder && recorder->active()) record_bench_config(*recorder, args, bytes);

  models::TrainingState state = synthetic_state(bytes, rank);
  const std::uint32_t want = data_crc(state.arrays[0].data);
  const checkpoint::RunIdentity identity{"checkpoint-bench", "synthetic state", size, 1, 0, "none"};
  if (rank == 0) print_bench_header(args, bytes, size);
  BenchTotals totals;
  std::vector<std::string> written;
  for (int rep = 0; rep < args.repeats; ++rep) {
    WatchdogScope watch(guard.watchdog(), args.timeout,
                        "checkpoint-bench repeat " + std::to_string(rep) + " (write and read)");
    state.steps_done = rep;
    const RoundTrip t = write_and_read_back(args, state, identity, want, rank, size, written);
    add_round(rep, t, rank, size, recorder.get(), totals);
  }

  if (!args.keep && rank == 0) remove_written(args, written, size);
  if (rank != 0) return totals.wrong ? kExitFailure : kExitOk;
  return finish_bench(args, totals, *recorder);
}

}  // namespace

int checkpoint_bench_main(int argc, char** argv) { return run_mpi_suite("checkpoint-bench", argc, argv, run); }

}  // namespace ibt::suites
