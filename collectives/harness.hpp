#pragma once
// The microbenchmark driver: for each op, scope, dtype and size, every scope group runs
// the op concurrently (all intra groups at once, all inter groups at once), timed like
// nccl-tests, then checked in a separate pass. Results come back to the caller one size
// at a time (both placements together) so rank 0 can print and store them as they finish.
#include <mpi.h>

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "collectives/arrival_gate.hpp"
#include "collectives/backend.hpp"
#include "collectives/collective.hpp"
#include "collectives/domains.hpp"
#include "collectives/watchdog.hpp"

namespace ibt {

// How per-rank times are combined into the reported time (nccl-tests' -a: 0 rank 0,
// 1 avg, 2 min, 3 max).
enum class RankAggregation { rank0, avg, min, max };
RankAggregation parse_rank_aggregation(std::string_view name);
std::string_view to_string(RankAggregation a);

// How an iteration is timed.
//   loop: nccl-tests' way. The -n iterations run back to back and the loop is timed as a
//         whole; time = loop time / (iters x agg), per rank. What a training step sees:
//         consecutive collectives pipeline, and a late rank's delay is absorbed by others.
//   imb:  Intel MPI Benchmarks' way. Per size an untimed pass of -n calls before the -w
//         warm-ups (IMB's, see run_imb_untimed_pass), then a barrier before every call, the
//         clock read around each call alone, host buffers 16 bytes past a page as IMB's
//         malloc'd ones are;
//         time = mean of those per-call times, per rank (IMB's t_avg,
//         t_min, t_max over ranks are -a avg, min, max). Small messages read higher than
//         in loop mode (no pipelining across calls); this is the mode to compare with IMB.
//         ping_pong and send_recv are timed as a loop here too, as IMB's PingPong and
//         Sendrecv are.
enum class TimingMode { loop, imb };
TimingMode parse_timing_mode(std::string_view name);  // throws UsageError naming the value
std::string_view to_string(TimingMode m);

struct HarnessOptions {
  std::vector<const Collective*> ops;
  std::vector<Scope> scopes;
  std::vector<DType> dtypes;
  ReduceOp reduce_op = ReduceOp::sum;
  std::vector<std::size_t> sizes;
  std::vector<Placement> placements{Placement::out_of_place, Placement::in_place};
  int iters = 20;
  int warmup_iters = 5;
  bool check = true;
  int check_iters = 1;  // checked passes per measurement (nccl-tests' -c N); 0 with check off
  int agg_iters = 1;    // calls per timed iteration (nccl-tests' -m); time is per call
  TimingMode timing = TimingMode::loop;
  bool blocking = false;  // barrier (untimed) between iterations, as nccl-tests' -z
  RankAggregation aggregation = RankAggregation::max;
  int root = 0;
  double timeout_seconds = 60;
  // Buffers for messages smaller than this are rotated through a pool this large, so
  // successive iterations touch different memory and caches do not flatter small sizes.
  std::size_t rotate_bytes = 64u << 20;
  // Testing hooks (see `ibt collectives --help`): a rank that stops arriving before the
  // given measurement, and a rank whose checked result is perturbed.
  int stall_rank = -1;
  int stall_at_measurement = 0;
  bool stall_inside = false;  // stall after the gate, inside the op (exercises the watchdog)
  int corrupt_rank = -1;
};

struct Measurement {
  std::string op, scope, dtype, reduce_op;
  Placement placement = Placement::out_of_place;
  int group_size = 0;
  int groups = 0;
  std::size_t bytes = 0;
  std::size_t count = 0;
  int iters = 0;
  double time_us = 0, p50_us = 0, p99_us = 0;
  double algbw_GBps = 0, busbw_GBps = 0;
  std::uint64_t wrong = 0;
  // Rank 0: each world rank whose checked result held wrong values, with how many (empty
  // when none did), so that a report names the rank that saw them.
  std::vector<std::pair<int, std::uint64_t>> wrong_ranks;
  bool checked = false;
  // One entry per group of the scope (intra: per domain; inter: per local index), in
  // group order, when the scope has more than one group: which world ranks, and the
  // group's time (its slowest rank's mean per call), so a slow domain can be named.
  struct GroupTime {
    int group = 0;
    std::vector<int> world_ranks;
    double time_us = 0, busbw_GBps = 0;
  };
  std::vector<GroupTime> per_group;
};

// One line of the table: the placements measured at one size.
struct SizeResult {
  const Collective* op = nullptr;
  Scope scope = Scope::world;
  DType dtype = DType::float32;
  std::size_t bytes = 0;
  std::size_t count = 0;
  int group_size = 0;
  std::optional<Measurement> out_of_place, in_place;
};

struct HarnessEvents {
  std::function<void(const SizeResult&)> on_size;       // rank 0 only
  std::function<void(const std::string&)> on_note;      // rank 0 only: skipped or rounded sizes
  std::function<void(const std::string&)> on_progress;  // rank 0 only: before each measurement
};

// The most memory one measurement will take on this rank's host: its send and receive
// buffers with their rotation pools (when `buffers_on_host`, as with MPI; NCCL's live on
// the GPU) and the host copies that check the result. `what` names that measurement.
struct HostMemoryPlan {
  double bytes = 0;
  std::string what;
};
HostMemoryPlan plan_host_memory(const HarnessOptions& opt, const DomainLayout& layout, bool buffers_on_host);

// Runs every measurement. Collective over `control` (the world communicator). Throws
// TimeoutError when a rank stops arriving; the watchdog covers stalls inside an op.
void run_harness(Backend& backend, MPI_Comm control, const DomainLayout& layout, const HarnessOptions& options,
                 ArrivalGate& gate, Watchdog* watchdog, const HarnessEvents& events);

}  // namespace ibt
