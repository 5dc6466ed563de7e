#pragma once
// Training frameworks as the sim sees them: which communication each overlaps with
// compute, and whether attention is a fused kernel. A projection of a published run
// should use the framework the run used; `ibt project --framework NAME` picks one,
// and the individual flags override its choices.
//
// The profiles (each choice is the framework's documented default or the setting its
// published runs state):
// - megatron-core (2023-): flash attention (fused); DP gradient reduce-scatter
//   overlapped with the backward (--overlap-grad-reduce) and TP all-gather /
//   reduce-scatter split into chunks overlapped with the GEMMs next to them
//   (--tp-comm-overlap, Transformer Engine userbuffers), as Megatron-LM's README states
//   for its H100 scaling runs; host dispatch overlaps the device.
// - megatron-2021 (Megatron-LM of Narayanan et al. 2021 and Korthikanti et al. 2022):
//   attention materialises the s x s scores (write QK^T, softmax read + write, dropout
//   read + write, read for AV: 6 passes forward); the DP all-reduce after the whole
//   forward-backward (train_step's allreduce_gradients() of the time; the vTrain fit,
//   vtrain.cpp, makes the same choices); no TP overlap; eager dispatch overlaps the
//   device (max, not sum; sim_pricer.hpp).
// - maxtext (JAX/XLA on TPU): fused (splash/flash) attention; XLA's async collectives
//   overlap the gradient reduction; collective matmul overlaps TP all-gather /
//   reduce-scatter with the GEMMs (the same chunked overlap as --tp-comm-overlap);
//   one compiled program, so no per-op dispatch cost beyond the device time.
//
// Memory (what the plan keeps; accounting.hpp states each policy with its source):
// - megatron-core: selective recompute is Megatron-Core's default --recompute-modules
//   core_attn (Korthikanti et al. 2022); with --fp8 Transformer Engine keeps the linear
//   layers' inputs for the weight gradient in fp8.
// - megatron-2021, ibt: Korthikanti's selective recompute; bf16 everywhere.
// - maxtext: selective is remat_policy "minimal" (JAX checkpoint_dots_with_no_batch_dims:
//   the layer input and the weight matmuls' outputs only).
// - ibt (the suite's own default before frameworks were modelled): fused attention,
//   gradient reduction overlapped, no TP overlap.
#include <string>
#include <vector>

#include "models/plan/accounting.hpp"

namespace ibt::topo {

struct FrameworkProfile {
  std::string name;
  std::string description;
  double attention_score_passes = 0;  // 0 = fused attention
  bool overlap_grad_reduce = true;
  bool tp_comm_overlap = false;
  bool dispatch_overlaps_compute = false;
  models::SelectivePolicy selective_policy = models::SelectivePolicy::attention_core;
  bool fp8_keeps_gemm_inputs_in_fp8 = false;
};

struct ProjectionOptions;
// Sets the options' attention, overlap and dispatch choices to the profile's.
void apply(const FrameworkProfile& f, ProjectionOptions& o);

// UsageError naming the known profiles for an unknown name.
FrameworkProfile framework_profile(const std::string& name);

}  // namespace ibt::topo
