#include "collectives/harness.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <numeric>
#include <sstream>
#include <thread>

#include "collectives/check.hpp"
#include "collectives/sizes.hpp"
#include "core/stats.hpp"

namespace ibt {

RankAggregation parse_rank_aggregation(std::string_view name) {
  if (name == "rank0" || name == "0") return RankAggregation::rank0;
  if (name == "avg" || name == "1") return RankAggregation::avg;
  if (name == "min" || name == "2") return RankAggregation::min;
  if (name == "max" || name == "3") return RankAggregation::max;
  throw UsageError("unknown rank aggregation '" + std::string(name) +
                   "' (expected avg, min, max or rank0, or nccl-tests' 1, 2, 3, 0)");
}

std::string_view to_string(RankAggregation a) {
  switch (a) {
    case RankAggregation::rank0: return "rank0";
    case RankAggregation::avg: return "avg";
    case RankAggregation::min: return "min";
    case RankAggregation::max: return "max";
  }
  return "?";
}

TimingMode parse_timing_mode(std::string_view name) {
  if (name == "loop") return TimingMode::loop;
  if (name == "imb") return TimingMode::imb;
  throw UsageError("unknown timing mode '" + std::string(name) + "' (expected loop or imb)");
}

std::string_view to_string(TimingMode m) { return m == TimingMode::imb ? "imb" : "loop"; }

namespace {

constexpr std::size_t kSlotAlignment = 256;

// Backend memory, released on scope exit.
class BackendBuffer {
 public:
  BackendBuffer(Backend& backend, std::size_t bytes) : backend_(backend), bytes_(bytes) {
    ptr_ = static_cast<unsigned char*>(backend_.allocate(bytes));
  }
  ~BackendBuffer() { backend_.release(ptr_); }
  BackendBuffer(const BackendBuffer&) = delete;
  BackendBuffer& operator=(const BackendBuffer&) = delete;
  unsigned char* data() const { return ptr_; }

