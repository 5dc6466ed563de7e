#include "models/training/train_runner.hpp"

#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "collectives/arrival_gate.hpp"
#include "collectives/host_memory.hpp"
#include "collectives/provenance.hpp"
#include "collectives/runtime/job_facts.hpp"
#include "collectives/runtime/run_recorder.hpp"
#include "core/command_line.hpp"
#include "core/errors.hpp"
#include "core/stats.hpp"
#include "core/text_table.hpp"
#include "ibt/version.hpp"
#include "models/engine/blas.hpp"
#include "models/engine/check_margins.hpp"
#include "models/engine/data.hpp"
#include "models/engine/reference_trainer.hpp"
#include "models/engine/sgemm_peak.hpp"
#include "models/executor/copy_gather.hpp"
#include "models/plan/accounting.hpp"
#include "models/training/train_check.hpp"
#include "models/training/train_checkpoints.hpp"
#include "models/training/train_peak.hpp"
#include "models/training/train_tables.hpp"
#include "reports/store/store.hpp"
#include "reports/tables/steps_table.hpp"

extern char** environ;

namespace ibt::suites {

namespace {

using namespace ibt::models;

// Peak resident memory of this process (VmHWM), bytes; 0 when unknown.
double peak_rss_bytes() {
  std::ifstream status("/proc/self/status");
  std::string key;
  while (status >> key) {
    if (key == "VmHWM:") {
      double kib = 0;
      status >> kib;
      return kib * 1024.0;
    }
    std::getline(status, key);
  }
  return 0;
}

}  // namespace

int blas_threads_for_run(int requested, int ranks) {
  if (requested > 0) return requested;
  const char* env = std::getenv("OPENBLAS_NUM_THREADS");
  if (ranks != 1 || !env || !*env) return 1;
  char* end = nullptr;
  const long n = std::strtol(env, &end, 10);
  if (*end != '\0' || n < 1 || n > 4096)
    throw UsageError(std::string("OPENBLAS_NUM_THREADS=") + env + " is not a thread count (a positive integer)");
  return static_cast<int>(n);
}

void normalize_peak_flags(bool old_spelling_given, TrainOptions& o) {
  if (old_spelling_given) {
    if (o.peak_tflops > 0)
      throw UsageError(
          "--peak-gflops and --peak-tflops are one option (--peak-gflops is its old "
          "spelling, in GFLOP/s): give --peak-tflops once");
    note_old_spelling("peak-gflops", "peak-tflops");
  }
  if (o.executor.kind != "cuda" && o.peak_tflops > 0) {
    o.peak_gflops = o.peak_tflops * 1e3;
    o.peak_tflops = 0;
  }
}

double measure_sgemm_peak_gflops(MPI_Comm world, int threads) {
  double gflops = models::measure_sgemm_peak_gflops(threads);
  int size = 1;
  MPI_Comm_size(world, &size);
  std::vector<double> all(size);
  MPI_Allgather(&gflops, 1, MPI_DOUBLE, all.data(), 1, MPI_DOUBLE, world);
  std::sort(all.begin(), all.end());
  return all[size / 2];
}

void record_provenance(RunRecorder* rec, int argc, char** argv, MPI_Comm world) {
  const JobFacts facts = gather_job_facts(world);
  if (!rec || !rec->active()) {
    record_job_facts(nullptr, facts, argv[0]);  // the warning, without a file to record it in
    return;
  }
  RunRecorder& recorder = *rec;
  int size = 1;
  MPI_Comm_size(world, &size);
  recorder.set_attr("command_line", joined_command_line(argc, argv));
  recorder.set_attr("ibt_version", std::string(kVersion));
  recorder.set_attr("git_commit", std::string(kGitCommit));
  recorder.set_attr("world_size", static_cast<std::int64_t>(size));
  record_job_facts(&recorder, facts, argv[0]);
  recorder.set_attr("backend", std::string("mpi"));
  char version[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  MPI_Get_library_version(version, &len);
  recorder.set_attr("mpi_library", std::string(version, static_cast<size_t>(len)));
  recorder.set_environment(allowed_environment(environ));
}

std::string world_size_mismatch(const ParallelSplit& s, int world) {
  const long long model_parallel = static_cast<long long>(s.tp) * s.pp * s.cp;
  const long long product = s.dp * model_parallel;
  if (product == world || s.dp < 1 || model_parallel < 1) return "";  // a degree below 1 is validate()'s to name
  const std::string names = s.cp > 1 ? "dp*tp*pp*cp" : "dp*tp*pp";
  // The split nearest the one asked for that this job can run: the same model-parallel
  // degrees with the data-parallel degree that fills the job, where they divide it.
  const std::string example = world % model_parallel == 0
                                  ? "--dp " + std::to_string(world / model_parallel)
                                  : "--dp " + std::to_string(world) + " --tp 1 --pp 1" + (s.cp > 1 ? " --cp 1" : "");
  return names + " (" + std::to_string(product) + ") != world size (" + std::to_string(world) +
         "): run with mpiexec -n " + std::to_string(product) + ", or choose a split whose product is " +
         std::to_string(world) + " (e.g. " + example + ")";
}

void check_training(const ModelConfig& model, const TrainOptions& o, MPI_Comm world) {
  int size = 1;
  MPI_Comm_size(world, &size);
  if (const std::string mismatch = world_size_mismatch(o.split, size); !mismatch.empty()) throw UsageError(mismatch);
  const std::string why = train_executor_check(o.executor, o.split, model, size);
  if (!why.empty()) throw UsageError(why);
  const bool on_gpu = o.executor.kind == "cuda";
  if (on_gpu && o.peak_gflops > 0) throw UsageError("--peak-gflops is the cpu executor's old flag: give --peak-tflops");
  if (!on_gpu && (o.peak_tflops > 0 || o.gemm_peak_tflops > 0 || !o.gemm_peak_file.empty()))
    throw UsageError("--gemm-peak-tflops and --gemm-peak-from are the cuda executor's");
  if (on_gpu && (o.checkpoint_every > 0 || !o.resume_dir.empty()))
    throw UsageError(
        "--checkpoint-every and --resume are the cpu executor's: the cuda executor does not save its "
        "device state yet");
  if (o.gemm_peak_tflops > 0 && !o.gemm_peak_file.empty())
    throw UsageError("give --gemm-peak-tflops or --gemm-peak-from, not both");

  if (!on_gpu) {
    // Planned, not tried: the model state and activations of the heaviest stage, on every
    // rank of this host, refused before anything is allocated (exit 2).
    double need = 0;
    for (int stage = 0; stage < o.split.pp; ++stage) {
      const RankMemory m = memory_per_rank(model, o.split, fp32_adam(), stage);
      need = std::max(need, m.weights + m.grads + m.optimizer + m.activations);
    }
    require_memory_on_every_host(
        world, need,
        "--model " + model.name + " at " + describe(o.split) +
            " (weights, gradients, AdamW states and activations per rank, models/plan/accounting.hpp)");
  }
}

namespace {

// Everything the steps need, made in this order before the first one. Not movable: the
// executor and the reference keep references to the data source and the config.
struct TrainSetup {
  std::unique_ptr<DataSource> data;
  TrainConfig train;
  std::unique_ptr<TrainExecutor> executor;
  Peak peak, gemm_peak;  // per rank
  CheckTolerance tol{};
  bool per_tensor = false;        // --check on an executor with per-tensor figures and copies (cpu)
  CheckMargins margins;           // rank 0, --check: the largest differences so far
  CheckMargins reseeded_margins;  // the same over the steps after the first, each from the split's weights
  int first_checked_step = 0;     // a resumed run's first step: its reference replayed, not reseeded
  double flops_per_step = 0;
  std::unique_ptr<ReferenceTrainer> reference;  // rank 0, with --check or --dump
  std::unique_ptr<store::Store> dump_store;
  std::unique_ptr<store::Run> dump;  // rank 0, with --dump

  TrainSetup() = default;
  TrainSetup(const TrainSetup&) = delete;
  TrainSetup& operator=(const TrainSetup&) = delete;
};

// --dump: the serial reference's full weights (or gradients) under `group`.
void dump_tensors(store::Run& dump, ReferenceTrainer& reference, const std::string& group, bool grads) {
  for (Param* p : reference.model().params()) {
    const Tensor& t = grads ? p->grad : p->value;
    std::vector<double> d(t.data.begin(), t.data.end());
    std::vector<std::uint64_t> shape(t.shape.begin(), t.shape.end());
    dump.write_array(group + "/" + p->name, shape, d.data());
  }
}

// Rank 0, --dump: opens the dump run and writes the initial weights.
void open_dump(TrainSetup& s, const ModelConfig& model, const TrainOptions& o) {
  s.dump_store = store::open_for_append(o.dump_path);
  s.dump = s.dump_store->begin_run("train_dump");
  s.dump->set_attr("model", model.name);
  s.dump->set_attr("split", describe(o.split));
  s.dump->set_attr("seed", static_cast<std::int64_t>(o.seed));
  s.dump->set_attr("data", s.data->describe());
  s.dump->set_attr("layout", std::string("params/<name> initial weights, grads/<name> step-0 gradients (full, "
                                         "float64, [out,in] row-major: y = x W^T); batch/step<k>/{inputs,targets} "
                                         "[sequences, seq_len]; losses [steps] mean cross-entropy per step"));
  dump_tensors(*s.dump, *s.reference, "params", false);
}

void set_up_training(TrainSetup& s, const ModelConfig& model, const TrainOptions& o, MPI_Comm world, int rank,
                     int threads) {
  if (o.data_file.empty()) {
    s.data = std::make_unique<SyntheticData>(model.vocab, model.seq_len, o.seed);
  } else {
    s.data = std::make_unique<TokenFileData>(o.data_file, o.token_bytes, model.vocab, model.seq_len,
                                             static_cast<int>(o.split.global_batch()));
  }
  s.train.seed = o.seed;
  s.train.adam.lr = o.lr;
  s.train.microbatches = o.split.microbatches;
  s.train.micro_batch_size = o.split.micro_batch_size;
  s.train.data_parallel = o.split.dp;
  // The executor first: without a GPU the cuda one fails here, before anything is measured.
  s.executor = make_train_executor(o.executor, model, o.split, s.train, *s.data, world);
  s.peak = rank_peak(o, *s.executor, world, threads);
  s.gemm_peak = gemm_peak_of(o, *s.executor, world);
  s.tol = check_tolerance(s.executor->kind(), s.executor->precision(), model.tied_embeddings, model.is_moe());
  const GradFault fault = parse_grad_fault(o.inject_grad_fault);
  models::CpuExecutor* cpu = s.executor->checkpointable();  // (the cpu executor)
  if (!fault.tensor.empty() && !cpu) throw UsageError("--inject-grad-fault: the cpu executor's");
  if (!fault.tensor.empty()) cpu->inject_grad_fault(fault.tensor, fault.scale);
  s.per_tensor = o.check && cpu;
  if (cpu) cpu->set_per_tensor_sums(s.per_tensor);
  if (cpu) cpu->set_tensor_copies(s.per_tensor);
  s.flops_per_step = model_flops_per_step(model, static_cast<double>(o.split.global_batch()));
  if ((o.check || !o.dump_path.empty()) && rank == 0)
    s.reference = std::make_unique<ReferenceTrainer>(model, s.train, *s.data);
  // Agreed: a dump file that cannot be opened now (a reader's lock) ends every rank alike.
  agree_on_rank0(world, [&] {
    if (!o.dump_path.empty()) open_dump(s, model, o);
  });
}

void record_training_attrs(RunRecorder& recorder, const ModelConfig& model, const TrainOptions& o,
                           const TrainSetup& s) {
  const TrainExecutor& exec = *s.executor;
  recorder.set_attr("model", model.name);
  recorder.set_attr("split", describe(o.split));
  recorder.set_attr("uses_pp", static_cast<std::int64_t>(o.split.pp > 1));
  recorder.set_attr("data", s.data->describe());
  recorder.set_attr("peak_gflops_per_rank", s.peak.gflops);
  recorder.set_attr("peak_source", s.peak.source);
  recorder.set_attr("blas_threads", static_cast<std::int64_t>(blas_threads()));  // as OpenBLAS took it
  recorder.set_attr("executor", exec.kind());
  recorder.set_attr("precision", exec.precision());
  if (o.executor.kind == "cuda") recorder.set_attr("gpu_name", exec.device_name());
  if (s.gemm_peak.gflops > 0) {
    recorder.set_attr("gemm_peak_gflops_per_rank", s.gemm_peak.gflops);
    recorder.set_attr("gemm_peak_source", s.gemm_peak.source);
  }
  recorder.set_attr("model_flops_per_step", s.flops_per_step);
  recorder.set_attr("flops_convention",
                    std::string("model FLOPs = 6*matmul_active + attention over the full "
                                "sequence (causal masking not discounted), models/plan/accounting.hpp"));
  nlohmann::json cfg = {{"dp", o.split.dp},
                        {"tp", o.split.tp},
                        {"pp", o.split.pp},
                        {"cp", o.split.cp},
                        {"cp_comm", std::string(to_string(o.split.cp_comm))},
                        {"ep", o.split.ep},
                        {"vpp", o.split.vpp},
                        {"microbatches", o.split.microbatches},
                        {"micro_batch_size", o.split.micro_batch_size},
                        {"schedule", std::string(to_string(o.split.schedule))},
                        {"steps", o.steps},
                        {"lr", o.lr},
                        {"seed", o.seed},
                        {"check", o.check},
                        {"precision", exec.precision()},
                        {"executor", exec.kind()},
                        {"dp_overlap", o.executor.dp_overlap},
                        {"cuda_attention", o.executor.cuda_attention}};
  recorder.set_attr("config", cfg.dump());
  if (o.check) recorder.set_attr("check_tolerance", std::string(s.tol.text));
  if (o.check && !s.per_tensor)
    recorder.set_attr("check_scope", std::string("scalars only: loss and the gradient and parameter norms (the " +
                                                 exec.kind() + " executor has no per-tensor copies)"));
}

// The step lines' columns at the printf widths they always had, each line laid out on its
// own as the step ends: the step's figures, then its time breakdown after a bar, then the
// check against the reference (with --check).
TextTable step_table() {
  using Align = TextTable::Align;
  TextTable t;
  for (const auto& [name, width] : {std::pair{"step", 4}, std::pair{"loss", 10}, std::pair{"time_s", 9},
                                    std::pair{"tokens/s", 10}, std::pair{"TFLOP/s", 9}, std::pair{"MFU", 7}})
    t.add_column({name, Align::right, "", static_cast<std::size_t>(width)});
  t.add_column(TextTable::Column("compute", Align::right, "", 8).after(" | "));
  for (const char* name : {"tp", "pp+idle", "dp", "ep", "cp"}) t.add_column({name, Align::right, "", 8});
  t.add_column(TextTable::Column("(seconds, mean over ranks)", Align::left).after("  "));
  return t;
}

TextTable::Style step_style() {
  TextTable::Style s;
  s.header_indent = "# ";
  s.indent = "  ";
  s.gap = " ";
  s.rule = false;
  return s;
}

void print_training_header(const ModelConfig& model, const TrainOptions& o, const TrainSetup& s, int size) {
  const TrainExecutor& exec = *s.executor;
  const bool on_gpu = o.executor.kind == "cuda";
  std::printf(
      "# %s on %d ranks (%s executor, %s%s%s): %s; global batch %lld x %d tokens; peak %.1f GFLOP/s per rank (%s)\n",
      model.name.c_str(), size, exec.kind().c_str(), exec.precision().c_str(), on_gpu ? ", " : "",
      exec.device_name().c_str(), describe(o.split).c_str(), o.split.global_batch(), model.seq_len, s.peak.gflops,
      s.peak.source.c_str());
  if (s.gemm_peak.gflops > 0)
    std::printf("# MFU also against a measured GEMM peak of %.1f TFLOP/s per GPU (%s)\n", s.gemm_peak.gflops * 1e-3,
                s.gemm_peak.source.c_str());
  std::printf("%s", step_table().header_text(step_style()).c_str());
}

// One step as the job saw it: this rank's stats, the breakdown averaged over ranks
// (compute, tp, pp, dp, ep, other, total, cp), the slowest rank's step time and the
// figures that follow from it.
struct StepFigures {
  StepStats st;
  double parts[8] = {};
  double step_time = 0, tokens_per_s = 0, tflops = 0, mfu = 0, mfu_gemm = 0;
};

StepFigures run_and_time_step(const TrainOptions& o, const TrainSetup& s, int step, int rank, int size,
                              MPI_Comm world) {
  StepFigures f;
  TimeBreakdown t;
  f.st = s.executor->step(&t);
  // Testing hook: the last rank's loss turns NaN, as a diverged run's would.
  if (step == o.inject_nan_loss_step && rank == size - 1) f.st.loss = std::nan("");
  // Breakdown averaged over ranks; step time = the slowest rank.
  const double parts[8] = {t.compute, t.tp, t.pp, t.dp, t.ep, t.other, t.total, t.cp};
  std::copy(std::begin(parts), std::end(parts), f.parts);
  MPI_Allreduce(MPI_IN_PLACE, f.parts, 8, MPI_DOUBLE, MPI_SUM, world);
  f.step_time = t.total;
  MPI_Allreduce(MPI_IN_PLACE, &f.step_time, 1, MPI_DOUBLE, MPI_MAX, world);
  for (double& p : f.parts) p /= size;
  f.tokens_per_s = static_cast<double>(f.st.tokens) / f.step_time;
  f.tflops = s.flops_per_step / f.step_time * 1e-12;
  f.mfu = s.flops_per_step / (f.step_time * size * s.peak.gflops * 1e9);
  f.mfu_gemm =
      s.gemm_peak.gflops > 0 ? s.flops_per_step / (f.step_time * size * s.gemm_peak.gflops * 1e9) : std::nan("");
  return f;
}

// --dump: the global batch of step `step`, as the reference draws it.
void dump_batch(store::Run& dump, ReferenceTrainer& reference, int step) {
  const Batch batch = reference.global_batch(step);
  std::vector<double> in(batch.inputs.begin(), batch.inputs.end()), tg(batch.targets.begin(), batch.targets.end());
  const std::vector<std::uint64_t> shape{static_cast<std::uint64_t>(batch.sequences),
                                         static_cast<std::uint64_t>(batch.seq_len)};
  dump.write_array("batch/step" + std::to_string(step) + "/inputs", shape, in.data());
  dump.write_array("batch/step" + std::to_string(step) + "/targets", shape, tg.data());
}

// Whether a step failed the run, and why.
struct StepVerdict {
  StepStats ref;  // the serial reference's step (rank 0, with a reference)
  int bad = 0;
  bool diverged = false;
  std::string mismatch;
};

// Rank 0 with a reference: steps it (dumping step 0's gradients) and, with --check,
// compares every copy of every tensor element by element first (its message is the most
// specific), then the loss, the norms and each tensor's norms (train_check.hpp).
void step_reference(const TrainOptions& o, TrainSetup& s, const StepStats& st, int step, StepVerdict& v) {
  v.ref = s.reference->step();
  if (s.dump && step == 0) dump_tensors(*s.dump, *s.reference, "grads", true);
  if (!o.check) return;
  // Every step after the first starts from the split's weights when the element-wise
  // check runs (below), and is held to the tolerances measured so (check_tolerance.hpp).
  const bool reseeded = s.per_tensor && step > s.first_checked_step;
  const CheckTolerance tol = tolerance_at_step(s.tol, step, reseeded);
  CheckMargins here;
  if (s.per_tensor) {
    const CopyCheck c =
        check_copies(st.copies, s.reference->model().params(), {tol.weights, tol.gradients}, step, true);
    here.add(c);
    v.mismatch = c.failure;
  }
  here.add(st, v.ref);
  s.margins.add(here);
  if (reseeded) s.reseeded_margins.add(here);
  if (v.mismatch.empty()) v.mismatch = first_difference(st, v.ref, tol, step);
  v.bad = v.mismatch.empty() ? 0 : 1;
  // Judge each step alone: the next one starts from the split's weights (copy_check.hpp).
  if (s.per_tensor && !v.bad) reseed_reference(st.copies, s.reference->model().params());
}

// Collective: a loss or gradient that is no longer finite on any rank ends the run,
// failed, naming the step. The message carries the lowest diverged rank's values (each
// rank has its own loss).
void agree_on_divergence(const TrainOptions& o, const StepStats& st, int step, int rank, int size, MPI_Comm world,
                         StepVerdict& v) {
  int first_diverged = !std::isfinite(st.loss) || !std::isfinite(st.grad_norm) ? rank : size;
  MPI_Allreduce(MPI_IN_PLACE, &first_diverged, 1, MPI_INT, MPI_MIN, world);
  v.diverged = first_diverged < size;
  if (!v.diverged) return;
  double values[2] = {st.loss, st.grad_norm};
  MPI_Bcast(values, 2, MPI_DOUBLE, first_diverged, world);
  if (v.bad) return;
  v.bad = 1;
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "step %d: the training loss became %g on rank %d (grad norm %g): training diverged (is --lr %g "
                "too large?)",
                step, values[0], first_diverged, values[1], o.lr);
  v.mismatch = buf;
}

void print_step_line(const TrainOptions& o, int step, const StepFigures& f, const StepVerdict& v) {
  std::vector<std::string> cells = {std::to_string(step),     fixed(f.st.loss, 6), fixed(f.step_time, 4),
                                    fixed(f.tokens_per_s, 1), fixed(f.tflops, 5),  fixed(100 * f.mfu, 2) + "%"};
  for (const int part : {0, 1, 2, 3, 4, 7}) cells.push_back(fixed(f.parts[part], 4));
  cells.push_back(o.check ? "ref " + fixed(v.ref.loss, 6) + " " + (v.bad ? "MISMATCH" : "ok") : "");
  std::printf("%s", step_table().row_text(cells, step_style()).c_str());
  std::fflush(stdout);
}

tables::StepRow step_row(int step, const StepFigures& f, const StepVerdict& v, bool with_reference) {
  const StepStats& st = f.st;
  tables::StepRow r;
  r.step = step;
  r.loss = st.loss;
  r.aux_loss = st.aux_loss;
  r.grad_norm = st.grad_norm;
  r.param_norm = st.param_norm;
  r.step_time = f.step_time;
  r.tokens_per_s = f.tokens_per_s;
  r.model_tflops = f.tflops;
  r.mfu = f.mfu;
  r.compute = f.parts[0];
  r.tp_comm = f.parts[1];
  r.pp_comm_and_bubble = f.parts[2];
  r.dp_comm = f.parts[3];
  r.ep_comm = f.parts[4];
  r.other = f.parts[5];
  r.cp_comm = f.parts[7];
  if (with_reference) {  // else NaN, the row's default
    r.ref_loss = v.ref.loss;
    r.ref_grad_norm = v.ref.grad_norm;
    r.ref_param_norm = v.ref.param_norm;
  }
  r.mfu_gemm_peak = f.mfu_gemm;
  return r;
}

// Sums over the timed steps (every step after the first one run, or that one alone).
// The timed steps' own figures: every figure a run reports is the median over them, the
// statistic `ibt report` draws from the same run's steps table (issue 41: one statistic
// per figure across commands).
struct TimedSteps {
  std::vector<double> step_s, tokens_per_s, tflops, mfu, mfu_gemm, bubble;
};

// The steps from first_step on, each behind the arrival gate and the watchdog: timed,
// checked, printed and recorded, a checkpoint after it when due. Stops at the first
// failed step (out.check_ok, out.mismatch).
TimedSteps run_steps(const TrainOptions& o, TrainSetup& s, TrainCheckpoints& checkpoints, ArrivalGate& gate,
                     int first_step, int rank, int size, MPI_Comm world, RunRecorder* recorder,
                     std::vector<double>& losses, TrainOutcome& out) {
  TimedSteps timed;
  for (int step = first_step; step < o.steps; ++step) {
    gate.pass("train step " + std::to_string(step), o.timeout_s);
    if (o.watchdog) o.watchdog->arm(o.timeout_s, "train step " + std::to_string(step));
    StepFigures f = run_and_time_step(o, s, step, rank, size, world);
    if (s.per_tensor) {
      f.st.tensors = gather_tensor_sums(f.st.tensors, world);
      f.st.copies = gather_copies(f.st.copies, world);
    }
    StepVerdict v;
    if (s.dump) dump_batch(*s.dump, *s.reference, step);
    losses.push_back(f.st.loss);
    if (s.reference) step_reference(o, s, f.st, step, v);
    MPI_Bcast(&v.bad, 1, MPI_INT, 0, world);
    agree_on_divergence(o, f.st, step, rank, size, world, v);
    if (rank == 0 && o.print_steps) print_step_line(o, step, f, v);
    if (recorder && recorder->active())
      recorder->append(tables::StepRow::kTrainLayout, step_row(step, f, v, s.reference != nullptr));
    if (o.watchdog) o.watchdog->arm(o.timeout_s, "checkpoint after train step " + std::to_string(step));
    // A diverged state is never saved: the newest checkpoint stays the last finite one.
    if (!v.diverged) checkpoints.after_step(step, s.executor->checkpointable());
    if (o.watchdog) o.watchdog->arm(o.timeout_s, "train (between steps)");
    if (step > first_step || o.steps == first_step + 1) {
      timed.step_s.push_back(f.step_time);
      timed.tokens_per_s.push_back(f.tokens_per_s);
      timed.tflops.push_back(f.tflops);
      timed.mfu.push_back(f.mfu);
      timed.mfu_gemm.push_back(f.mfu_gemm);
      timed.bubble.push_back(f.parts[2] / f.step_time);
    }
    out.final_loss = f.st.loss;
    if (v.bad) {
      out.check_ok = false;
      out.mismatch = v.mismatch;
      break;
    }
  }
  return timed;
}

// Memory: measured peak RSS (host) and model state per rank against the accounting
// (fp32 AdamW: 16 bytes per parameter; bf16 mixed precision as accounting.hpp counts it).
// Gathered to rank 0, which prints and records it.
void report_memory(const ModelConfig& model, const TrainOptions& o, TrainExecutor& exec, int rank, int size,
                   MPI_Comm world, RunRecorder* recorder) {
  const int stage = exec.groups().coord.pp;
  const RankMemory acc =
      memory_per_rank(model, o.split, exec.precision() == "bf16" ? bf16_mixed_adam() : fp32_adam(), stage);
  double mine[4] = {peak_rss_bytes(), exec.model_state_bytes(), acc.weights + acc.grads + acc.optimizer,
                    acc.activations};
  std::vector<double> all(4 * static_cast<size_t>(size));
  MPI_Gather(mine, 4, MPI_DOUBLE, all.data(), 4, MPI_DOUBLE, 0, world);
  std::vector<int> stages(size);
  MPI_Gather(&stage, 1, MPI_INT, stages.data(), 1, MPI_INT, 0, world);
  if (rank != 0) return;
  if (o.print_steps) std::printf("# memory per rank (MiB): peak RSS | model state (params+grads+Adam) vs accounting\n");
  for (int r = 0; r < size; ++r) {
    const double* v = &all[4 * static_cast<size_t>(r)];
    if (o.print_steps)
      std::printf("#   rank %d stage %d: %8.1f | %8.3f vs %8.3f\n", r, stages[r], v[0] / 1048576.0, v[1] / 1048576.0,
                  v[2] / 1048576.0);
    if (recorder && recorder->active()) recorder->append(MemoryRow{r, stages[r], v[0], v[1], v[2], v[3]});
  }
}

// After the last step: checkpoint totals, the dump's losses and status, the medians over
// the timed steps.
void finish_training(const TrainOptions& o, const TrainSetup& s, TrainCheckpoints& checkpoints,
                     const std::vector<double>& losses, const TimedSteps& timed, TrainOutcome& out) {
  if (o.watchdog) o.watchdog->arm(o.timeout_s, "train (finishing: checkpoints, memory statistics)");
  checkpoints.finish();
  if (s.dump) {
    s.dump->write_array("losses", {static_cast<std::uint64_t>(losses.size())}, losses.data());
    s.dump->finish(out.check_ok ? store::RunStatus::complete : store::RunStatus::failed, out.mismatch);
  }
  out.timed_steps = static_cast<int>(timed.step_s.size());
  out.median_step_s = median(timed.step_s);
  out.tokens_per_s = median(timed.tokens_per_s);
  out.model_tflops = median(timed.tflops);
  out.mfu = median(timed.mfu);
  out.mfu_gemm = s.gemm_peak.gflops > 0 ? median(timed.mfu_gemm) : 0.0;
  out.bubble_fraction = median(timed.bubble);
}

}  // namespace

TrainOutcome run_training(const ModelConfig& model, const TrainOptions& o, MPI_Comm world, RunRecorder* recorder) {
  int rank = 0, size = 1;
  MPI_Comm_rank(world, &rank);
  MPI_Comm_size(world, &size);
  check_training(model, o, world);
  // Ranks share the cores: one BLAS thread each unless --threads (or, in a one-rank
  // run, OPENBLAS_NUM_THREADS) says otherwise. The reference uses the same count.
  const int threads = blas_threads_for_run(o.threads, size);
  set_blas_threads(threads);
  WatchdogScope setup_watch(o.watchdog, o.timeout_s, "train setup (process groups, peak measurement, resume)");
  TrainSetup setup;
  set_up_training(setup, model, o, world, rank, threads);
  std::vector<double> losses;
  if (recorder && recorder->active()) record_training_attrs(*recorder, model, o, setup);
  if (rank == 0 && o.print_steps) print_training_header(model, o, setup, size);

  checkpoint::RunIdentity identity{model.name, describe(o.split), size, o.seed, o.lr, setup.data->describe()};
  if (!o.data_file.empty()) identity.data += ", " + std::to_string(o.token_bytes) + "-byte tokens";
  TrainCheckpoints checkpoints(o, identity, world, recorder);
  const int first_step = checkpoints.begin(setup.executor->checkpointable());
  // --check after a resume: the reference replays the steps before it (it has no
  // checkpoint of its own), so every step run here is still compared.
  for (int s = 0; setup.reference && s < first_step; ++s) setup.reference->step();
  setup.first_checked_step = first_step;

  TrainOutcome out;
  out.first_step = first_step;
  ArrivalGate gate(world);
  const TimedSteps timed = run_steps(o, setup, checkpoints, gate, first_step, rank, size, world, recorder, losses, out);
  finish_training(o, setup, checkpoints, losses, timed, out);
  if (o.check && rank == 0) {
    out.check_margins = setup.margins.text();
    if (!setup.per_tensor) out.check_margins += " (scalars only: no per-tensor copies on this executor)";
    if (setup.per_tensor && o.steps - first_step > 1) out.check_margins_reseeded = setup.reseeded_margins.text();
    if (recorder && recorder->active()) {
      recorder->set_attr("check_margins", out.check_margins);
      if (!out.check_margins_reseeded.empty()) recorder->set_attr("check_margins_reseeded", out.check_margins_reseeded);
    }
  }
  report_memory(model, o, *setup.executor, rank, size, world, recorder);
  return out;
}

}  // namespace ibt::suites
