#pragma once
// Alpha-beta cost models of collectives on a topology (the sim communicator).
//
// A group of n devices with k of them in each scale-up domain (d = n/k domains):
//   k == n  intra: only scale-up links;
//   k == 1  inter: one device per domain, every step crosses the network
//           (rail-aligned: each device drives its own NIC);
//   else    spans domains: flat ring, whose network hops are shared by the k devices of
//           a domain (per-device bandwidth min(B_up, k * B_out), NCCL's multi-NIC
//           rings), or hierarchical (intra reduce-scatter, inter all-reduce of 1/k of
//           the buffer, intra all-gather) -- the cheaper one, as NCCL's tuner picks.
// Per algorithm, `bytes` as nccl-tests counts them (S), B the per-device
// unidirectional bandwidth times the fabric's efficiency, a the per-step latency, L
// the fixed launch cost:
//   ring all-reduce         L + 2(n-1) a + 2(n-1)/n * S/B
//   tree all-reduce         L + 2 log2(n) a + 2(n-1)/n * S/B
//   nvls / sharp all-reduce L + 2 a + S/B   (the switch reduces: each device sends
//                                            and receives S once; ideal, stated)
//   all-gather, reduce-scatter (ring)  L + (n-1) a + (n-1)/n * S/B
//   all-to-all              L + a + max((k-1)/n * S/B_up, (n-k)/n * S/B_out)
//   send/recv               L + a + S/B of the link between the two devices
// so that busbw (nccl-tests' factors) tends to B for large S. A torus scale-up (TPU)
// runs rings along the axes the group spans (1 if n <= axis, 2 if n <= axis^2, else
// 3), 2 links per axis: B_up = min(2 * axes * link bandwidth, chip bandwidth), with
// 2 * axes * (n^(1/axes) - 1) latency steps for an all-reduce.
//
// Calibrated topologies carry fits (time = alpha + S/algbw per op, scope and group
// size); where a fit exists for the op and scope it replaces the analytic model (the
// nearest fitted group size, its latency and bandwidth terms rescaled by the ring step
// counts and nccl-tests factors of the two sizes).
#include <string_view>

#include "topologies/hardware/topology.hpp"

namespace ibt::topo {

enum class CollOp { all_reduce, all_gather, reduce_scatter, all_to_all, send_recv };
std::string_view to_string(CollOp op);
// nccl-tests' busbw factor for a group of n.
double bus_factor(CollOp op, int n);

struct Placement {
  int n = 1;           // devices in the group
  int per_domain = 1;  // of which in one scale-up domain (k; the fewest, if uneven)
  int spanned = 0;     // domains the group touches (0: n / per_domain, the even case)
  bool intra() const { return per_domain >= n; }
  bool inter() const { return per_domain <= 1 && n > 1; }
  int domains() const { return spanned > 0 ? spanned : (n + per_domain - 1) / per_domain; }
};

// Where the groups {first + i*stride, i < n} of a job of `world` devices fall with
// `domain_size` consecutive ranks per domain (world 0: a job of many domains). A job
// smaller than one domain is one domain of its own size (a 4,096-chip TPU slice). A
// group that does not tile the domains (DP64 on 72-GPU NVL72 racks) straddles a
// boundary: it is priced by the links it really uses -- its members inside one domain
// talk over the scale-up fabric, and only the crossings use the network, through the
// NICs of the members on each side. All groups of a kind run at once and the step
// waits for the slowest, so the placement is that of the worst group: the fewest
// members in one domain (the fewest NICs carrying the crossing) and the most domains.
Placement place_group(int n, long long stride, int domain_size, long long world = 0);

struct CollectiveCost {
  double time_us = 0;
  const char* algorithm = "none";  // ring, tree, nvls, sharp, hierarchical, fit, direct, deduplicated
};

// Whether the topology can price any message between its scale-up domains: it has
// scale-out figures, or calibrated fits between domains (scope "inter"). Without either,
// a job of more than one domain cannot be priced at all.
bool prices_across_domains(const Topology& t);
// Throws UsageError when the group spans domains and the topology has no scale-out.
CollectiveCost collective_cost(const Topology& t, CollOp op, const Placement& p, double bytes);
// A point-to-point message between two devices, inside one domain or across.
CollectiveCost p2p_cost(const Topology& t, bool same_domain, double bytes);

// An expert all-to-all (bytes S: a rank's top_k copies of its tokens) whose dispatcher
// sends each token ONCE per remote domain it reaches, to the device of the same index
// there, which forwards the copies over the scale-up links (DeepSeek-V3's all-to-all,
// arXiv:2412.19437 section 3.2.2; DeepEP's internode kernels and HybridEP, the
// dispatchers of Megatron-Core's DeepSeek-V3 recipes): network_fraction of S crosses
// the network, and the copies for other devices of a domain cross its scale-up links
// once ((k - 1)/k of S),
//     L + hop_out + max((k - 1)/k x S / bw_up, network_fraction x S / bw_out)
// A group inside one domain, and a calibrated topology (which prices the all-to-all it
// measured), get collective_cost.
CollectiveCost deduplicated_all_to_all_cost(const Topology& t, const Placement& p, double bytes,
                                            double network_fraction);
// The expected fraction of a token's top_k copies that such a dispatcher sends over the
// network, on a group spread over `domains` equal domains: one copy per remote domain
// among those the token's experts lie in. With node-limited routing (route_groups groups
// of experts, at most route_group_limit of them per token; groups whole in a domain)
// a domain is reached when one of its groups is chosen, otherwise when one of its
// experts is (top_k of num_experts, uniformly: the balanced routing both recipes
// force or train towards):
//     (domains - 1) x P(a given domain is reached) / top_k
double deduplicated_network_fraction(int domains, int num_experts, int top_k, int route_groups, int route_group_limit);

}  // namespace ibt::topo