 private:
  Backend& backend_;
  std::size_t bytes_;
  unsigned char* ptr_;
};

std::size_t slot_stride(std::size_t bytes) {
  return (std::max<std::size_t>(bytes, 1) + kSlotAlignment - 1) / kSlotAlignment * kSlotAlignment;
}
int slot_count(std::size_t bytes, std::size_t rotate_bytes, int iters) {
  return bytes < rotate_bytes
             ? static_cast<int>(std::clamp<std::size_t>(rotate_bytes / slot_stride(bytes), 1, std::max(iters, 1)))
             : 1;
}

// The receive and send bytes of one measurement, as measure() sizes them.
std::pair<std::size_t, std::size_t> buffer_bytes(const OpShape& shape, std::size_t elem, bool in_place) {
  const std::size_t recv = (in_place ? std::max(shape.send_elems, shape.recv_elems) : shape.recv_elems) * elem;
  return {recv, in_place ? 0 : shape.send_elems * elem};
}

// IMB's buffers come from MPI_Alloc_mem, which MPICH 4.0 serves from malloc behind a header
// of its own: a large block lands 32 bytes past a page boundary, a plain malloc'd one 16.
// MPICH's reductions of 32-64 MiB ran 20-30% slower from page-aligned buffers than from
// malloc's on the 2-core test machine (docs/measurements/imb-agreement.md), so imb timing
// places host buffers where malloc puts large ones. Small blocks land wherever IMB's heap
// happens to be, and that moves MPICH's times too (a 32 KiB all-reduce, 2 ranks: 28-30 us
// from IMB's own buffers, 19-21 us from page + 16); scripts/fidelity/compare_imb.py
// preloads a shim that puts IMB's buffers at page + 16 as well, so both tools time one
// placement.
constexpr std::size_t kImbHostBufferOffset = 16;

// A buffer role (send, receive, or the single in-place buffer) repeated in `slots`
// copies, `lead` bytes into the allocation; iteration i uses slot i % slots. slot() runs
// inside the timed region, once per call: with one slot (imb timing, or no rotation) it
// is a load, not a division.
struct Pool {
  Pool(Backend& backend, std::size_t bytes, std::size_t rotate_bytes, int iters, std::size_t lead)
      : stride(slot_stride(bytes)),
        slots(slot_count(bytes, rotate_bytes, iters)),
        memory(backend, stride * slots + lead),
        first(memory.data() + lead) {}
  unsigned char* slot(int i) const { return slots == 1 ? first : first + (i % slots) * stride; }
  std::size_t stride;
  int slots;
  BackendBuffer memory;
  unsigned char* first;
};

// "all_reduce (scope world, float32, 32 B[, in-place])": names a measurement in messages.
std::string describe(const Collective& op, Scope scope, DType t, std::size_t bytes,
                     std::optional<Placement> p = std::nullopt) {
  std::ostringstream s;
  s << op.name() << " (scope " << to_string(scope) << ", " << to_string(t) << ", " << bytes << " B";
  if (p) s << (*p == Placement::in_place ? ", in-place" : ", out-of-place");
  s << ")";
  return s.str();
}

struct ScopeGroup {
  Scope scope;
  std::unique_ptr<Communicator> comm;
  int groups;
  int group_index;  // this rank's group among the scope's groups (the split color)
};

struct MeasureRequest {
  const Collective* op;
  Scope scope;
  int groups;
  int group_index;
  OpShape shape;
  DType dtype;
  Placement placement;
};

// IMB-MPI1 times its point-to-point benchmarks (PingPong, Sendrecv) as one loop with no
// barrier between calls, and its collectives call by call behind a barrier.
bool imb_times_whole_loop(const Collective& op) { return op.name() == "ping_pong" || op.name() == "send_recv"; }

// IMB-MPI1 runs each benchmark once more, untimed and with the full iteration count,
// before its warm-up (IMB_init_buffers_iter in src_c/IMB_mem_manager.c, intel/mpi-benchmarks
// 46e8757: with -iter_policy off the whole n_sample; the default dynamic policy's probe
// runs 1 and then up to n_sample), so it times a message size only after n + n/10 calls
// of it. That pass matters: the first tens of calls of a new size take page faults inside
// the MPI library (MPICH 4.0 over UCX shared memory: 60 minor faults in 100 timed 128-byte
// ping-pongs after 10 warm-ups, none after 110, none when the size comes round again),
// and without it imb timing read 1.5-3x IMB at 128 B-4 KiB (docs/measurements/imb-agreement.md, "Why imb read 1.5-3x
// IMB"). Same calls as the timed pass: a barrier before each where IMB's kernel has one.
template <class Iteration>
void run_imb_untimed_pass(Communicator& comm, int iters, bool barrier_each, const Iteration& run_iteration) {
  for (int i = 0; i < iters; ++i) {
    if (barrier_each) comm.barrier();
    run_iteration(i);
  }
  comm.synchronize();
}

// One measurement's buffers and prepared call, which every pass runs (the imb untimed
// pass, the warm-up, the timed loops, the check). Built in this order: the pools are
// allocated before the call is prepared.
class SlotRunner {
 public:
  SlotRunner(Backend& backend, Communicator& comm, const MeasureRequest& req, const HarnessOptions& opt,
             Watchdog* watchdog)
      : elem(size_of(req.dtype)),
        in_place(req.placement == Placement::in_place),
        calls(opt.iters * opt.agg_iters),
        recv_pool(backend, buffer_bytes(req.shape, elem, in_place).first, opt.rotate_bytes, calls,
                  imb_lead(backend, opt)),
        send_pool(backend, buffer_bytes(req.shape, elem, in_place).second, opt.rotate_bytes, calls,
                  imb_lead(backend, opt)),
        root(std::min(opt.root, comm.size() - 1)),
        send_offset(in_place ? req.op->in_place_send_offset(req.shape, comm.rank()) * elem : 0),
        recv_offset(in_place ? req.op->in_place_recv_offset(req.shape, comm.rank()) * elem : 0),
        // Resolved once: the loops pay one indirect call per op (prepared_call.hpp).
        call_(req.op->prepare(comm, req.shape, req.dtype, opt.reduce_op, root)),
        agg_iters_(opt.agg_iters),
        watchdog_(watchdog) {}

  // Every completed call (and every step of the check) tells the watchdog the measurement
  // progresses (slow is not stalled: a 128 MiB all-reduce of 46 calls may take longer than
  // -T as a whole, and filling and comparing its 128 MiB check images takes seconds).
  void tick() const {
    if (watchdog_) watchdog_->progress();
  }
  // Call i of the measurement, on slot i of the pools.
  void run_on_slot(int i) const {
    unsigned char* recv = recv_pool.slot(i);
    const unsigned char* send = in_place ? recv + send_offset : send_pool.slot(i);
    (*call_)(send, recv + recv_offset);
    tick();
  }
  // An iteration is agg_iters calls.
  void run_iteration(int i) const {
    for (int a = 0; a < agg_iters_; ++a) run_on_slot(i * agg_iters_ + a);
  }

