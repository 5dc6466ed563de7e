#pragma once
// The PP verdict checked against measured pairs: the vTrain groups (one model, GPU count
// and global batch) measured both without PP and with PP. Per group the measured gain is
// best measured time without PP / best with PP - 1 (the same work, so the throughput or
// MFU ratio); the projected gain is the same ratio of the projected times of the same
// measured splits (vtrain.hpp projects them), so both sides pick among the same splits.
//
// A verdict here is pp_verdict()'s with no band (verdict.hpp): "PP needed" when the gain
// exceeds the threshold, else "PP not needed" -- applied to the measured gain gives the
// truth, to the projected gain what ibt would say. The gain error (projected gain -
// measured gain, in points) is what the crossover verdict's uncertainty is taken from
// (topologies/validation/pp-gain-error.json, gain_error.hpp).
#include <string>
#include <vector>

#include "topologies/calibration/vtrain.hpp"

namespace ibt::topo {

struct PpPair {
  // What the group shares (hidden, heads, layers, seq, gpus, global batch) and its rows.
  VtrainRow key;
  std::vector<VtrainResult> splits;
  double measured_gain = 0, projected_gain = 0;
  bool measured_needed = false, projected_needed = false;
  bool top1 = false;  // the split projected fastest is the one measured fastest
  double regret = 0;  // measured time of the projected-fastest split / measured best - 1
  int skipped = 0;    // splits that could not be projected (left out of both sides)
};

// Groups the rows (both files together) by model, GPU count and global batch, keeping
// the groups with at least one measured split without PP and one with PP, in the order
// their first row appears; `limit` > 0 keeps the first `limit` of them.
std::vector<std::vector<VtrainRow>> pp_groups(const std::vector<VtrainRow>& rows, int limit = 0);

// Projects every split of each group on `t` and compares (threshold: the verdict's, 0.05).
// A group whose splits of one kind all fail to project is a UsageError naming it.
std::vector<PpPair> compare_pp_pairs(const std::vector<std::vector<VtrainRow>>& groups, const Topology& t,
                                     double threshold);

struct PpPairSummary {
  int groups = 0, agree = 0;
  // Confusion: [measured needed][projected needed].
  int confusion[2][2] = {{0, 0}, {0, 0}};
  int top1 = 0;
  double regret_median = 0, regret_p90 = 0;
  // projected gain - measured gain, in points (x100).
  double err_median = 0, err_p10 = 0, err_p90 = 0, abs_err_p80 = 0;
};
PpPairSummary summarize(const std::vector<PpPair>& pairs);

// One line naming the group ("gpus 64 gb 512 h 3072 a 32 l 30 s 2048").
std::string group_label(const VtrainRow& key);

}  // namespace ibt::topo
