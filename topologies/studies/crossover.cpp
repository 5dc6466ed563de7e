#include "topologies/studies/crossover.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <limits>
#include <mutex>
#include <optional>

#include "core/errors.hpp"
#include "core/parallel.hpp"
#include "topologies/projection/best_first.hpp"
#include "topologies/projection/projection_goodput.hpp"

namespace ibt::topo {

namespace {

bool better(const Projection& candidate, const Projection& incumbent, RankBy by) {
  if (!candidate.feasible) return false;
  if (!incumbent.feasible) return true;
  const double c = ranking_value(candidate, by), i = ranking_value(incumbent, by);
  return c != i ? c > i : candidate.step_s < incumbent.step_s;
}

std::string gbps_label(double g) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g Gb/s", g);
  return buf;
}

// The sweep's state shared by its steps: the grid's fabrics, the splits that fit, and
// the progress made. Rows (one domain size, every bandwidth) are priced one at a time.
class GridSweep {
 public:
  GridSweep(const models::ModelConfig& model, const ProjectionOptions& options, const FailureAssumptions* failure,
            RankBy rank_by, const CrossoverRun& run, CrossoverResult& result)
      : model_(model),
        options_(options),
        failure_(failure),
        with_goodput_(failure && failure->complete()),
        rank_by_(rank_by),
        run_(run),
        result_(result),
        bandwidths_(result.scale_out_gbps.size()) {}

  // One fabric and one empty cell per (domain size, bandwidth), domain-major.
  void make_cells(const Topology& base) {
    for (int d : result_.domain_sizes)
      for (double g : result_.scale_out_gbps) {
        fabrics_.push_back(with_fabric(base, d, g));
        CrossoverCell c;
        c.domain_size = d;
        c.scale_out_gbps = g;
        result_.cells.push_back(c);
      }
  }

  // Memory does not depend on the fabric: each split is checked once, and those that fit
  // are the ones the rows price.
  void prepare_splits(const Topology& base, int devices, long long global_batch, int max_cp) {
    // One search over the largest domain's tp limit; each cell only admits tp <= its domain.
    const std::vector<int>& domains = result_.domain_sizes;
    const int max_domain = *std::max_element(domains.begin(), domains.end());
    models::SplitSearch search = run_.search ? *run_.search : default_search(fabrics_.front(), global_batch);
    search.max_tp = max_domain;
    if (max_cp > 0) search.max_cp = max_cp;
    if (!run_.search) search.shard_domains = domains;  // HSDP inside each cell's domain
    splits_ = models::enumerate_splits(model_, devices, search);
    search_ = search;
    devices_ = devices;
    global_batch_ = global_batch;
    memory_GB_ = base.device.memory_GB.get();
    prepared_.resize(splits_.size());
    fits_.assign(splits_.size(), 0);
    parallel_for(splits_.size(), run_.jobs, [&](size_t i) {
      prepared_[i].split = splits_[i];
      fits_[i] = prepare(model_, base, options_, prepared_[i]);
    });
    for (size_t i = 0; i < splits_.size(); ++i)
      if (fits_[i]) feasible_.push_back(i);
    for (int d : domains)
      for (size_t i : feasible_) total_ += splits_[i].tp <= d ? bandwidths_ : 0;
  }

  // Prices one row's cells, then settles each: its bests, gain and verdict.
  void price_row(size_t row) {
    row_ = row;
    eligible_.clear();
    for (size_t i : feasible_)
      if (splits_[i].tp <= result_.domain_sizes[row]) eligible_.push_back(i);
    priced_.assign(eligible_.size() * bandwidths_, Projection{});
    pricings_ = 0;
    // Ranked by MFU, a cell needs only its best split with and without PP: a split is
    // priced on a cell only while its step-time lower bound (sim_fast.hpp) is not above
    // the best step time of its kind found on that cell (branch and bound; the MFU of a
    // slower split is no higher, and the bests are picked in split order as before).
    // By goodput every split is priced.
    lower_.assign(eligible_.size() * bandwidths_, 0.0);
    pending_.assign(eligible_.size() * bandwidths_, 0);
    if (rank_by_ == RankBy::mfu && !run_.exhaustive)
      price_row_best_first();
    else
      price_row_exhaustively();
    result_.pricings += pricings_;
    count_row_splits();
    for (size_t g = 0; g < bandwidths_; ++g) settle_cell(g);
  }