  const std::size_t elem;
  const bool in_place;
  const int calls;  // calls timed per pass
  Pool recv_pool;
  Pool send_pool;
  const int root;
  const std::size_t send_offset, recv_offset;

 private:
  static std::size_t imb_lead(const Backend& backend, const HarnessOptions& opt) {
    return opt.timing == TimingMode::imb && backend.buffers_on_host() ? kImbHostBufferOffset : 0;
  }
  const std::unique_ptr<PreparedCall> call_;
  const int agg_iters_;
  Watchdog* watchdog_;
};

// The untimed calls before timing: imb's untimed pass, then a warm-up that visits every
// buffer slot the timed loop will use, so first-touch costs (memory registration,
// CUDA-graph capture) never land in a timed iteration.
void warm_up(Communicator& comm, const SlotRunner& runner, const HarnessOptions& opt, bool timed_alone) {
  if (opt.timing == TimingMode::imb)
    run_imb_untimed_pass(comm, opt.iters, timed_alone, [&runner](int i) { runner.run_iteration(i); });
  const int timed_slots = std::min(runner.calls, std::max(runner.recv_pool.slots, runner.send_pool.slots));
  const int warmups = opt.warmup_iters > 0 ? std::max(opt.warmup_iters, timed_slots) : 0;
  for (int i = 0; i < warmups; ++i) runner.run_on_slot(i);
  comm.synchronize();
  comm.barrier();
}

// This rank's timings: the whole timed pass and each iteration.
struct LocalTimes {
  double total = 0;                // seconds, all iterations
  std::vector<double> iterations;  // seconds per iteration (agg_iters calls)
};

// loop (nccl-tests): the mean comes from the loop timed as a whole; a clock read per
// iteration costs tens of ns, a measurable share of an 8-byte op. The per-iteration
// distribution (p50, p99) comes from a second pass that reads the clock around each
// iteration. With --blocking, and in imb mode, each iteration is timed alone anyway
// (behind a barrier), so one pass serves both.
LocalTimes time_iterations(Backend& backend, Communicator& comm, const SlotRunner& runner, const HarnessOptions& opt,
                           bool timed_alone) {
  LocalTimes times;
  auto per_iteration = backend.make_timer(comm, opt.iters);
  if (!timed_alone) {
    auto whole = backend.make_timer(comm, 1);
    whole->begin(0);
    for (int i = 0; i < opt.iters; ++i) runner.run_iteration(i);
    whole->end(0);
    times.total = whole->durations().front();
    comm.barrier();
  }
  for (int i = 0; i < opt.iters; ++i) {
    if (timed_alone) comm.barrier();
    per_iteration->begin(i);
    runner.run_iteration(i);
    per_iteration->end(i);
  }
  times.iterations = per_iteration->durations();
  if (timed_alone) times.total = std::accumulate(times.iterations.begin(), times.iterations.end(), 0.0);
  return times;
}

// nccl-tests' -c N: N checked passes, each from freshly written inputs; stops at the
// first pass with wrong values. Returns this rank's wrong values.
std::uint64_t check_results(Backend& backend, Communicator& comm, MPI_Comm control, const SlotRunner& runner,
                            const MeasureRequest& req, const HarnessOptions& opt) {
  std::uint64_t wrong = 0;
  for (int pass = 0; opt.check && pass < opt.check_iters && wrong == 0; ++pass) {
    CheckContext ctx{req.op, req.shape, req.dtype, opt.reduce_op, req.placement, comm.rank(), comm.size(), runner.root};
    HostImages img = make_inputs(ctx);
    runner.tick();
    backend.upload(runner.recv_pool.slot(0), img.recv.data(), img.recv.size());
    if (!runner.in_place) backend.upload(runner.send_pool.slot(0), img.send.data(), img.send.size());
    runner.tick();
    comm.barrier();
    runner.run_on_slot(0);
    comm.synchronize();
    backend.download(img.recv.data(), runner.recv_pool.slot(0), img.recv.size());
    runner.tick();
    int world_rank = 0;
    MPI_Comm_rank(control, &world_rank);
    if (world_rank == opt.corrupt_rank && req.shape.recv_elems > 0) {
      const std::size_t index = runner.recv_offset / runner.elem;
      const double good = load_element(img.recv.data(), index, req.dtype);
      store_element(img.recv.data(), index, req.dtype, good + 64);
    }
    wrong = count_wrong(ctx, img.recv.data());
  }
  return wrong;
}

// Every rank's timings and wrong values, combined over the job (all groups of the scope
// ran concurrently).
struct JobTimes {
  double per_call = 0;                                     // seconds per call, combined by --average
  std::vector<double> rank_means;                          // rank 0, scopes with several groups: each rank's mean
  std::vector<int> rank_groups;                            // ... and its group
  std::vector<double> slowest;                             // per iteration, the slowest rank's duration
  std::uint64_t wrong = 0;                                 // summed over ranks
  std::vector<std::pair<int, std::uint64_t>> wrong_ranks;  // rank 0: (world rank, its wrong values)
};

JobTimes combine_over_ranks(MPI_Comm control, const LocalTimes& local, std::uint64_t wrong, int calls,
                            const MeasureRequest& req, RankAggregation aggregation) {
  JobTimes job;
  int world_size = 1;
  MPI_Comm_size(control, &world_size);
  double local_avg = calls > 0 ? local.total / calls : 0.0;  // seconds per call
  if (aggregation == RankAggregation::rank0) {
    job.per_call = local_avg;
    MPI_Bcast(&job.per_call, 1, MPI_DOUBLE, 0, control);
  } else {
    const MPI_Op reduce = aggregation == RankAggregation::max   ? MPI_MAX
                          : aggregation == RankAggregation::min ? MPI_MIN
                                                                : MPI_SUM;
    MPI_Allreduce(&local_avg, &job.per_call, 1, MPI_DOUBLE, reduce, control);
    if (aggregation == RankAggregation::avg) job.per_call /= world_size;
  }
  // Per group: every rank's (group, world rank, mean) to rank 0, which keeps each group's
  // slowest rank. Only where a scope has several groups (intra, inter).
  if (req.groups > 1) {
    int world_rank = 0;
    MPI_Comm_rank(control, &world_rank);
    if (world_rank == 0) {
      job.rank_means.resize(world_size);
      job.rank_groups.resize(world_size);
    }
    int group_index = req.group_index;
    MPI_Gather(&local_avg, 1, MPI_DOUBLE, job.rank_means.data(), 1, MPI_DOUBLE, 0, control);
    MPI_Gather(&group_index, 1, MPI_INT, job.rank_groups.data(), 1, MPI_INT, 0, control);
  }
  // Per-iteration durations are of agg_iters calls.
  std::vector<double> durations = local.iterations;
  job.slowest.resize(durations.size());
  MPI_Allreduce(durations.data(), job.slowest.data(), static_cast<int>(durations.size()), MPI_DOUBLE, MPI_MAX, control);
  MPI_Allreduce(&wrong, &job.wrong, 1, MPI_UINT64_T, MPI_SUM, control);
  // Who saw them: gathered only when some did (every rank knows the sum, so all take part
  // or none), which costs a correct measurement nothing.
  if (job.wrong > 0) {
    int world_rank = 0;
    MPI_Comm_rank(control, &world_rank);
    std::vector<std::uint64_t> per_rank(world_rank == 0 ? static_cast<std::size_t>(world_size) : 0);
    MPI_Gather(&wrong, 1, MPI_UINT64_T, per_rank.data(), 1, MPI_UINT64_T, 0, control);
    for (std::size_t r = 0; r < per_rank.size(); ++r)
      if (per_rank[r] > 0) job.wrong_ranks.emplace_back(static_cast<int>(r), per_rank[r]);
  }
  return job;
}

// The row ibt reports: times per call in us (divided as the op counts them), bandwidths,
// and per group its slowest rank.
Measurement to_measurement(const Collective& op, int group_size, const MeasureRequest& req, const HarnessOptions& opt,
                           const JobTimes& job) {
  Measurement m;
  m.op = std::string(op.name());
  m.scope = std::string(to_string(req.scope));
  m.dtype = std::string(to_string(req.dtype));
  m.reduce_op = op.reduces() ? std::string(to_string(opt.reduce_op)) : "-";
  m.placement = req.placement;
  m.group_size = group_size;
  m.groups = req.groups;
  m.bytes = req.shape.bytes;
  m.count = req.shape.count;
  m.iters = opt.iters;
  const double divisor = op.time_divisor();
  m.time_us = job.per_call / divisor * 1e6;
  m.p50_us = quantile(job.slowest, 0.50) / opt.agg_iters / divisor * 1e6;
  m.p99_us = quantile(job.slowest, 0.99) / opt.agg_iters / divisor * 1e6;
  const double seconds = m.time_us * 1e-6;
  m.algbw_GBps = seconds > 0 ? static_cast<double>(m.bytes) / seconds / 1e9 : 0.0;
  m.busbw_GBps = m.algbw_GBps * op.bus_factor(group_size);
  m.wrong = job.wrong;
  m.wrong_ranks = job.wrong_ranks;
  m.checked = opt.check;
  std::map<int, Measurement::GroupTime> by_group;
  for (std::size_t r = 0; r < job.rank_means.size(); ++r) {
    auto& g = by_group[job.rank_groups[r]];
    g.group = job.rank_groups[r];
    g.world_ranks.push_back(static_cast<int>(r));
    g.time_us = std::max(g.time_us, job.rank_means[r] / divisor * 1e6);
  }
  for (auto& [index, g] : by_group) {
    g.busbw_GBps = g.time_us > 0 ? static_cast<double>(m.bytes) / (g.time_us * 1e3) * op.bus_factor(group_size) : 0.0;
    m.per_group.push_back(std::move(g));
  }
  return m;
}

Measurement measure(Backend& backend, Communicator& comm, MPI_Comm control, const MeasureRequest& req,
                    const HarnessOptions& opt, Watchdog* watchdog) {
  const Collective& op = *req.op;
  const SlotRunner runner(backend, comm, req, opt, watchdog);
  // A backend that aborts stuck ops itself gets to do so first (and free its resources).
  const double watchdog_seconds = backend.enforces_timeouts() ? opt.timeout_seconds * 1.5 + 5.0 : opt.timeout_seconds;
  WatchdogScope guard(watchdog, watchdog_seconds, describe(op, req.scope, req.dtype, req.shape.bytes, req.placement));
  const bool timed_alone = opt.blocking || (opt.timing == TimingMode::imb && !imb_times_whole_loop(op));
  warm_up(comm, runner, opt, timed_alone);
  const LocalTimes local = time_iterations(backend, comm, runner, opt, timed_alone);
  const std::uint64_t wrong = check_results(backend, comm, control, runner, req, opt);
  const JobTimes job = combine_over_ranks(control, local, wrong, runner.calls, req, opt.aggregation);
  return to_measurement(op, comm.size(), req, opt, job);
}

int scope_group_size(Scope scope, const DomainLayout& layout) {
  switch (scope) {
    case Scope::intra: return layout.local_size();
    case Scope::inter: return layout.num_domains;
    default: return layout.world_size;
  }
}

}  // namespace

HostMemoryPlan plan_host_memory(const HarnessOptions& opt, const DomainLayout& layout, bool buffers_on_host) {
  HostMemoryPlan plan;
  const int calls = opt.iters * opt.agg_iters;
  for (const Collective* op : opt.ops)
    for (Scope scope : opt.scopes) {
      const int n = scope_group_size(scope, layout);
      if (op->required_group_size() && op->required_group_size() != n) continue;
      for (DType dtype : opt.dtypes)
        for (std::size_t requested : opt.sizes)
          for (Placement placement : opt.placements) {
            if (!op->supports(placement)) continue;
            const OpShape shape = op->shape(requested, n, size_of(dtype));
            const auto [recv, send] = buffer_bytes(shape, size_of(dtype), placement == Placement::in_place);
            double bytes = opt.check ? static_cast<double>(recv) + static_cast<double>(send) : 0.0;  // host images
            if (buffers_on_host)
              for (std::size_t b : {recv, send})
                bytes += static_cast<double>(slot_stride(b)) * slot_count(b, opt.rotate_bytes, calls);
            if (bytes > plan.bytes) {
              plan.bytes = bytes;
              plan.what = describe(*op, scope, dtype, shape.bytes, placement);
            }
          }
    }
  return plan;
}

void run_harness(Backend& backend, MPI_Comm control, const DomainLayout& layout, const HarnessOptions& opt,
                 ArrivalGate& gate, Watchdog* watchdog, const HarnessEvents& events) {
  int world_rank = 0;
  MPI_Comm_rank(control, &world_rank);
  const bool reporter = world_rank == 0;
  auto note = [&](const std::string& text) {
    if (reporter && events.on_note) events.on_note(text);
  };

  std::vector<ScopeGroup> groups;
  for (Scope scope : opt.scopes) {
    if (scope == Scope::intra && !layout.uniform()) {
      note("scope intra skipped: domains have different sizes (" + layout.method + ")");
      continue;
    }
    const GroupKey key = group_key(scope, layout);
    // The split is a collective outside every measurement: it passes the gate first (a
    // rank that stopped before it is named) and is watched (one that stops inside it ends
    // the job), as each measurement is. Unguarded, a rank 0 stopped between two cycles
    // left the others in MPI_Comm_split for ever (tests/faults/lost_ranks_test.sh
    // stopped0: once in CI, once in 30 runs here).
    const std::string what = "the communicator split of scope " + std::string(to_string(scope));
    gate.pass(what, opt.timeout_seconds);
    WatchdogScope guard(watchdog, opt.timeout_seconds, what);
    groups.push_back({scope, backend.split(key.color, key.key), group_count(scope, layout), key.color});
  }

  int measurement = 0;
  std::map<std::string, bool> noted;
  for (const Collective* op : opt.ops) {
    for (ScopeGroup& group : groups) {
      const int n = group.comm->size();
      if (op->required_group_size() && op->required_group_size() != n) {
        note(std::string(op->name()) + " needs groups of " + std::to_string(op->required_group_size()) +
             " ranks; scope " + std::string(to_string(group.scope)) + " has " + std::to_string(n) + ": skipped");
        continue;
      }
      for (DType dtype : opt.dtypes) {
        std::size_t last_bytes = 0;
        for (std::size_t requested : opt.sizes) {
          const OpShape shape = op->shape(requested, n, size_of(dtype));
          const std::string key =
              std::string(op->name()) + "/" + std::to_string(n) + "/" + std::string(to_string(dtype));
          if (shape.bytes == 0) {
            if (!noted[key + "/small"])
              note(std::string(op->name()) + " on " + std::to_string(n) + " ranks: sizes below " +
                   std::to_string(n * size_of(dtype)) + " B (one " + std::string(to_string(dtype)) +
                   " per rank) are skipped");
            noted[key + "/small"] = true;
            continue;
          }
          if (shape.bytes == last_bytes) continue;  // rounding mapped two sizes onto one
          last_bytes = shape.bytes;
          if (shape.bytes != requested) {
            if (!noted[key]) {
              note(std::string(op->name()) + " on " + std::to_string(n) + " ranks rounds sizes down to whole " +
                   std::string(to_string(dtype)) + " elements per rank (e.g. " + std::to_string(requested) + " B -> " +
                   std::to_string(shape.bytes) + " B)");
              noted[key] = true;
            }
          }
          const std::string what = describe(*op, group.scope, dtype, shape.bytes);
          // Testing hook: this rank stops, as a hung or lost rank would, before the gate
          // (it never arrives) or after it (the others wait inside the op).
          const bool stall_here = world_rank == opt.stall_rank && measurement == opt.stall_at_measurement;
          const auto stall = [&] {
            std::this_thread::sleep_for(std::chrono::duration<double>(opt.timeout_seconds * 20 + 60));
          };
          if (stall_here && !opt.stall_inside) stall();
          gate.pass(what, opt.timeout_seconds);
          if (stall_here && opt.stall_inside) stall();
          ++measurement;
          if (reporter && events.on_progress) events.on_progress(what);

          SizeResult result{op, group.scope, dtype, shape.bytes, shape.count, n, {}, {}};
          for (Placement placement : opt.placements) {
            if (!op->supports(placement)) continue;
            Measurement m =
                measure(backend, *group.comm, control,
                        {op, group.scope, group.groups, group.group_index, shape, dtype, placement}, opt, watchdog);
            (placement == Placement::in_place ? result.in_place : result.out_of_place) = m;
          }
          if (reporter && events.on_size) events.on_size(result);
        }
      }
    }
  }
}

}  // namespace ibt
