#include "topologies/sim/sim_pricer.hpp"

#include <algorithm>
#include <bit>
#include <tuple>

#include "core/errors.hpp"

namespace ibt::topo {

using models::Group;
using models::Op;
using models::OpKind;

std::string default_dtype(const Topology& t) { return t.device.bf16.known() ? "bf16" : "fp32"; }

TopologyPricer::TopologyPricer(const Topology& topology, const models::ParallelSplit& split, const std::string& dtype)
    : t_(topology), split_(split) {
  const Figure& peak = t_.device.peak(dtype);
  if (!peak.known())
    throw UsageError("topology '" + t_.name + "' has no " + dtype + " peak (" + peak.note +
                     "); choose another --dtype");
  flops_per_us_ = peak.get() * 1e6 * t_.model.gemm_efficiency.get();
  gemm_flops_per_us_ = flops_per_us_;
  bytes_per_us_ = t_.device.memory_bandwidth_GBps.get() * 1e3 * t_.model.memory_efficiency.get();
  overhead_us_ = t_.model.op_overhead_us.get();
  if (const auto& g = t_.device.gemm_tiles) tiles_ = g->grid();
  const int D = t_.placement_domain(split.world_size());
  const long long tp_cp = static_cast<long long>(split.tp) * split.cp;
  stage_stride_ = tp_cp * split.dp;
  const int expert_dp = split.dp / split.ep;
  const long long W = split.world_size();
  placement_[static_cast<int>(Group::none)] = Placement{};
  placement_[static_cast<int>(Group::tp)] = place_group(split.tp, 1, D, W);
  placement_[static_cast<int>(Group::cp)] = place_group(split.cp, split.tp, D, W);
  placement_[static_cast<int>(Group::dp)] = place_group(split.dp, tp_cp, D, W);
  placement_[static_cast<int>(Group::ep)] = place_group(split.ep, tp_cp, D, W);
  placement_[static_cast<int>(Group::expert_dp)] = place_group(expert_dp, tp_cp * split.ep, D, W);
  placement_[static_cast<int>(Group::pp)] = place_group(split.pp, stage_stride_, D, W);
  // dp x cp is one strided group (cp varies fastest, then dp).
  placement_[static_cast<int>(Group::dp_cp)] = place_group(split.dp * split.cp, split.tp, D, W);
  // expert_dp x cp is two strides (cp, then expert_dp past the EP peers): a domain
  // holds the CP peers it holds times the expert_dp peers it holds.
  if (split.ep == 1) {
    placement_[static_cast<int>(Group::expert_dp_cp)] = placement_[static_cast<int>(Group::dp_cp)];
  } else {
    Placement p;
    p.n = expert_dp * split.cp;
    p.per_domain = std::min(p.n, placement_[static_cast<int>(Group::cp)].per_domain *
                                     placement_[static_cast<int>(Group::expert_dp)].per_domain);
    placement_[static_cast<int>(Group::expert_dp_cp)] = p;
  }
  // Hybrid sharding: a shard group is g consecutive DP ranks x all CP ranks (cp
  // fastest, like dp_cp: one strided group); replicas stride over the shard groups.
  const int shard = split.zero_shard();
  placement_[static_cast<int>(Group::dp_shard)] = place_group(shard * split.cp, split.tp, D);
  placement_[static_cast<int>(Group::dp_replica)] = place_group(split.dp / shard, tp_cp * shard, D);
  // HSDP's expert shard group: the shard group's g/ep ranks with the same experts (a
  // stride of ep DP ranks) x cp, two strides as expert_dp_cp; without a shard group it
  // is expert_dp_cp.
  if (split.shard_group == 0) {
    placement_[static_cast<int>(Group::expert_dp_shard)] = placement_[static_cast<int>(Group::expert_dp_cp)];
  } else {
    Placement p;
    p.n = shard / split.ep * split.cp;
    p.per_domain = std::min(p.n, placement_[static_cast<int>(Group::cp)].per_domain *
                                     place_group(shard / split.ep, tp_cp * split.ep, D).per_domain);
    placement_[static_cast<int>(Group::expert_dp_shard)] = p;
  }
  set_kv_replicas(1);
}

void TopologyPricer::set_kv_replicas(int replicas) {
  // Consecutive TP ranks (rank_groups.hpp tp_kv), inside the TP group's placement.
  const long long W = split_.world_size();
  placement_[static_cast<int>(Group::tp_kv)] = place_group(replicas, 1, t_.placement_domain(W), W);
}

void TopologyPricer::add_attention_score_traffic(const models::ModelConfig& model, double passes,
                                                 double element_bytes) {
  const double heads = static_cast<double>(model.heads) / split_.tp;
  const double seq = model.seq_len;
  score_bytes_forward_ = passes * element_bytes * split_.micro_batch_size * heads * seq * seq;
}

void TopologyPricer::set_eager_elementwise(const models::ModelConfig& model, double element_bytes) {
  eager_ = eager_elementwise_bytes(model, split_, element_bytes);
}

void TopologyPricer::set_fp8_gemms() {
  const Figure& fp8 = t_.device.peak("fp8");
  if (!fp8.known())
    throw UsageError("topology '" + t_.name + "' has no fp8 peak (" + fp8.note + "): fp8 GEMMs cannot be priced");
  gemm_flops_per_us_ = fp8.get() * 1e6 * t_.model.gemm_efficiency.get();
  cast_bytes_per_gemm_byte_ = 1.5;
}

namespace {
bool is_linear_gemm(OpKind k) {
  switch (k) {
    case OpKind::qkv_gemm:
    case OpKind::q_down_gemm:
    case OpKind::q_up_gemm:
    case OpKind::kv_down_gemm:
    case OpKind::kv_up_gemm:
    case OpKind::out_proj_gemm:
    case OpKind::mlp_up_gemm:
    case OpKind::mlp_down_gemm:
    case OpKind::expert_up_gemm:
    case OpKind::expert_down_gemm:
    case OpKind::shared_up_gemm:
    case OpKind::shared_down_gemm: return true;
    default: return false;  // router and LM head stay in bf16 in TE's recipe
  }
}
}  // namespace

void TopologyPricer::set_node_limited_routing(const models::ModelConfig& model) {
  if (!model.is_moe() || model.route_groups <= 1) return;
  const Placement& ep = placement_[static_cast<int>(Group::ep)];
  ep_network_fraction_ = deduplicated_network_fraction(ep.domains(), model.num_experts, model.top_k, model.route_groups,
                                                       model.route_group_limit);
}

void TopologyPricer::set_tp_comm_overlap(const models::ModelConfig& model, double element_bytes) {
  // bytes = tokens * hidden * element_bytes; GEMM = 2 * tokens * hidden * hidden / tp.
  tp_overlap_flops_per_byte_ = 2.0 * model.hidden / split_.tp / element_bytes;
}

double TopologyPricer::compute_us(double flops, double bytes) const {
  return compute_at_us(flops, bytes, flops_per_us_);
}

double TopologyPricer::compute_at_us(double flops, double bytes, double flops_per_us) const {
  const double roofline = std::max(flops / flops_per_us, bytes / bytes_per_us_);
  return dispatch_overlaps_ ? std::max(roofline, overhead_us_) : roofline + overhead_us_;
}

double TopologyPricer::roofline_us(const Op& op, double flops_per_us) const {
  const models::GemmShape& g = op.gemm;
  if (!tiles_ || g.passes == 0) return std::max(op.flops / flops_per_us, op.bytes / bytes_per_us_);
  // Every pass has the same FLOPs and touches the same three matrices once.
  const int passes = std::popcount(static_cast<unsigned>(g.passes));
  const double flops = op.flops / passes, bytes = op.bytes / passes;
  double us = 0;
  for (auto [pass, rows, cols] : {std::tuple{models::gemm_product, g.rows, g.n},
                                  {models::gemm_input_grad, g.rows, g.k},
                                  {models::gemm_weight_grad, g.k, g.n}}) {
    if (!(g.passes & pass)) continue;
    const double rate = flops_per_us * tile_efficiency(*tiles_, rows, cols, g.groups);
    us += std::max(flops / rate, bytes / bytes_per_us_);
  }
  return us;
}

double TopologyPricer::op_us(const models::StepProgram&, const Op& op) {
  CollOp coll;
  switch (op.kind) {
    case OpKind::tp_all_reduce:
    case OpKind::grad_all_reduce:
    case OpKind::load_all_reduce: coll = CollOp::all_reduce; break;
    case OpKind::sp_all_gather:
    case OpKind::cp_kv_all_gather:
    case OpKind::param_all_gather: coll = CollOp::all_gather; break;
    case OpKind::sp_reduce_scatter:
    case OpKind::cp_kv_reduce_scatter:
    case OpKind::grad_reduce_scatter: coll = CollOp::reduce_scatter; break;
    case OpKind::cp_kv_pass:
    case OpKind::cp_dkv_pass: return p2p_cost(t_, placement_[static_cast<int>(Group::cp)].intra(), op.bytes).time_us;
    case OpKind::ep_dispatch:
    case OpKind::ep_combine:
      if (ep_network_fraction_ >= 0)
        return deduplicated_all_to_all_cost(t_, placement_[static_cast<int>(op.group)], op.bytes, ep_network_fraction_)
            .time_us;
      coll = CollOp::all_to_all;
      break;
    case OpKind::ep_counts: coll = CollOp::all_to_all; break;
    case OpKind::pp_exchange: throw RuntimeError("sim: pp_exchange is priced per half (exchange_half_us)");
    case OpKind::attention_core: {
      const bool backward = op.phase == models::Phase::backward;
      const double rate = backward ? attention_backward_flops_per_us_ : attention_forward_flops_per_us_;
      return compute_at_us(op.flops, op.bytes + (backward ? 2.0 : 1.0) * score_bytes_forward_,
                           rate > 0 ? rate : flops_per_us_);
    }
    case OpKind::attn_norm:
    case OpKind::mlp_norm:
    case OpKind::final_norm:
      if (eager_) return compute_us(op.flops, op.bytes + eager_extra_bytes(*eager_, op));
      [[fallthrough]];
    default: {
      const bool fp8 = gemm_flops_per_us_ != flops_per_us_ && is_linear_gemm(op.kind);
      const double roofline =
          fp8 ? roofline_us(op, gemm_flops_per_us_) + cast_bytes_per_gemm_byte_ * op.bytes / bytes_per_us_
              : roofline_us(op, flops_per_us_);
      return dispatch_overlaps_ ? std::max(roofline, overhead_us_) : roofline + overhead_us_;
    }
  }
  const double comm = collective_cost(t_, coll, placement_[static_cast<int>(op.group)], op.bytes).time_us;
  const bool overlappable = (op.kind == OpKind::sp_all_gather || op.kind == OpKind::sp_reduce_scatter) &&
                            op.group == Group::tp && op.phase != models::Phase::optimizer;
  if (tp_overlap_flops_per_byte_ > 0 && overlappable) {
    const double gemm = tp_overlap_flops_per_byte_ * op.bytes / flops_per_us_;
    return std::max(comm / split_.tp, comm - gemm);
  }
  return comm;
}

double TopologyPricer::exchange_half_us(const models::StepProgram& program, const Op& op, int peer_stage) {
  const long long D = t_.placement_domain(split_.world_size());
  const bool same = (program.stage * stage_stride_) / D == (peer_stage * stage_stride_) / D;
  return p2p_cost(t_, same, op.bytes).time_us;
}

}  // namespace ibt::topo
