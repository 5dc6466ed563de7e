#include "topologies/calibration/vtrain.hpp"

#include <cmath>
#include <fstream>
#include <sstream>

#include <map>

#include "core/errors.hpp"
#include "topologies/calibration/calibration.hpp"
#include "topologies/calibration/golden_section.hpp"
#include "topologies/hardware/collective_model.hpp"
#include "topologies/projection/projection.hpp"

namespace ibt::topo {

std::vector<VtrainRow> read_vtrain_csv(const std::string& path, bool multi) {
  std::ifstream in(path);
  if (!in) throw UsageError("cannot read " + path);
  std::vector<VtrainRow> rows;
  std::string line;
  int lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    if (lineno == 1 || line.empty()) continue;  // header
    std::vector<double> v;
    std::stringstream ss(line);
    std::string cell;
    while (std::getline(ss, cell, ',')) {
      try {
        v.push_back(std::stod(cell));
      } catch (const std::exception&) {
        throw UsageError(path + ":" + std::to_string(lineno) + ": '" + cell + "' is not a number");
      }
    }
    const size_t expect = multi ? 12 : 11;
    if (v.size() != expect)
      throw UsageError(path + ":" + std::to_string(lineno) + ": " + std::to_string(v.size()) + " columns, expected " +
                       std::to_string(expect));
    const size_t o = multi ? 1 : 0;  // multi has "Parameters (billion)" first
    VtrainRow r;
    r.gpus = static_cast<int>(v[o + 0]);
    r.global_batch = static_cast<int>(v[o + 1]);
    r.micro_batch = static_cast<int>(v[o + 2]);
    r.hidden = static_cast<int>(v[o + 3]);
    r.heads = static_cast<int>(v[o + 4]);
    r.layers = static_cast<int>(v[o + 5]);
    r.seq = static_cast<int>(v[o + 6]);
    r.tp = static_cast<int>(v[o + 7]);
    r.dp = static_cast<int>(v[o + 8]);
    r.pp = static_cast<int>(v[o + 9]);
    r.measured_ms = v[o + 10];
    r.multi = multi;
    if (r.tp * r.dp * r.pp != r.gpus) throw UsageError(path + ":" + std::to_string(lineno) + ": tp*dp*pp != GPUs");
    rows.push_back(r);
  }
  return rows;
}

namespace {

models::ModelConfig gpt(const VtrainRow& r) {
  models::ModelConfig m;
  m.name = "vtrain-gpt";
  m.source = "a row of the vTrain ground truth";
  m.layers = r.layers;
  m.hidden = r.hidden;
  m.heads = r.heads;
  m.kv_heads = r.heads;
  m.ffn_hidden = 4 * r.hidden;
  m.vocab = 51200;
  m.seq_len = r.seq;
  m.norm = models::Norm::layernorm;
  m.activation = models::Activation::gelu;
  m.tied_embeddings = true;
  return m;
}

}  // namespace

std::vector<VtrainResult> project_vtrain(const std::vector<VtrainRow>& rows, const Topology& t) {
  ProjectionOptions o;
  o.dtype = "bf16";  // A100 fp16 and bf16 tensor peaks are equal (312 TFLOP/s)
  o.overlap_grad_reduce = false;
  // 2-byte activations and gradients: the runs trained in fp16, where Megatron's DDP and
  // DeepSpeed's fp16 engine all-reduce fp16 gradients (fp32 all-reduce is Megatron's
  // choice only with bf16 or --accumulate-allreduce-grads-in-fp32; tried: it moves the
  // multi-node MAPE by < 1 point, so the published fp16 default stays).
  o.precision = models::bf16_mixed_adam();
  // Megatron of 2022 materialises the attention scores (no flash attention): write
  // QK^T, softmax read + write, dropout read + write, read for AV = 6 passes forward.
  o.attention_score_passes = 6;
  // Megatron of the time runs eagerly: the host launches each kernel while the GPU runs
  // the previous ones, so a small op costs its dispatch time, a large one its device
  // time (max, not sum: sim_pricer.hpp).
  o.dispatch_overlaps_compute = true;
  std::vector<VtrainResult> out;
  for (const auto& r : rows) {
    VtrainResult res;
    res.row = r;
    try {
      const models::ModelConfig m = gpt(r);
      models::ParallelSplit s;
      s.tp = r.tp;
      s.dp = r.dp;
      s.pp = r.pp;
      s.micro_batch_size = r.micro_batch;
      // Every vTrain validation run checkpointed activations (use_checkpoint: true in all
      // 1,548 of vTrain's config/validation files): each layer's forward runs again before
      // its backward. Leaving it out under-projected every large-op (multi-node) row by
      // about a quarter -- the missing third forward of 4 forward-equivalents.
      s.recompute = models::Recompute::full;
      if (r.global_batch % (r.dp * r.micro_batch) != 0)
        throw UsageError("global batch not divisible by dp x micro batch");
      s.microbatches = r.global_batch / (r.dp * r.micro_batch);
      s.schedule = (r.pp > 1 && s.microbatches < r.pp) ? models::ScheduleKind::afab : models::ScheduleKind::one_f_one_b;
      Projection p;
      p.split = s;
      p.devices = s.world_size();
      models::validate(s, m, p.devices);
      price(stage_programs(m, s, o), m, t, o, p);
      res.projected_ms = p.step_s * 1e3;
      res.ape = std::abs(res.projected_ms - r.measured_ms) / r.measured_ms;
    } catch (const std::exception& e) {
      res.error = e.what();
    }
    out.push_back(res);
  }
  return out;
}

