#pragma once
// Validation against measured Megatron iteration times on DGX A100
// (../shared/validation/vtrain/*.csv, from VIA-Research/vTrain; README there).
//
// Every row is projected with ONE model for the whole set, stated here:
// - the dgx-a100 catalog topology as is (no per-row constants, nothing fitted to the rows);
// - a GPT block per row: layers, hidden, heads from the row, ffn = 4 x hidden, LayerNorm,
//   GELU, vocabulary 51,200 (GPT-2's 50,257 padded as Megatron does), tied embeddings;
// - the row's tp, dp, pp, micro batch; microbatches = global batch / (dp x micro batch);
//   1F1B when pp > 1 (all-forward-all-backward when microbatches < pp); no sequence
//   parallelism, no recompute, no ZeRO (Megatron-DeepSpeed defaults of the time);
// - fp16 activations and gradients (2 bytes), peak 312 TFLOP/s, gradient all-reduce
//   after the backward pass (no overlap: Megatron's DDP of the time);
// - unfused attention: the s x s scores are written and read 6 times in the forward
//   (QK^T, softmax in/out, dropout in/out, AV) and 12 in the backward, at 2 bytes;
// - memory is not checked (the runs happened, so they fit).
#include <string>
#include <vector>

#include "topologies/topology.hpp"

namespace ibt::topo {

struct VtrainRow {
  int gpus = 0, global_batch = 0, micro_batch = 0, hidden = 0, heads = 0, layers = 0, seq = 0;
  int tp = 0, dp = 0, pp = 0;
  double measured_ms = 0;
  bool multi = false;
};

// Throws UsageError naming the file and line on a malformed row.
std::vector<VtrainRow> read_vtrain_csv(const std::string& path, bool multi);

struct VtrainResult {
  VtrainRow row;
  double projected_ms = 0;
  double ape = 0;  // |projected - measured| / measured
  std::string error;  // a row that could not be projected (split invalid for the model)
};

std::vector<VtrainResult> project_vtrain(const std::vector<VtrainRow>& rows, const Topology& dgx_a100);

// The one efficiency model, fitted for the whole set: gemm_efficiency (peak fraction of
// large ops) and op_overhead_us (a fixed cost per compute op; with it, an op of F FLOPs
// runs at efficiency e*F/(F + F_half), F_half = overhead*peak*e: the saturating
// efficiency of small kernels plus the framework's per-op launch cost). Fitted by
// coordinate descent (golden-section search, 3 rounds) minimising the MAPE of the rows
// given (the script uses every 4th single-node row); everything else is the topology's.
struct EfficiencyFit {
  double gemm_efficiency = 0;
  double op_overhead_us = 0;
  double mape = 0;  // on the fitting rows
};
EfficiencyFit fit_vtrain_efficiency(const std::vector<VtrainRow>& rows, const Topology& base);
Topology with_efficiency(const Topology& base, double gemm_efficiency, double op_overhead_us,
                         const std::string& how);

// The measured NCCL all-reduce of the vTrain authors' A100 node (gpus,bytes,time_us rows;
// '#' lines are comments; topologies/validation/vtrain-a100-allreduce.csv): one
// latency-bandwidth fit per group size (calibration.hpp's fit_latency_bandwidth), as
// intra-domain all_reduce fits that replace the analytic NVLink model for TP and DP
// all-reduces inside a node. Fitted to the collective measurements only, never to the
// iteration times. Throws UsageError naming the file and line on a malformed row.
std::vector<CollectiveFit> fit_allreduce_table(const std::string& path);
Topology with_collective_fits(const Topology& base, const std::vector<CollectiveFit>& fits,
                              const std::string& how);

struct Mape {
  double mape = 0;
  int rows = 0, skipped = 0;
};
Mape mape(const std::vector<VtrainResult>& results);

}  // namespace ibt::topo
