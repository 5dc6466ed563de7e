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

}  // namespace

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
  const size_t G = scale_out_gbps.size();
  std::vector<Topology> fabrics;
  for (int d : domain_sizes)
    for (double g : scale_out_gbps) {
      fabrics.push_back(with_fabric(base, d, g));
      CrossoverCell c;
      c.domain_size = d;
      c.scale_out_gbps = g;
      r.cells.push_back(c);
    }
  // One search over the largest domain's tp limit; each cell only admits tp <= its domain.
  const int max_domain = *std::max_element(domain_sizes.begin(), domain_sizes.end());
  models::SplitSearch search = run.search ? *run.search : default_search(fabrics.front(), global_batch);
  search.max_tp = max_domain;
  if (max_cp > 0) search.max_cp = max_cp;
  if (!run.search) search.shard_domains = domain_sizes;  // HSDP inside each cell's domain
  const std::vector<models::ParallelSplit> splits = models::enumerate_splits(model, devices, search);
  // Memory does not depend on the fabric: check each split once, keep those that fit.
  std::vector<Projection> prepared(splits.size());
  std::vector<char> fits(splits.size(), 0);
  parallel_for(splits.size(), run.jobs, [&](size_t i) {
    prepared[i].split = splits[i];
    fits[i] = prepare(model, base, options, prepared[i]);
  });
  std::vector<size_t> feasible;
  for (size_t i = 0; i < splits.size(); ++i)
    if (fits[i]) feasible.push_back(i);

  size_t total = 0, done = 0;
  for (int d : domain_sizes)
    for (size_t i : feasible) total += splits[i].tp <= d ? G : 0;
  std::mutex progress_mutex;
  // Row by row (one domain size, every bandwidth): a split's action templates do not
  // depend on the fabric, so they are built once per row and priced on each of its
  // cells; the row's cells are known, and reported, when its splits are done.
  for (size_t row = 0; row < domain_sizes.size(); ++row) {
    std::vector<size_t> eligible;
    for (size_t i : feasible)
      if (splits[i].tp <= domain_sizes[row]) eligible.push_back(i);
    std::vector<Projection> priced(eligible.size() * G);
    std::atomic<size_t> pricings{0};
    // Ranked by MFU, a cell needs only its best split with and without PP: a split is
    // priced on a cell only while its step-time lower bound (sim_fast.hpp) is not above
    // the best step time of its kind found on that cell (branch and bound; the MFU of a
    // slower split is no higher, and the bests are picked in split order as before).
    // By goodput every split is priced.
    const bool bound = rank_by == RankBy::mfu && !run.exhaustive;
    std::vector<double> lower(eligible.size() * G, 0.0);
    std::vector<char> pending(eligible.size() * G, 0);
    auto price_cells = [&](size_t k, const std::vector<char>& wanted) {
      const models::ParallelSplit& split = splits[eligible[k]];
      // Built once per row, priced on each of its cells (SplitWalk: which walk).
      SplitWalk walk(model, split, options);
      // The checkpoint size does not depend on the fabric either.
      const double checkpoint_bytes = with_goodput ? checkpoint_bytes_per_device(model, split, options.precision) : 0.0;
      size_t n = 0;
      for (size_t g = 0; g < G; ++g) {
        if (!wanted[g]) continue;
        Projection& p = priced[k * G + g];
        p = prepared[eligible[k]];
        walk.price(model, fabrics[row * G + g], options, p);
        if (with_goodput) p.goodput = estimate_goodput(*failure, p.devices, checkpoint_bytes, p.step_s, p.mfu);
        pending[k * G + g] = 0;
        ++n;
      }
      pricings += n;
      if (run.progress && n) {
        std::lock_guard<std::mutex> lock(progress_mutex);
        done += n;
        run.progress(done, total);
      }
    };
    if (!bound) {
      const std::vector<char> every(G, 1);
      parallel_for(eligible.size(), run.jobs, [&](size_t k) { price_cells(k, every); });
    } else {
      // Best first (best_first.hpp): each split from its family's bounds on the row's
      // cells to its own bounds to its prices on the cells where it can still be the best
      // of its kind (the bars: per cell, the best step time so far without PP [0] and
      // with PP [1]).
      std::vector<const Topology*> row_fabrics;
      for (size_t g = 0; g < G; ++g) row_fabrics.push_back(&fabrics[row * G + g]);
      std::vector<models::ParallelSplit> row_splits;
      for (size_t i : eligible) row_splits.push_back(splits[i]);
      const std::vector<char> start(eligible.size(), 1);
      BoundTemplates known(G);  // template summaries shared by the row's bounds
      const FamilyBounds families = family_bounds_of(model, row_splits, start, row_fabrics, options, known, run.jobs);
      std::vector<double> key(eligible.size(), 0.0);  // the least bound over the row's cells
      std::vector<char> own(eligible.size(), 0);      // own bounds known (else the family's)
      auto set_bounds = [&](size_t k, const std::vector<double>& bounds) {
        key[k] = std::numeric_limits<double>::infinity();
        for (size_t g = 0; g < G; ++g) {
          lower[k * G + g] = std::max(lower[k * G + g], bounds[g]);
          pending[k * G + g] = 1;
          key[k] = std::min(key[k], lower[k * G + g]);
        }
      };
      for (size_t k = 0; k < eligible.size(); ++k) set_bounds(k, families.bounds[families.of[k]]);
      std::vector<std::array<double, 2>> bar(
          G, {std::numeric_limits<double>::infinity(), std::numeric_limits<double>::infinity()});
      auto wanted_cells = [&](size_t k) {
        std::vector<char> wanted(G, 0);
        for (size_t g = 0; g < G; ++g)
          wanted[g] = lower[k * G + g] * (1 - kLowerBoundMargin) <= bar[g][splits[eligible[k]].pp > 1];
        return wanted;
      };
      best_first(
          start, run.jobs, [&](size_t k) { return key[k]; },
          [&](size_t k) {
            const std::vector<char> wanted = wanted_cells(k);
            return std::find(wanted.begin(), wanted.end(), 1) != wanted.end();
          },
          [&](size_t k) {
            if (own[k]) {
              price_cells(k, wanted_cells(k));
              return true;
            }
            set_bounds(k, step_lower_bounds_s(model, splits[eligible[k]], row_fabrics, options, &known));
            own[k] = 1;
            return false;
          },
          [&](size_t k, bool finished) {
            if (!finished) return;
            for (size_t g = 0; g < G; ++g) {
              const Projection& p = priced[k * G + g];
              if (!pending[k * G + g] && p.feasible) {
                double& b = bar[g][splits[eligible[k]].pp > 1];
                b = std::min(b, p.step_s);
              }
            }
          },
          [](size_t) {});
      size_t skipped = 0;
      for (char c : pending) skipped += c;
      r.skipped += skipped;
      if (run.progress && skipped) {
        done += skipped;
        run.progress(done, total);
      }
    }
    r.pricings += pricings;
    // The bests in split order, as a serial sweep would pick them.
    for (size_t g = 0; g < G; ++g) {
      CrossoverCell& cell = r.cells[row * G + g];
      for (size_t k = 0; k < eligible.size(); ++k) {
        const Projection& p = priced[k * G + g];
        Projection& slot = p.split.pp == 1 ? cell.best_no_pp : cell.best_with_pp;
        if (better(p, slot, rank_by)) slot = p;
      }
      if (cell.best_no_pp.feasible && cell.best_with_pp.feasible)
        cell.gain = ranking_value(cell.best_with_pp, rank_by) / ranking_value(cell.best_no_pp, rank_by) - 1.0;
      else if (cell.best_with_pp.feasible)
        cell.gain = std::numeric_limits<double>::infinity();
      else
        cell.gain = cell.best_no_pp.feasible ? -1.0 : 0.0;
      // The verdict carries the projection's uncertainty: the median out-of-family |MFU
      // error| of the published runs whose band the topology takes (its own, its
      // generation's or the whole set's: topologies/validation/bands.json, uncertainty.hpp).
      const Projection& any = cell.best_no_pp.feasible ? cell.best_no_pp : cell.best_with_pp;
      cell.uncertainty = any.mfu_band.known ? any.mfu_band.relative : 0.0;
      cell.pp_needed = cell.gain > threshold + cell.uncertainty;
      cell.verdict = cell.pp_needed                                                            ? "PP needed"
                     : cell.gain < threshold - cell.uncertainty || !cell.best_with_pp.feasible ? "PP not needed"
                                                                                               : "within uncertainty";
      if (run.on_cell) run.on_cell(cell);
    }
  }
  r.verdict = crossover_verdict(model.name, r);
  return r;
}

std::string crossover_verdict(const std::string& model, const CrossoverResult& r) {
  const size_t G = r.scale_out_gbps.size();
  // Per bandwidth, the smallest domain from which no larger domain of the grid needs PP;
  // bandwidths with the same answer are reported together.
  std::vector<std::string> parts(G);
  for (size_t g = 0; g < G; ++g) {
    int from = -1;
    for (int d = static_cast<int>(r.domain_sizes.size()) - 1; d >= 0; --d) {
      if (r.cells[d * G + g].pp_needed) break;
      from = d;
    }
    if (from < 0)
      parts[g] = "PP still needed at every domain size up to " + std::to_string(r.domain_sizes.back());
    else if (from == 0)
      parts[g] = "PP not needed at any domain size from " + std::to_string(r.domain_sizes.front());
    else
      parts[g] = "PP stops being needed at domain >= " + std::to_string(r.domain_sizes[from]);
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
  char thr[96];
  std::snprintf(thr, sizeof thr, " (PP needed = %s gain > %.0f%%)", to_string(r.rank_by), 100 * r.threshold);
  return out + thr;
}

}  // namespace ibt::topo