Topology with_efficiency(const Topology& base, double gemm_efficiency, double op_overhead_us, const std::string& how) {
  Topology t = base;
  const std::string id = "vtrain-fit";
  if (!t.find_source(id)) t.sources.push_back({id, SourceKind::assumption, how});
  t.model.gemm_efficiency = {gemm_efficiency, "fraction", id, "fitted once for the whole vTrain set"};
  t.model.op_overhead_us = {op_overhead_us, "us", id,
                            "fitted once for the whole vTrain set; host dispatch per op, which the device's work hides "
                            "(an op costs max(roofline, this))"};
  return t;
}

std::vector<CollectiveFit> fit_allreduce_table(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw UsageError("cannot read " + path);
  std::map<int, std::vector<Sample>> by_gpus;
  std::string line;
  int lineno = 0;
  bool header = true;
  while (std::getline(in, line)) {
    ++lineno;
    if (line.empty() || line[0] == '#') continue;
    if (header) {  // gpus,bytes,time_us
      header = false;
      continue;
    }
    std::stringstream ss(line);
    std::string cell;
    std::vector<double> v;
    while (std::getline(ss, cell, ',')) {
      try {
        v.push_back(std::stod(cell));
      } catch (const std::exception&) {
        throw UsageError(path + ":" + std::to_string(lineno) + ": '" + cell + "' is not a number");
      }
    }
    if (v.size() != 3 || v[0] < 2 || v[1] <= 0 || v[2] <= 0)
      throw UsageError(path + ":" + std::to_string(lineno) + ": expected gpus (>= 2),bytes (> 0),time_us (> 0)");
    by_gpus[static_cast<int>(v[0])].push_back({v[1], v[2]});
  }
  if (by_gpus.empty()) throw UsageError(path + ": no rows");
  std::vector<CollectiveFit> fits;
  for (const auto& [n, samples] : by_gpus) {
    fits.push_back(fit_collective("all_reduce", "intra", n, samples, "vtrain-nccl"));
  }
  return fits;
}

Topology with_collective_fits(const Topology& base, const std::vector<CollectiveFit>& fits, const std::string& how) {
  Topology t = base;
  if (!t.find_source("vtrain-nccl")) t.sources.push_back({"vtrain-nccl", SourceKind::measured, how});
  t.fits = fits;
  return t;
}

EfficiencyFit fit_vtrain_efficiency(const std::vector<VtrainRow>& rows, const Topology& base) {
  // The objective: the mean of the single-node and the multi-node MAPE over the fitting
  // rows (each set weighs the same however many rows it brings).
  auto score = [&](double e, double o) {
    const auto results = project_vtrain(rows, with_efficiency(base, e, o, "fit in progress"));
    std::vector<VtrainResult> by_set[2];
    for (const auto& r : results) by_set[r.row.multi ? 1 : 0].push_back(r);
    double sum = 0;
    int sets = 0;
    for (const auto& set : by_set)
      if (!set.empty()) {
        sum += mape(set).mape;
        ++sets;
      }
    return sets ? sum / sets : 0.0;
  };
  // Golden-section search of f on [lo, hi].
  EfficiencyFit fit{base.model.gemm_efficiency.get(), base.model.op_overhead_us.get(), 0};
  for (int round = 0; round < 3; ++round) {
    fit.op_overhead_us = golden_section_min([&](double o) { return score(fit.gemm_efficiency, o); }, 0.0, 500.0, 14);
    fit.gemm_efficiency = golden_section_min([&](double e) { return score(e, fit.op_overhead_us); }, 0.2, 1.0, 14);
  }
  fit.mape = score(fit.gemm_efficiency, fit.op_overhead_us);
  return fit;
}

Mape mape(const std::vector<VtrainResult>& results) {
  Mape m;
  double sum = 0;
  for (const auto& r : results) {
    if (!r.error.empty()) {
      ++m.skipped;
      continue;
    }
    sum += r.ape;
    ++m.rows;
  }
  m.mape = m.rows ? sum / m.rows : 0.0;
  return m;
}

}  // namespace ibt::topo
