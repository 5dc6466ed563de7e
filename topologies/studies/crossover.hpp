#pragma once
// `ibt crossover`: when does pipeline parallelism stop being needed?
//
// For a model on N devices, a grid of fabrics derived from a base topology (scale-up
// domain size x scale-out bandwidth per device; every other figure is the base's), and
// in every cell the best projected MFU over all valid splits with PP = 1 and with
// PP > 1 (default_search(): microbatch size 1/2/4, the global batch fixed, 1F1B and
// interleaved v = 2/4/8, recompute none/selective/full, ZeRO-1 on/off, without PP also
// ZeRO-2, FSDP and HSDP, SP when tp > 1, tp <= domain size; or run.search when given,
// its max_tp replaced by the largest domain). gain = MFU(PP>1) / MFU(PP=1) - 1 (infinite when no PP = 1 split
// fits in memory). With u the gain's error measured on pairs of splits (CrossoverRun::
// gain_error, gain_error.hpp: p80 |projected - measured gain| of the measured pairs, for
// the base's kind, catalog or calibrated) -- or, where that is not given (the atlas) or
// not known, the scope's median out-of-family |MFU error| on published runs
// (uncertainty.hpp; 0 where no band is known) -- each cell's verdict is pp_verdict()'s
// (verdict.hpp: "PP needed", "PP not needed", "within uncertainty", or "nothing fits"),
// and it names the best no-PP split beside the best PP split.
//
// With failure assumptions (failure_model.hpp) each projection also gets its goodput,
// and with rank_by == goodput the best splits and the gain are those of the
// goodput-adjusted MFU (MFU x goodput) instead of the MFU.
//
// Each split's memory is checked once; its action templates (sim_fast.hpp) are built
// once per domain size and priced on every bandwidth of that row (they do not depend
// on the fabric). Rows are swept in order, their splits on run.jobs threads. Ranked by
// MFU, a split is priced on a cell only while its step-time lower bound
// (step_lower_bound, sim_fast.hpp) is not above the best of its kind (with or without
// PP) found there: the cells' bests are those of the exhaustive sweep, whatever jobs.
#include <functional>
#include <string>
#include <vector>

#include "models/plan/model_config.hpp"
#include "topologies/calibration/gain_error.hpp"
#include "topologies/goodput/failure_model.hpp"
#include "topologies/hardware/topology.hpp"
#include "topologies/projection/projection.hpp"
#include "topologies/studies/verdict.hpp"

namespace ibt::topo {

// What settled a cell's verdict: the gain against the threshold, or one side having no
// split at all (none of its dp x tp x cp x pp factorisations divides the global batch or
// suits the model) or none that fits in device memory, or nothing fitting on either side.
enum class PpDecidedBy { gain, divisibility, memory, nothing_fits };
const char* to_string(PpDecidedBy d);  // "gain", "divisibility", "memory", "nothing fits"

struct CrossoverCell {
  int domain_size = 0;
  double scale_out_gbps = 0;
  Projection best_no_pp;  // feasible == false when none fits
  Projection best_with_pp;
  double gain = 0;                              // relative, of the rank_by figure; +inf when only PP fits
  PpVerdict verdict = PpVerdict::nothing_fits;  // pp_verdict() of the cell (verdict.hpp)
  double uncertainty = 0;                       // u above
  PpDecidedBy decided_by = PpDecidedBy::gain;
  // Unless decided_by == gain, why in words: "no split without PP divides global batch
  // 1536 over 7 devices", "no split without PP fits in 80 GB", "no split fits in 80 GB".
  std::string decided_why;
};

struct CrossoverResult {
  std::vector<CrossoverCell> cells;  // domain-major order
  std::vector<int> domain_sizes;
  std::vector<double> scale_out_gbps;
  double threshold = 0.05;
  RankBy rank_by = RankBy::mfu;  // the figure the bests and the gain compare
  std::string verdict;           // one line
  GainError gain_error;          // u of every cell when known (CrossoverRun::gain_error)
  // split x cell pricings of the sweep: done, and skipped by the lower bound (ranked by
  // MFU; CrossoverRun::exhaustive turns that off).
  size_t pricings = 0, skipped = 0;
};

// How the sweep runs: on `jobs` threads (the same cells for any count), calling
// on_cell with each cell as soon as it is known (in the cells' order) and progress
// with (split x cell pricings done, total).
struct CrossoverRun {
  int jobs = 1;
  std::function<void(const CrossoverCell&)> on_cell;
  std::function<void(size_t done, size_t total)> progress;
  const models::SplitSearch* search = nullptr;  // else default_search()
  bool exhaustive = false;                      // price every split on every cell (no lower-bound pruning): for checks
  // The verdict's uncertainty u: this gain error when given and known, else the MFU band's.
  const GainError* gain_error = nullptr;
};

CrossoverResult crossover(const models::ModelConfig& model, const Topology& base, int devices,
                          const std::vector<int>& domain_sizes, const std::vector<double>& scale_out_gbps,
                          long long global_batch, double threshold, const ProjectionOptions& options,
                          const FailureAssumptions* failure = nullptr, RankBy rank_by = RankBy::mfu,
                          int max_cp = 0,  // > 0: the largest CP degree searched (else default_search's)
                          const CrossoverRun& run = {});

// The verdict line, e.g. "llama3-405b: PP stops being needed at domain >= 72 at 400 Gb/s
// (and faster)"; per scale-out bandwidth, the smallest domain from which every larger
// domain of the grid is "PP not needed", and the verdict of the cell below it.
std::string crossover_verdict(const std::string& model, const CrossoverResult& r);

}  // namespace ibt::topo
