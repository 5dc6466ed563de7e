#pragma once
// Software stacks: what a training framework at a version achieves on a device
// generation, kept apart from the datasheet facts of a topology (design.md, "Hardware
// facts, software stacks, calibration"). A stack file (topologies/stacks/<name>.json)
// holds, per device generation, the large-GEMM efficiency of the kernels it calls, its
// attention kernel's measured TFLOP/s by sequence length and head dim, and optionally
// the memory-bound efficiency and the per-op overhead; and, for every generation, which
// communication it overlaps. Every figure names a source listed in the file: a kernel
// benchmark or documented behaviour, never the end-to-end runs that validate a
// projection. A field the file leaves out keeps the topology's figure (the file's
// "notes" say why), so a stack never carries a number nobody measured.
//
// `ibt project|crossover|scaling --stack NAME|FILE` applies one (apply_stack); without
// it a projection runs as before: the topology's fitted efficiencies and --framework.
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "models/plan/model_config.hpp"
#include "topologies/hardware/topology.hpp"

namespace ibt::topo {

struct ProjectionOptions;

// A number with the source it comes from (an id of the file's "sources").
struct StackFigure {
  double value = 0;
  std::string source, note;
};
struct StackSwitch {
  bool value = false;
  std::string source, note;
};

// One attention kernel's measured speed at one head dim: TFLOP/s by sequence length, in
// the kernel benchmark's own FLOP convention (AttentionKernel says which).
struct AttentionCurve {
  int head_dim = 0;
  std::vector<double> seq_lens, forward_TFLOPs, backward_TFLOPs;  // seq_lens increasing
};

struct AttentionKernel {
  std::string kernel, source, note;
  // The benchmark's FLOP convention against ibt's (full sequence, backward 2x forward,
  // models/plan/step_layers.cpp): the share of the full-sequence FLOPs a causal kernel
  // counts (flash-attention's benchmarks: 1/2) and its backward FLOPs per forward FLOP
  // (flash-attention's benchmarks: 2.5).
  StackFigure causal_work_fraction, backward_work_ratio;
  std::vector<AttentionCurve> curves;  // head dims increasing
  // TFLOP/s at a sequence length and head dim: the curve of the nearest head dim,
  // linear in log2(seq_len) between its points and held at its ends (a shorter or longer
  // sequence than measured gets the end's rate).
  double forward_TFLOPs(double seq_len, double head_dim) const;
  double backward_TFLOPs(double seq_len, double head_dim) const;
};

struct StackGeneration {
  std::string name;
  std::vector<std::string> devices;  // a device belongs when its name contains one of these
  std::optional<StackFigure> gemm_efficiency, memory_efficiency, op_overhead_us;
  std::optional<AttentionKernel> attention;
};

// How far the stack's projections were off on published runs of that stack which fitted
// nothing (scripts/validate_published.sh --csv on the file `source` names): error =
// projected tokens/s / published - 1, its least, median and greatest over `rows` runs.
// ctest topologies_stack_held_out recomputes them, so the file cannot keep stale figures.
struct StackHeldOut {
  int rows = 0;
  double min_error = 0, median_error = 0, max_error = 0;
  std::string source, note;
};

struct SoftwareStack {
  std::string name, description, origin;
  std::string framework;                                     // framework.hpp profile: memory policy and fusions
  std::vector<std::pair<std::string, std::string>> sources;  // id, reference
  StackSwitch overlap_grad_reduce, tp_comm_overlap, dispatch_overlaps_compute;
  StackFigure fsdp_prefetch_units;  // units gathered ahead (the step program prefetches 1)
  // "elementwise": "eager" (value true: one kernel per operator, eager_elementwise.hpp) or
  // "fused" (false, the default when the field is absent).
  StackSwitch eager_elementwise;
  std::vector<std::string> notes;
  std::optional<StackHeldOut> held_out;
  std::vector<StackGeneration> generations;
  // The generation whose devices match `device_name`; UsageError naming the stack's
  // generations when none does.
  const StackGeneration& generation_for(const std::string& device_name) const;
  const std::string* find_source(const std::string& id) const;
};

// UsageError "ORIGIN: field 'PATH': WHAT" for a bad file (unknown keys with a did-you-mean).
SoftwareStack parse_stack(const std::string& json_text, const std::string& origin);
// A catalog name (topologies/stacks/<name>.json) or a .json path (core/catalog_file.hpp).
SoftwareStack load_stack(const std::string& name_or_path);
std::string stacks_dir();
std::vector<std::string> stack_names();

// Applies the stack to a projection of `model` on `topology`: the framework profile and
// the stack's overlaps into `options`, the generation's GEMM and memory efficiencies and
// per-op overhead into the topology's model figures (sourced "stack:<name>"), and the
// attention kernel's rate at the model's sequence length and head dim. UsageError when
// the stack has no generation for the device, or `options.dtype` is not the bf16 its
// kernels were measured in.
void apply_stack(const SoftwareStack& stack, const models::ModelConfig& model, Topology& topology,
                 ProjectionOptions& options);

// One line: the stack, the generation and the attention kernel a projection used.
std::string describe_stack(const SoftwareStack& stack, const models::ModelConfig& model, const Topology& topology);

}  // namespace ibt::topo
