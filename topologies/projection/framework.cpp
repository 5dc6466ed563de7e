#include "topologies/projection/framework.hpp"

#include "core/errors.hpp"
#include "topologies/projection/projection.hpp"

namespace ibt::topo {

namespace {

std::vector<FrameworkProfile> profiles() {
  std::vector<FrameworkProfile> p;
  {
    FrameworkProfile f;
    f.name = "megatron-core";
    f.description = "Megatron-Core / NeMo: flash attention, --overlap-grad-reduce, --tp-comm-overlap";
    f.overlap_grad_reduce = true;
    f.tp_comm_overlap = true;
    f.dispatch_overlaps_compute = true;
    f.fp8_keeps_gemm_inputs_in_fp8 = true;
    f.selective_policy = models::SelectivePolicy::megatron_core;
    p.push_back(f);
  }
  {
    FrameworkProfile f;
    f.name = "megatron-2021";
    f.description =
        "Megatron-LM 2021-22: unfused attention (6 passes over the scores), DP all-reduce after the backward";
    f.attention_score_passes = 6;
    f.overlap_grad_reduce = false;
    f.dispatch_overlaps_compute = true;
    p.push_back(f);
  }
  {
    FrameworkProfile f;
    f.name = "maxtext";
    f.description =
        "MaxText (JAX/XLA): fused attention, async gradient reduction, collective matmul for TP, selective = remat "
        "minimal";
    f.overlap_grad_reduce = true;
    f.tp_comm_overlap = true;
    f.dispatch_overlaps_compute = true;
    f.selective_policy = models::SelectivePolicy::dots_without_batch_dims;
    p.push_back(f);
  }
  {
    FrameworkProfile f;
    f.name = "ibt";
    f.description = "ibt's own default: fused attention, gradient reduction overlapped, no TP overlap";
    p.push_back(f);
  }
  return p;
}

}  // namespace

void apply(const FrameworkProfile& f, ProjectionOptions& o) {
  o.attention_score_passes = f.attention_score_passes;
  o.overlap_grad_reduce = f.overlap_grad_reduce;
  o.tp_comm_overlap = f.tp_comm_overlap;
  o.dispatch_overlaps_compute = f.dispatch_overlaps_compute;
  o.selective_policy = f.selective_policy;
  o.fp8_keeps_gemm_inputs_in_fp8 = f.fp8_keeps_gemm_inputs_in_fp8;
}

FrameworkProfile framework_profile(const std::string& name) {
  std::string known;
  for (const auto& f : profiles()) {
    if (f.name == name) return f;
    known += (known.empty() ? "" : ", ") + f.name;
  }
  throw UsageError("unknown framework '" + name + "' (known: " + known + ")");
}

}  // namespace ibt::topo
