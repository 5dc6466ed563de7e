#include "topologies/hardware/collective_model.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>
#include <mutex>
#include <numeric>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "core/errors.hpp"

namespace ibt::topo {

std::string_view to_string(CollOp op) {
  switch (op) {
    case CollOp::all_reduce: return "all_reduce";
    case CollOp::all_gather: return "all_gather";
    case CollOp::reduce_scatter: return "reduce_scatter";
    case CollOp::all_to_all: return "all_to_all";
    case CollOp::send_recv: return "send_recv";
  }
  return "?";
}

double bus_factor(CollOp op, int n) {
  if (n <= 1) return 1.0;
  switch (op) {
    case CollOp::all_reduce: return 2.0 * (n - 1) / n;
    case CollOp::all_gather:
    case CollOp::reduce_scatter:
    case CollOp::all_to_all: return static_cast<double>(n - 1) / n;
    case CollOp::send_recv: return 1.0;
  }
  return 1.0;
}

namespace {

// Members of the group starting at `first` in each domain it touches: the fewest and
// how many domains.
struct Straddle {
  long long fewest = 0;
  int domains = 0;
};
Straddle straddle(long long first, int n, long long stride, long long D) {
  Straddle s{n, 0};
  for (long long i = 0; i < n;) {
    const long long domain = (first + i * stride) / D;
    const long long last = std::min<long long>(n - 1, ((domain + 1) * D - 1 - first) / stride);
    s.fewest = std::min(s.fewest, last - i + 1);
    ++s.domains;
    i = last + 1;
  }
  return s;
}

}  // namespace

Placement place_group(int n, long long stride, int domain_size, long long world) {
  Placement p;
  p.n = n;
  if (n <= 1) return p;
  long long D = domain_size;
  if (world > 0 && world < D) D = world;  // the job is one (smaller) domain
  if (D % (stride * n) == 0) {
    p.per_domain = n;  // whole group inside each domain
  } else if (stride % D == 0 || stride >= D) {
    p.per_domain = 1;  // consecutive members are a domain or more apart
  } else if (D % stride == 0 && (stride * n) % D == 0) {
    p.per_domain = static_cast<int>(D / stride);
  } else {
    // Uneven: searches place the same groups for thousands of splits; each shape is
    // examined once per process.
    using Key = std::tuple<int, long long, long long, long long>;
    static std::mutex mutex;
    static std::map<Key, Placement> known;
    const Key key{n, stride, D, world};
    {
      std::lock_guard<std::mutex> lock(mutex);
      const auto it = known.find(key);
      if (it != known.end()) return it->second;
    }
    // The groups start at a + stride*n*b (a < stride); which members share a
    // domain depends on first mod D only, so each residue is examined once. Past
    // a = D the residues of a - D come again, each from a later first (skipped by the
    // world test if a - D was): a < D examines them all.
    const long long span = stride * n;
    const long long period = D / std::gcd(span, D);  // span * b mod D repeats after this
    const long long groups = world > 0 ? std::min(period, std::max<long long>(1, world / span)) : period;
    std::vector<char> seen(static_cast<size_t>(D), 0);
    Straddle worst{n, 1};
    for (long long b = 0; b < groups; ++b) {
      for (long long a = 0; a < std::min(stride, D); ++a) {
        const long long first = a + span * b;
        if (world > 0 && first + (n - 1) * stride >= world) continue;
        char& mark = seen[static_cast<size_t>(first % D)];
        if (mark) continue;
        mark = 1;
        const Straddle s = straddle(first, n, stride, D);
        if (s.fewest < worst.fewest || (s.fewest == worst.fewest && s.domains > worst.domains)) worst = s;
      }
    }
    p.per_domain = static_cast<int>(worst.fewest);
    p.spanned = worst.fewest >= n ? 0 : worst.domains;
    std::lock_guard<std::mutex> lock(mutex);
    known.emplace(key, p);
  }
  return p;
}

namespace {

struct Link {
  double bw_GBps = 0;  // effective, per device, unidirectional
  double hop_us = 0;
};

double transfer_us(double bytes, double bw_GBps) { return bytes / (bw_GBps * 1e3); }

double launch(const Topology& t) { return t.model.collective_launch_us.get(); }

// Axes a torus group spans.
int torus_axes(const Torus& torus, int n) {
  const double axis = torus.axis_chips.get();
  if (n <= axis) return 1;
  if (n <= axis * axis) return 2;
  return 3;
}

Link up_link(const Topology& t, int n) {
  Link l;
  l.hop_us = t.scale_up.latency_us.get();
  double bw = t.scale_up.bandwidth_GBps.get();
  if (t.scale_up.torus) {
    const int axes = torus_axes(*t.scale_up.torus, n);
    bw = std::min(bw, 2.0 * axes * t.scale_up.torus->link_bandwidth_GBps.get());
  }
  l.bw_GBps = bw * t.model.scale_up_efficiency.get();
  return l;
}

[[noreturn, gnu::cold]] void no_scale_out(const Topology& t, const std::string& what) {
  throw UsageError("topology '" + t.name + "' has no scale_out figures (scale_out.bandwidth_GBps, " +
                   "scale_out.latency_us): " + what + " spans more than one scale-up domain of " +
                   std::to_string(t.domain_size()) +
                   " devices and cannot be priced (a topology calibrated on one node knows only its "
                   "scale-up fabric: calibrate from a multi-node collectives run, or use fewer devices)");
}

// The scale-out link. op and n name the operation for the error ("all_reduce over 4
// devices"; no op: a pipeline send/recv), which is worded only when it is thrown: a
// search prices 10^7 collectives.
Link out_link(const Topology& t, std::string_view op, int n) {
  if (!t.scale_out.present)
    no_scale_out(t, op.empty() ? std::string("a pipeline send/recv between two devices")
                               : std::string(op) + " over " + std::to_string(n) + " devices");
  return {t.scale_out.bandwidth_GBps.get() * t.model.scale_out_efficiency.get(), t.scale_out.latency_us.get()};
}

// Latency steps of a ring all-reduce over n members (torus: per-axis rings).
double ring_steps_all_reduce(const Topology& t, int n, bool on_scale_up) {
  if (on_scale_up && t.scale_up.torus) {
    const int axes = torus_axes(*t.scale_up.torus, n);
    return 2.0 * axes * (std::pow(static_cast<double>(n), 1.0 / axes) - 1.0);
  }
  return 2.0 * (n - 1);
}

// One fabric, every member on it (intra or inter groups).
CollectiveCost single_fabric(const Topology& t, CollOp op, int n, double S, const Fabric& f, const Link& l,
                             bool on_scale_up) {
  const double L = launch(t);
  CollectiveCost best{std::numeric_limits<double>::infinity(), "ring"};
  auto consider = [&](double us, const char* name) {
    if (us < best.time_us) best = {us, name};
  };
  switch (op) {
    case CollOp::all_reduce: {
      const double bw_term = bus_factor(op, n) * transfer_us(S, l.bw_GBps);
      consider(L + ring_steps_all_reduce(t, n, on_scale_up) * l.hop_us + bw_term, "ring");
      if (f.offers(Algorithm::tree)) consider(L + 2.0 * std::ceil(std::log2(n)) * l.hop_us + bw_term, "tree");
      if (f.offers(Algorithm::nvls) && on_scale_up) consider(L + 2.0 * l.hop_us + transfer_us(S, l.bw_GBps), "nvls");
      if (f.offers(Algorithm::sharp) && !on_scale_up) consider(L + 2.0 * l.hop_us + transfer_us(S, l.bw_GBps), "sharp");
      break;
    }
    case CollOp::all_gather:
    case CollOp::reduce_scatter: {
      const double steps = ring_steps_all_reduce(t, n, on_scale_up) / 2.0;
      consider(L + steps * l.hop_us + bus_factor(op, n) * transfer_us(S, l.bw_GBps), "ring");
      break;
    }
    case CollOp::all_to_all: consider(L + l.hop_us + bus_factor(op, n) * transfer_us(S, l.bw_GBps), "direct"); break;
    case CollOp::send_recv: consider(L + l.hop_us + transfer_us(S, l.bw_GBps), "direct"); break;
  }
  return best;
}

// A group spanning d domains with k members each.
CollectiveCost spanning(const Topology& t, CollOp op, const Placement& p, double S) {
  const int n = p.n, k = p.per_domain, d = p.domains();
  const Link up = up_link(t, k), out = out_link(t, to_string(op), n);
  const double L = launch(t);
  const double flat_bw = std::min(up.bw_GBps, k * out.bw_GBps);
  CollectiveCost best{std::numeric_limits<double>::infinity(), "ring"};
  auto consider = [&](double us, const char* name) {
    if (us < best.time_us) best = {us, name};
  };
  switch (op) {
    case CollOp::all_reduce: {
      const double bw_term = bus_factor(op, n) * transfer_us(S, flat_bw);
      // NCCL's ring: 2(d-1) of the 2(n-1) steps cross the network.
      consider(L + 2.0 * (n - d) * up.hop_us + 2.0 * (d - 1) * out.hop_us + bw_term, "ring");
      if (t.scale_out.offers(Algorithm::tree))
        consider(L + 2.0 * ((k - 1) * up.hop_us + std::ceil(std::log2(d)) * out.hop_us) + bw_term, "tree");
      const double hier = single_fabric(t, CollOp::reduce_scatter, k, S, t.scale_up, up, true).time_us +
                          single_fabric(t, CollOp::all_reduce, d, S / k, t.scale_out, out, false).time_us +
                          single_fabric(t, CollOp::all_gather, k, S, t.scale_up, up, true).time_us;
      consider(hier, "hierarchical");
      break;
    }
    case CollOp::all_gather:
    case CollOp::reduce_scatter:
      consider(L + (n - d) * up.hop_us + (d - 1) * out.hop_us + bus_factor(op, n) * transfer_us(S, flat_bw), "ring");
      break;
    case CollOp::all_to_all:
      consider(L + out.hop_us +
                   std::max((k - 1.0) / n * transfer_us(S, up.bw_GBps),
                            static_cast<double>(n - k) / n * transfer_us(S, out.bw_GBps)),
               "direct");
      break;
    case CollOp::send_recv: consider(L + out.hop_us + transfer_us(S, out.bw_GBps), "direct"); break;
  }
  return best;
}

// Steps of the ring algorithm, for rescaling a fit to another group size.
double latency_steps(CollOp op, int n) {
  switch (op) {
    case CollOp::all_reduce: return 2.0 * (n - 1);
    case CollOp::all_gather:
    case CollOp::reduce_scatter: return n - 1.0;
    default: return 1.0;
  }
}

const CollectiveFit* nearest_fit(const Topology& t, CollOp op, const char* scope, int n) {
  const CollectiveFit* best = nullptr;
  for (const auto& f : t.fits) {
    if (f.op != to_string(op) || f.scope != scope) continue;
    if (!best || std::abs(f.group_size - n) < std::abs(best->group_size - n)) best = &f;
  }
  return best;
}

std::optional<double> fitted_us(const Topology& t, CollOp op, const char* scope, int n, double S) {
  const CollectiveFit* f = nearest_fit(t, op, scope, n);
  if (!f) return std::nullopt;
  const int m = f->group_size;
  const double lat = f->alpha_us * (m == n ? 1.0 : latency_steps(op, n) / latency_steps(op, m));
  const double bw_scale = m == n ? 1.0 : bus_factor(op, n) / bus_factor(op, m);
  return lat + bw_scale * S / (f->algbw_GBps * 1e3);
}

}  // namespace

bool prices_across_domains(const Topology& t) {
  return t.scale_out.present ||
         std::any_of(t.fits.begin(), t.fits.end(), [](const CollectiveFit& f) { return f.scope == "inter"; });
}

CollectiveCost collective_cost(const Topology& t, CollOp op, const Placement& p, double bytes) {
  if (p.n <= 1 || bytes <= 0) return {0.0, "none"};
  const char* scope = p.intra() ? "intra" : p.inter() ? "inter" : nullptr;
  if (scope && !t.fits.empty())
    if (auto us = fitted_us(t, op, scope, p.n, bytes)) return {*us, "fit"};
  if (p.intra()) return single_fabric(t, op, p.n, bytes, t.scale_up, up_link(t, p.n), true);
  if (p.inter()) return single_fabric(t, op, p.n, bytes, t.scale_out, out_link(t, to_string(op), p.n), false);
  return spanning(t, op, p, bytes);
}

CollectiveCost deduplicated_all_to_all_cost(const Topology& t, const Placement& p, double bytes,
                                            double network_fraction) {
  if (p.n <= 1 || bytes <= 0) return {0.0, "none"};
  if (p.intra() || !t.fits.empty()) return collective_cost(t, CollOp::all_to_all, p, bytes);
  const int k = p.per_domain;
  const Link up = up_link(t, k), out = out_link(t, to_string(CollOp::all_to_all), p.n);
  const double up_us = k > 1 ? (k - 1.0) / k * transfer_us(bytes, up.bw_GBps) : 0.0;
  return {launch(t) + out.hop_us + std::max(up_us, network_fraction * transfer_us(bytes, out.bw_GBps)), "deduplicated"};
}

namespace {
// P(none of `hits` draws without replacement from `total` falls among `marked`).
double none_drawn(int total, int marked, int hits) {
  double p = 1.0;
  for (int i = 0; i < hits; ++i) {
    if (total - marked - i <= 0) return 0.0;
    p *= static_cast<double>(total - marked - i) / (total - i);
  }
  return p;
}
}  // namespace

double deduplicated_network_fraction(int domains, int num_experts, int top_k, int route_groups, int route_group_limit) {
  if (domains <= 1 || top_k <= 0) return 0.0;
  const bool grouped = route_groups > 1 && route_group_limit > 0 && route_groups % domains == 0;
  const double reached = grouped ? 1.0 - none_drawn(route_groups, route_groups / domains, route_group_limit)
                                 : 1.0 - none_drawn(num_experts, num_experts / domains, top_k);
  return (domains - 1) * reached / top_k;
}

CollectiveCost p2p_cost(const Topology& t, bool same_domain, double bytes) {
  if (bytes <= 0) return {0.0, "none"};
  const char* scope = same_domain ? "intra" : "inter";
  if (!t.fits.empty())
    if (auto us = fitted_us(t, CollOp::send_recv, scope, 2, bytes)) return {*us, "fit"};
  const Link l = same_domain ? up_link(t, 2) : out_link(t, {}, 2);
  return {launch(t) + l.hop_us + transfer_us(bytes, l.bw_GBps), "direct"};
}

}  // namespace ibt::topo