 private:
  // Prices split k of the row on the wanted cells. A split's action templates do not
  // depend on the fabric, so they are built once per row (SplitWalk) and priced on each
  // cell; so is its checkpoint size.
  void price_cells(size_t k, const std::vector<char>& wanted) {
    const models::ParallelSplit& split = splits_[eligible_[k]];
    SplitWalk walk(model_, split, options_);
    const double checkpoint_bytes =
        with_goodput_ ? checkpoint_bytes_per_device(model_, split, options_.precision) : 0.0;
    size_t n = 0;
    for (size_t g = 0; g < bandwidths_; ++g) {
      if (!wanted[g]) continue;
      Projection& p = priced_[k * bandwidths_ + g];
      p = prepared_[eligible_[k]];
      walk.price(model_, fabrics_[row_ * bandwidths_ + g], options_, p);
      if (with_goodput_) p.goodput = estimate_goodput(*failure_, p.devices, checkpoint_bytes, p.step_s, p.mfu);
      pending_[k * bandwidths_ + g] = 0;
      ++n;
    }
    pricings_ += n;
    if (run_.progress && n) {
      std::lock_guard<std::mutex> lock(progress_mutex_);
      done_ += n;
      run_.progress(done_, total_);
    }
  }

  void price_row_exhaustively() {
    const std::vector<char> every(bandwidths_, 1);
    parallel_for(eligible_.size(), run_.jobs, [&](size_t k) { price_cells(k, every); });
  }

  // Best first (best_first.hpp): each split from its family's bounds on the row's cells to
  // its own bounds to its prices on the cells where it can still be the best of its kind
  // (the bars: per cell, the best step time so far without PP [0] and with PP [1]).
  void price_row_best_first() {
    const size_t G = bandwidths_;
    std::vector<const Topology*> row_fabrics;
    for (size_t g = 0; g < G; ++g) row_fabrics.push_back(&fabrics_[row_ * G + g]);
    std::vector<models::ParallelSplit> row_splits;
    for (size_t i : eligible_) row_splits.push_back(splits_[i]);
    const std::vector<char> start(eligible_.size(), 1);
    BoundTemplates known(G);  // template summaries shared by the row's bounds
    const FamilyBounds families = family_bounds_of(model_, row_splits, start, row_fabrics, options_, known, run_.jobs);
    std::vector<double> key(eligible_.size(), 0.0);  // the least bound over the row's cells
    std::vector<char> own(eligible_.size(), 0);      // own bounds known (else the family's)
    auto set_bounds = [&](size_t k, const std::vector<double>& bounds) {
      key[k] = std::numeric_limits<double>::infinity();
      for (size_t g = 0; g < G; ++g) {
        lower_[k * G + g] = std::max(lower_[k * G + g], bounds[g]);
        pending_[k * G + g] = 1;
        key[k] = std::min(key[k], lower_[k * G + g]);
      }
    };
    for (size_t k = 0; k < eligible_.size(); ++k) set_bounds(k, families.bounds[families.of[k]]);
    std::vector<std::array<double, 2>> bar(
        G, {std::numeric_limits<double>::infinity(), std::numeric_limits<double>::infinity()});
    auto wanted_cells = [&](size_t k) {
      std::vector<char> wanted(G, 0);
      for (size_t g = 0; g < G; ++g)
        wanted[g] = lower_[k * G + g] * (1 - kLowerBoundMargin) <= bar[g][splits_[eligible_[k]].pp > 1];
      return wanted;
    };
    best_first(
        start, run_.jobs, [&](size_t k) { return key[k]; },
        [&](size_t k) {
          const std::vector<char> wanted = wanted_cells(k);
          return std::find(wanted.begin(), wanted.end(), 1) != wanted.end();
        },
        [&](size_t k) {
          if (own[k]) {
            price_cells(k, wanted_cells(k));
            return true;
          }
          set_bounds(k, step_lower_bounds_s(model_, splits_[eligible_[k]], row_fabrics, options_, &known));
          own[k] = 1;
          return false;
        },
        [&](size_t k, bool finished) {
          if (!finished) return;
          for (size_t g = 0; g < G; ++g) {
            const Projection& p = priced_[k * G + g];
            if (!pending_[k * G + g] && p.feasible) {
              double& b = bar[g][splits_[eligible_[k]].pp > 1];
              b = std::min(b, p.step_s);
            }
          }
        },
        [](size_t) {});
    size_t skipped = 0;
    for (char c : pending_) skipped += c;
    result_.skipped += skipped;
    if (run_.progress && skipped) {
      done_ += skipped;
      run_.progress(done_, total_);
    }
  }

  // The row's splits without PP [0] and with PP [1] searched (tp within the domain): with
  // none, a side's missing best is divisibility's doing, else memory's (which does not
  // depend on the fabric).
  void count_row_splits() {
    const int d = result_.domain_sizes[row_];
    searched_ = {0, 0};
    row_why_ = {"", ""};
    for (size_t i = 0; i < splits_.size(); ++i) {
      if (splits_[i].tp > d) continue;
      ++searched_[splits_[i].pp > 1];
    }
  }

