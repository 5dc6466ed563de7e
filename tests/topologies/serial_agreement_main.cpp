// Projected vs measured step time of the serial reference engine on this machine
// (one rank, fp32, OpenBLAS on one thread): the measured side is ReferenceTrainer's step
// (real forward, backward and AdamW), the projected side is the sim executor pricing the
// same model and batch on the local-cpu topology (or --topology, e.g. a calibrated file).
// Prints both, the relative difference and the op kinds the sim spends most on; exits 1
// when the difference exceeds --bound (percent). Multi-rank agreement needs `ibt train`.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "models/model_file.hpp"
#include "models/reference_trainer.hpp"
#include "topologies/projection.hpp"

extern "C" void openblas_set_num_threads(int);

int main(int argc, char** argv) {
  std::string model_name = "small-dense", topology = "local-cpu";
  double bound = 20;
  int microbatches = 4, steps = 4;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i], v = argv[i + 1];
    if (a == "--model") model_name = v;
    else if (a == "--topology") topology = v;
    else if (a == "--bound") bound = std::atof(v.c_str());
    else if (a == "--microbatches") microbatches = std::atoi(v.c_str());
    else if (a == "--steps") steps = std::atoi(v.c_str());
    else {
      std::fprintf(stderr, "usage: %s [--model M] [--topology T] [--bound PCT] [--microbatches N] [--steps N]\n", argv[0]);
      return 2;
    }
  }
  openblas_set_num_threads(1);
  const auto model = ibt::models::load_model(model_name);
  ibt::models::TrainConfig tc;
  tc.microbatches = microbatches;
  ibt::models::SyntheticData data(model.vocab, model.seq_len, 7);
  ibt::models::ReferenceTrainer trainer(model, tc, data);
  trainer.step();  // warm-up: first-touch allocations
  std::vector<double> times;
  for (int s = 0; s < steps; ++s) times.push_back(trainer.step().seconds);
  std::sort(times.begin(), times.end());
  const double measured = times[times.size() / 2];

  ibt::topo::ProjectionOptions o;
  o.dtype = "fp32";
  o.precision = ibt::models::fp32_adam();
  o.overlap_grad_reduce = false;
  o.keep_sim = true;
  ibt::models::ParallelSplit split;
  split.microbatches = microbatches;
  const auto p = ibt::topo::project(model, ibt::topo::load_topology(topology), split, o);
  if (!p.feasible) {
    std::printf("projection infeasible: %s\n", p.reason.c_str());
    return 1;
  }
  const double diff = (p.step_s - measured) / measured;
  std::printf("%s, %d microbatches, 1 rank: measured %.4f s (median of %d steps), projected %.4f s on %s: %+.1f%% (bound %.0f%%)\n",
              model.name.c_str(), microbatches, measured, steps, p.step_s, topology.c_str(), 100 * diff, bound);
  const auto& ops = p.sim.stages.front().op_us;
  std::vector<int> order(ops.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
  std::sort(order.begin(), order.end(), [&](int a, int b) { return ops[a] > ops[b]; });
  std::printf("projected time by op kind:");
  for (int i = 0; i < 5; ++i)
    std::printf(" %s %.1f%%", std::string(ibt::models::to_string(static_cast<ibt::models::OpKind>(order[i]))).c_str(),
                100 * ops[order[i]] * 1e-6 / p.step_s);
  std::printf("\n");
  return std::abs(diff) * 100 > bound ? 1 : 0;
}
