#pragma once
// Pricers and runners shared by the sim executor's tests (sim_test.cpp, sim_dualpipev_test.cpp):
// costs simple enough that a schedule's step has a closed form.
#include <vector>

#include "models/plan/model_file.hpp"
#include "models/plan/schedule.hpp"
#include "topologies/sim/sim_executor.hpp"

namespace ibt::topo::sim_testing {

// Transformer-layer compute costs its FLOPs (1 us per GFLOP); everything else --
// embedding, head, optimizer, communication -- is free. Forward chunk F, backward 2F.
class LayerFlopsPricer : public OpPricer {
 public:
  explicit LayerFlopsPricer(int layers) : layers_(layers) {}
  double op_us(const models::StepProgram&, const models::Op& op) override {
    if (models::is_comm(op.kind) || op.layer < 0 || op.layer >= layers_) return 0.0;
    return op.flops * 1e-9;
  }
  double exchange_half_us(const models::StepProgram&, const models::Op&, int) override { return 0.0; }

 private:
  int layers_;
};

// tiny-dense with 16 layers: equal stages for every p * v up to 16.
inline models::ModelConfig sixteen_layer_model() {
  auto m = models::load_model("tiny-dense");
  m.layers = 16;
  return m;
}

// Only the transformer layers' GEMMs cost time (1 us per GFLOP), everything else is
// free: a forward, a split backward's B and its W then cost the same (each GEMM once),
// the setting of the zero-bubble paper's handcrafted schedules (Qi et al., ICLR 2024,
// section 2: T_F = T_B = T_W), and an unsplit backward twice that.
class LayerGemmPricer : public OpPricer {
 public:
  explicit LayerGemmPricer(int layers) : layers_(layers) {}
  double op_us(const models::StepProgram&, const models::Op& op) override {
    const bool gemm = models::to_string(op.kind).ends_with("_gemm");
    if (!gemm || op.layer < 0 || op.layer >= layers_) return 0.0;
    return op.flops * 1e-9;
  }
  double exchange_half_us(const models::StepProgram&, const models::Op&, int) override { return 0.0; }

 private:
  int layers_;
};

inline SimResult simulate_split(const models::ModelConfig& m, const models::ParallelSplit& s, OpPricer& pricer) {
  const auto schedule = models::build_schedule(s);
  std::vector<models::StepProgram> programs;
  for (int st = 0; st < s.pp; ++st) programs.push_back(models::build_step_program(m, s, schedule, st * s.tp * s.dp));
  return simulate(programs, pricer);
}

// One group's collectives in a step priced by `pricer`, summed over the stages: the
// time the compute stream waited for them, the bubble, and what they take themselves.
struct ExposedGroup {
  double exposed_us = 0;
  double bubble_us = 0;
  double collective_us = 0;
  double step_us = 0;
};

inline ExposedGroup exposed_time(const models::ModelConfig& m, const models::ParallelSplit& s, OpPricer& pricer,
                                 models::Group group, Exposure exposure) {
  const auto schedule = models::build_schedule(s);
  std::vector<models::StepProgram> programs;
  for (int st = 0; st < s.pp; ++st) programs.push_back(models::build_step_program(m, s, schedule, st * s.tp * s.dp));
  const SimResult r = simulate(programs, pricer);
  ExposedGroup e;
  e.step_us = r.step_us;
  for (const auto& st : r.stages) {
    e.exposed_us += st.exposed_us[static_cast<int>(exposure)];
    e.bubble_us += st.exposed_us[static_cast<int>(Exposure::bubble)];
  }
  for (const auto& prog : programs)
    for (const auto& op : prog.ops)
      if (models::is_comm(op.kind) && op.group == group) e.collective_us += pricer.op_us(prog, op);
  return e;
}

}  // namespace ibt::topo::sim_testing