  // Why side (0 without PP, 1 with) has no best on this row. No split searched: a split of
  // that kind exists without the global batch (then the batch does not divide) or none
  // suits the model at all; else none fits in memory.
  std::string why_none(int side) {
    if (row_why_[side].empty()) row_why_[side] = why_none_of_row(side);  // every cell of the row alike
    return row_why_[side];
  }
  std::string why_none_of_row(int side) {
    const std::string kind = side ? "with PP" : "without PP";
    char gb[32];
    std::snprintf(gb, sizeof gb, "%g GB", memory_GB_);
    if (searched_[side] > 0) return "no split " + kind + " fits in " + gb;
    const int d = result_.domain_sizes[row_];
    models::SplitSearch any_batch = search_;
    any_batch.global_batch = 0;
    bool exists = false;
    for (const models::ParallelSplit& sp : models::enumerate_splits(model_, devices_, any_batch))
      exists |= sp.tp <= d && (sp.pp > 1) == (side == 1);
    if (exists)
      return "no split " + kind + " divides global batch " + std::to_string(global_batch_) + " over " +
             std::to_string(devices_) + " devices";
    return "no split " + kind + " of " + std::to_string(devices_) + " devices is valid for " + model_.name +
           " with tp <= " + std::to_string(d);
  }

  // What settled the verdict (PpDecidedBy) and, unless the gain did, why in words.
  void settle_reason(CrossoverCell& cell) {
    const bool a = cell.best_no_pp.feasible, b = cell.best_with_pp.feasible;
    if (a && b) return;
    if (!a && !b) {
      cell.decided_by = PpDecidedBy::nothing_fits;
      cell.decided_why = why_none(0) + "; " + why_none(1);
      return;
    }
    const int side = a ? 1 : 0;  // the side with no best
    cell.decided_by = searched_[side] > 0 ? PpDecidedBy::memory : PpDecidedBy::divisibility;
    cell.decided_why = why_none(side);
  }

  // The cell's bests in split order (as a serial sweep would pick them), its gain and
  // its verdict, which carries the gain's uncertainty: the gain error of measured pairs
  // when known (gain_error.hpp), else the projection's -- the median out-of-family
  // |MFU error| of the published runs whose band the topology takes (its own, its
  // generation's or the whole set's: topologies/validation/bands.json, uncertainty.hpp).
  void settle_cell(size_t g) {
    CrossoverCell& cell = result_.cells[row_ * bandwidths_ + g];
    for (size_t k = 0; k < eligible_.size(); ++k) {
      const Projection& p = priced_[k * bandwidths_ + g];
      Projection& slot = p.split.pp == 1 ? cell.best_no_pp : cell.best_with_pp;
      if (better(p, slot, rank_by_)) slot = p;
    }
    if (cell.best_no_pp.feasible && cell.best_with_pp.feasible)
      cell.gain = ranking_value(cell.best_with_pp, rank_by_) / ranking_value(cell.best_no_pp, rank_by_) - 1.0;
    else if (cell.best_with_pp.feasible)
      cell.gain = std::numeric_limits<double>::infinity();
    else
      cell.gain = cell.best_no_pp.feasible ? -1.0 : 0.0;
    const Projection& any = cell.best_no_pp.feasible ? cell.best_no_pp : cell.best_with_pp;
    if (result_.gain_error.known)
      cell.uncertainty = result_.gain_error.points;
    else
      cell.uncertainty = any.mfu_band.known ? any.mfu_band.relative : 0.0;
    cell.verdict = pp_verdict({cell.gain, cell.uncertainty, cell.best_no_pp.feasible, cell.best_with_pp.feasible},
                              result_.threshold);
    settle_reason(cell);
    if (run_.on_cell) run_.on_cell(cell);
  }

  const models::ModelConfig& model_;
  const ProjectionOptions& options_;
  const FailureAssumptions* failure_;
  const bool with_goodput_;
  const RankBy rank_by_;
  const CrossoverRun& run_;
  CrossoverResult& result_;
  const size_t bandwidths_;  // cells per row
  std::vector<Topology> fabrics_;
  std::vector<models::ParallelSplit> splits_;
  std::vector<Projection> prepared_;  // per split, checked against memory
  std::vector<char> fits_;            // per split: prepared_ fits in memory
  models::SplitSearch search_;        // what enumerated splits_
  int devices_ = 0;
  long long global_batch_ = 0;
  double memory_GB_ = 0;
  std::array<std::string, 2> row_why_;  // why_none() of the row, once known
  std::array<size_t, 2> searched_{};    // the row's splits without [0] and with PP [1] (count_row_splits)
  std::vector<size_t> feasible_;        // the splits that fit
  size_t total_ = 0, done_ = 0;         // progress: split x cell pricings
  std::mutex progress_mutex_;
  // The row in hand: its splits (indices into splits_), their prices per cell, lower
  // bounds, and the pricings still pending (skipped by the bound when the row ends).
  size_t row_ = 0;
  std::vector<size_t> eligible_;
  std::vector<Projection> priced_;
  std::vector<double> lower_;
  std::vector<char> pending_;
  std::atomic<size_t> pricings_{0};
};

}  // namespace

const char* to_string(PpDecidedBy d) {
  switch (d) {
    case PpDecidedBy::gain: return "gain";
    case PpDecidedBy::divisibility: return "divisibility";
    case PpDecidedBy::memory: return "memory";
    case PpDecidedBy::nothing_fits: return "nothing fits";
  }
  return "?";
}

CrossoverResult crossover(const models::ModelConfig& model, const Topology& base, int devices,
                          const std::vector<int>& domain_sizes, const std::vector<double>& scale_out_gbps,
                          long long global_batch, double threshold, const ProjectionOptions& options,
                          const FailureAssumptions* failure, RankBy rank_by, int max_cp, const CrossoverRun& run) {
  if (domain_sizes.empty() || scale_out_gbps.empty()) throw UsageError("crossover: empty grid");
  const bool with_goodput = failure && failure->complete();
  if (rank_by == RankBy::goodput && !with_goodput)
    throw UsageError("crossover by goodput: goodput cannot be computed: " +
                     (failure ? failure->missing() : std::string("no failure assumptions")));
  CrossoverResult r;
  r.domain_sizes = domain_sizes;
  r.scale_out_gbps = scale_out_gbps;
  r.threshold = threshold;
  r.rank_by = rank_by;
  if (run.gain_error) r.gain_error = *run.gain_error;
  GridSweep sweep(model, options, failure, rank_by, run, r);
  sweep.make_cells(base);
  sweep.prepare_splits(base, devices, global_batch, max_cp);
  for (size_t row = 0; row < domain_sizes.size(); ++row) sweep.price_row(row);
  r.verdict = crossover_verdict(model.name, r);
  return r;
}

std::string crossover_verdict(const std::string& model, const CrossoverResult& r) {
  const size_t G = r.scale_out_gbps.size();
  const int D = static_cast<int>(r.domain_sizes.size());
  // Per bandwidth, the smallest domain from which every larger domain of the grid is
  // "PP not needed" (pp_verdict, verdict.hpp), and what the cell just below it says;
  // bandwidths with the same answer are reported together.
  std::vector<std::string> parts(G);
  for (size_t g = 0; g < G; ++g) {
    int from = D;
    while (from > 0 && r.cells[(from - 1) * G + g].verdict == PpVerdict::not_needed) --from;
    const PpVerdict below = from > 0 ? r.cells[(from - 1) * G + g].verdict : PpVerdict::not_needed;
    const std::string below_text = below == PpVerdict::needed ? "PP still needed" : verdict_text(below);
    if (from == D)
      parts[g] = below_text + " at domain " + std::to_string(r.domain_sizes.back()) + " (the grid's largest)";
    else if (from == 0)
      parts[g] = "PP not needed at any domain size from " + std::to_string(r.domain_sizes.front());
    else if (below == PpVerdict::needed)
      parts[g] = "PP stops being needed at domain >= " + std::to_string(r.domain_sizes[from]);
    else
      parts[g] = "PP not needed at domain >= " + std::to_string(r.domain_sizes[from]) + " (" + below_text + " at " +
                 std::to_string(r.domain_sizes[from - 1]) + ")";
  }
  std::string out = model + ":";
  for (size_t g = 0; g < G;) {
    size_t e = g;
    while (e + 1 < G && parts[e + 1] == parts[g]) ++e;
    const std::string bw = e == g ? gbps_label(r.scale_out_gbps[g])
                                  : gbps_label(r.scale_out_gbps[g]) + " to " + gbps_label(r.scale_out_gbps[e]);
    out += std::string(g ? ";" : "") + " " + parts[g] + " at " + bw;
    g = e + 1;
  }
  char thr[128];
  std::snprintf(thr, sizeof thr, " (PP needed = %s gain > %.0f%% + the uncertainty)", to_string(r.rank_by),
                100 * r.threshold);
  return out + thr;
}

}  // namespace ibt::topo
