#include "models/plan/parallel_split.hpp"

#include <algorithm>
#include <sstream>

#include "core/errors.hpp"

namespace ibt::models {

std::string_view to_string(ScheduleKind k) {
  switch (k) {
    case ScheduleKind::afab: return "afab";
    case ScheduleKind::one_f_one_b: return "1f1b";
    case ScheduleKind::interleaved: return "interleaved";
    case ScheduleKind::zb_h1: return "zb-h1";
    case ScheduleKind::dualpipev: return "dualpipev";
  }
  return "?";
}

std::string_view to_string(CpComm c) { return c == CpComm::ring ? "ring" : "all_gather"; }

CpComm parse_cp_comm(std::string_view name) {
  for (auto c : {CpComm::all_gather, CpComm::ring})
    if (name == to_string(c)) return c;
  throw UsageError("unknown context-parallel communication '" + std::string(name) + "' (expected all_gather or ring)");
}

std::string_view to_string(Recompute r) {
  switch (r) {
    case Recompute::none: return "none";
    case Recompute::selective: return "selective";
    case Recompute::full: return "full";
  }
  return "?";
}

ScheduleKind parse_schedule(std::string_view name) {
  for (auto k : {ScheduleKind::afab, ScheduleKind::one_f_one_b, ScheduleKind::interleaved, ScheduleKind::zb_h1,
                 ScheduleKind::dualpipev})
    if (name == to_string(k)) return k;
  throw UsageError("unknown schedule '" + std::string(name) +
                   "' (expected afab, 1f1b, interleaved, zb-h1 or dualpipev)");
}

Recompute parse_recompute(std::string_view name) {
  for (auto r : {Recompute::none, Recompute::selective, Recompute::full})
    if (name == to_string(r)) return r;
  throw UsageError("unknown recompute '" + std::string(name) + "' (expected none, selective or full)");
}

std::string describe(const ParallelSplit& s) {
  std::ostringstream o;
  o << "dp" << s.dp << " tp" << s.tp << " pp" << s.pp;
  if (s.cp != 1) o << " cp" << s.cp << (s.cp_comm == CpComm::ring ? " ring" : "");
  o << " ep" << s.ep << " vpp" << s.vpp << " m" << s.microbatches << " b" << s.micro_batch_size << " "
    << to_string(s.schedule);
  if (s.sequence_parallel) o << " sp";
  if (s.zero > 0) o << " zero" << s.zero;
  if (s.shard_group > 0) o << " shard" << s.shard_group;
  o << " recompute=" << to_string(s.recompute);
  return o.str();
}

std::string compact_label(const ParallelSplit& s) {
  std::ostringstream o;
  o << "dp" << s.dp;
  if (s.tp != 1) o << " tp" << s.tp;
  if (s.pp != 1) o << " pp" << s.pp;
  if (s.cp != 1) o << " cp" << s.cp << (s.cp_comm == CpComm::ring ? " ring" : "");
  if (s.ep != 1) o << " ep" << s.ep;
  if (s.vpp != 1) o << " vpp" << s.vpp;
  o << " m" << s.microbatches;
  if (s.micro_batch_size != 1) o << " b" << s.micro_batch_size;
  // The schedule a pipeline gets unless told otherwise (1f1b; interleaved with vpp > 1) goes
  // without saying; afab, zb-h1 and dualpipev are named.
  const ScheduleKind implied = s.vpp > 1 ? ScheduleKind::interleaved : ScheduleKind::one_f_one_b;
  if (s.pp > 1 && s.schedule != implied) o << " " << to_string(s.schedule);
  if (s.sequence_parallel) o << " sp";
  if (s.zero > 0) o << " zero" << s.zero;
  if (s.shard_group > 0) o << " shard" << s.shard_group;
  if (s.recompute != Recompute::none) o << " recompute=" << to_string(s.recompute);
  return o.str();
}

std::string strategy_label(const ParallelSplit& s) {
  std::ostringstream o;
  if (s.dp > 1 || s.zero > 0) {  // (zero > 0 at dp 1: sharded over the CP ranks)
    if (s.zero == 3)
      o << (s.shard_group > 0 ? "hsdp" + std::to_string(s.shard_group) : "fsdp");
    else if (s.shard_group > 0)
      o << "hsdp" << s.shard_group << "-zero" << s.zero;
    else if (s.zero > 0)
      o << "zero" << s.zero;
    else
      o << "ddp";
  }
  auto word = [&o](const std::string& w) {
    if (o.tellp() > 0) o << ' ';
    o << w;
  };
  if (s.tp > 1) word("tp" + std::to_string(s.tp) + (s.sequence_parallel ? " sp" : ""));
  if (s.cp > 1) word("cp" + std::to_string(s.cp) + (s.cp_comm == CpComm::ring ? " ring" : ""));
  if (s.pp > 1) word("pp" + std::to_string(s.pp) + (s.vpp > 1 ? " v" + std::to_string(s.vpp) : ""));
  if (s.ep > 1) word("ep" + std::to_string(s.ep));
  if (o.tellp() == 0) o << "single";
  return o.str();
}

namespace {

// "<what> (<a>) not divisible by <by> (<b>)", or empty.
std::string divides(const char* what, long long a, const char* by, long long b) {
  if (b > 0 && a % b == 0) return {};
  std::ostringstream o;
  o << what << " (" << a << ") not divisible by " << by << " (" << b << ")";
  return o.str();
}

std::string first_failure(const ParallelSplit& s, const ModelConfig& m, int world) {
  auto positive = [](const char* name, int v) -> std::string {
    return v >= 1 ? std::string() : std::string(name) + " must be >= 1 (got " + std::to_string(v) + ")";
  };
  for (auto [name, v] : {std::pair{"dp", s.dp},
                         {"tp", s.tp},
                         {"pp", s.pp},
                         {"ep", s.ep},
                         {"cp", s.cp},
                         {"vpp", s.vpp},
                         {"microbatches", s.microbatches},
                         {"micro_batch_size", s.micro_batch_size}})
    if (auto e = positive(name, v); !e.empty()) return e;
  const long long product = static_cast<long long>(s.dp) * s.tp * s.pp * s.cp;
  if (product != world)
    return std::string(s.cp > 1 ? "dp*tp*pp*cp (" : "dp*tp*pp (") + std::to_string(product) + ") != world size (" +
           std::to_string(world) + ")";
  // Tensor parallelism.
  if (auto e = divides("heads", m.heads, "tp", s.tp); !e.empty()) return e;
  // KV heads: split over TP, or, with fewer KV heads than TP ranks, each replicated on
  // tp/kv_heads ranks (model_config.hpp kv_replicas()).
  if (m.attention == Attention::standard && s.tp > m.kv_heads) {
    if (s.tp % m.kv_heads != 0)
      return "tp (" + std::to_string(s.tp) + ") not a multiple of kv_heads (" + std::to_string(m.kv_heads) +
             ") (KV heads are split over TP or replicated on tp/kv_heads ranks each)";
  } else if (auto e = divides("kv_heads", m.kv_heads, "tp", s.tp); !e.empty()) {
    return e;
  }
  if (auto e = divides("ffn_hidden", m.ffn_hidden, "tp", s.tp); !e.empty()) return e;
  if (auto e = divides("vocab", m.vocab, "tp", s.tp); !e.empty()) return e;
  if (m.is_moe())
    if (auto e = divides("expert_ffn_hidden", m.expert_ffn_hidden, "tp", s.tp); !e.empty()) return e;
  if (s.sequence_parallel) {
    if (s.tp == 1) return "sequence_parallel needs tp > 1";
    if (auto e = divides("seq_len", m.seq_len, "tp", s.tp); !e.empty()) return e + " (sequence parallel)";
  }
  // Context parallelism: 2*cp chunks per sequence, paired for causal balance.
  if (s.cp == 1 && s.cp_comm != CpComm::all_gather) return "cp_comm ring needs cp > 1";
  if (s.cp > 1) {
    if (auto e = divides("seq_len", m.seq_len, "2*cp", 2LL * s.cp); !e.empty())
      return e + " (context parallel: 2*cp chunks per sequence)";
    if (s.sequence_parallel)
      if (auto e = divides("seq_len", m.seq_len, "cp*tp", static_cast<long long>(s.cp) * s.tp); !e.empty())
        return e + " (context and sequence parallel)";
  }
  // Pipeline parallelism and schedules.
  if (static_cast<long long>(s.pp) * s.vpp > m.layers)
    return "pp*vpp (" + std::to_string(static_cast<long long>(s.pp) * s.vpp) + ") exceeds layers (" +
           std::to_string(m.layers) + ")";
  switch (s.schedule) {
    case ScheduleKind::afab:
    case ScheduleKind::one_f_one_b:
      if (s.vpp != 1) return std::string("vpp (") + std::to_string(s.vpp) + ") > 1 needs the interleaved schedule";
      if (s.schedule == ScheduleKind::one_f_one_b && s.microbatches < s.pp)
        return "1f1b needs microbatches (" + std::to_string(s.microbatches) + ") >= pp (" + std::to_string(s.pp) + ")";
      break;
    case ScheduleKind::interleaved:
      if (s.pp < 2) return "interleaved schedule needs pp >= 2";
      if (s.vpp < 2) return "interleaved schedule needs vpp >= 2";
      if (auto e = divides("microbatches", s.microbatches, "pp", s.pp); !e.empty())
        return e + " (interleaved schedule)";
      break;
    case ScheduleKind::zb_h1:
      if (s.vpp != 1) return "zb-h1 runs one chunk per stage (vpp " + std::to_string(s.vpp) + " given)";
      if (s.microbatches < s.pp)
        return "zb-h1 needs microbatches (" + std::to_string(s.microbatches) + ") >= pp (" + std::to_string(s.pp) + ")";
      // ZeRO-2/3 reduce-scatter each unit's gradient right after its backward; with W
      // deferred the gradient is not complete there.
      if (s.zero >= 2)
        return "zb-h1 defers weight gradients past the backward; it runs with zero 0 or 1 (zero " +
               std::to_string(s.zero) + " given)";
      break;
    case ScheduleKind::dualpipev:
      if (s.pp < 2) return "dualpipev needs pp >= 2";
      if (s.vpp != 2)
        return "dualpipev runs two chunks per rank in a V (vpp 2; vpp " + std::to_string(s.vpp) + " given)";
      if (s.microbatches < 2 * s.pp)
        return "dualpipev needs microbatches (" + std::to_string(s.microbatches) + ") >= 2 pp (" +
               std::to_string(2 * s.pp) + ")";
      if (s.zero >= 2)
        return "dualpipev defers weight gradients past the backward; it runs with zero 0 or 1 (zero " +
               std::to_string(s.zero) + " given)";
      break;
  }
  // Expert parallelism: EP drawn from DP.
  if (s.ep > 1 && !m.is_moe()) return "ep > 1 needs an MoE model (" + m.name + " is dense)";
  if (auto e = divides("dp", s.dp, "ep", s.ep); !e.empty()) return e + " (EP is drawn from DP)";
  if (m.is_moe())
    if (auto e = divides("num_experts", m.num_experts, "ep", s.ep); !e.empty()) return e;
  // Sharded data parallelism: every stage shards over dp x cp (CP ranks are gradient
  // replicas), HSDP over shard_group x cp.
  if (s.zero < 0 || s.zero > 3) return "zero stage must be 0, 1, 2 or 3 (got " + std::to_string(s.zero) + ")";
  if (s.zero == 1 && s.grad_replicas() == 1) return "zero1 needs dp > 1 (or cp > 1)";
  if (s.zero >= 2 && s.grad_replicas() == 1) return "zero" + std::to_string(s.zero) + " needs dp > 1 (or cp > 1)";
  if (s.shard_group != 0) {
    const std::string g = "shard_group (" + std::to_string(s.shard_group) + ")";
    if (s.zero == 0) return g + " needs a ZeRO stage (zero >= 1): it says over whom states are sharded";
    if (s.shard_group < 2 || s.shard_group >= s.dp)
      return g + " must be > 1 and < dp (" + std::to_string(s.dp) + "); sharding over all of dp is shard_group 0";
    if (auto e = divides("dp", s.dp, "shard_group", s.shard_group); !e.empty()) return e;
    if (auto e = divides("shard_group", s.shard_group, "ep", s.ep); !e.empty())
      return e + " (a shard group holds whole EP groups; expert states shard over its expert_dp ranks)";
  }
  return {};
}

}  // namespace

std::string check(const ParallelSplit& split, const ModelConfig& model, int world_size) {
  return first_failure(split, model, world_size);
}

void validate(const ParallelSplit& split, const ModelConfig& model, int world_size) {
  if (auto e = first_failure(split, model, world_size); !e.empty())
    throw UsageError("split " + describe(split) + " invalid for " + model.name + ": " + e);
}

std::vector<int> divisors(int n) {
  std::vector<int> small, large;
  for (int d = 1; static_cast<long long>(d) * d <= n; ++d)
    if (n % d == 0) {
      small.push_back(d);
      if (d != n / d) large.push_back(n / d);
    }
  small.insert(small.end(), large.rbegin(), large.rend());
  return small;
}

std::vector<ParallelSplit> enumerate_splits(const ModelConfig& model, int world_size, const SplitSearch& q) {
  std::vector<ParallelSplit> out;
  if (world_size < 1) return out;
  const auto within = [](int v, int limit) { return limit <= 0 || v <= limit; };
  for (int pp : divisors(world_size)) {
    if (pp < q.min_pp || !within(pp, q.max_pp) || pp > model.layers) continue;
    for (int tp : divisors(world_size / pp)) {
      if (!within(tp, q.max_tp) || model.heads % tp) continue;
      if (model.kv_heads % tp && (model.attention != Attention::standard || tp % model.kv_heads)) continue;
      for (int cp : divisors(world_size / pp / tp)) {
        if (!within(cp, q.max_cp) || (cp > 1 && model.seq_len % (2LL * cp))) continue;
        const int dp = world_size / pp / tp / cp;
        for (int ep : divisors(dp)) {
          if (!within(ep, q.max_ep) || (ep > 1 && (!model.is_moe() || model.num_experts % ep))) continue;
          // Schedules and their chunk counts.
          std::vector<std::pair<ScheduleKind, int>> scheds;
          for (auto k : q.schedules) {
            if (pp == 1 && k != ScheduleKind::one_f_one_b) continue;
            if (k == ScheduleKind::interleaved)
              for (int v : q.interleave_chunks) scheds.push_back({k, v});
            else if (k == ScheduleKind::dualpipev)
              scheds.push_back({k, 2});
            else
              scheds.push_back({k, 1});
          }
          if (pp == 1 && scheds.empty()) scheds.push_back({ScheduleKind::one_f_one_b, 1});
          std::vector<bool> sps = {false};
          if (tp > 1) {
            if (q.only_sequence_parallel)
              sps = {true};
            else if (q.try_sequence_parallel)
              sps = {false, true};
          }
          // (zero stage, shard group): stage 0 always; ZeRO-1/2/3 when dp*cp > 1 (the
          // states shard over dp x cp); HSDP shard groups with ZeRO-3 only where they
          // properly divide dp (a shard group then spans g x cp ranks).
          std::vector<std::pair<int, int>> zeros = {{0, 0}};
          const bool sharded_ok = q.sharded_with_pp || pp == 1;
          for (int z : q.zero_stages)
            if ((z == 1 && dp * cp > 1) || ((z == 2 || z == 3) && dp * cp > 1 && sharded_ok)) zeros.push_back({z, 0});
          if (dp > 1 && sharded_ok) {  // (groups that split an EP group are refused below)
            std::vector<int> groups = q.shard_groups;
            for (int d : q.shard_domains) {  // the largest shard group (g x cp x tp ranks) inside the domain
              int best = 0;
              for (int g : divisors(dp))
                if (static_cast<long long>(g) * cp * tp <= d) best = g;
              if (best > 1) groups.push_back(best);
            }
            std::sort(groups.begin(), groups.end());
            groups.erase(std::unique(groups.begin(), groups.end()), groups.end());
            for (int g : groups)
              if (g > 1 && g < dp && dp % g == 0) zeros.push_back({3, g});
          }
          // Micro-batch sizes: the listed ones for every split, and for ZeRO-3 also the
          // sharded_micro_batch_sizes (FSDP gathers every unit once per microbatch).
          std::vector<int> all_mbs = q.micro_batch_sizes;
          if (std::any_of(zeros.begin(), zeros.end(), [](auto zg) { return zg.first == 3; }))
            for (int b : q.sharded_micro_batch_sizes)
              if (std::find(all_mbs.begin(), all_mbs.end(), b) == all_mbs.end()) all_mbs.push_back(b);
          for (int mbs : all_mbs) {
            const bool listed =
                std::find(q.micro_batch_sizes.begin(), q.micro_batch_sizes.end(), mbs) != q.micro_batch_sizes.end();
            std::vector<int> ms;
            if (q.global_batch > 0) {
              const long long per = static_cast<long long>(dp) * mbs;
              if (mbs < 1 || q.global_batch % per) continue;
              ms.push_back(static_cast<int>(q.global_batch / per));
            } else {
              ms = q.microbatch_counts;
            }
            for (int m : ms)
              for (auto [kind, v] : scheds)
                for (bool sp : sps)
                  for (auto [z, g] : zeros)
                    for (auto rc : q.recomputes) {
                      if (!listed && z != 3) continue;
                      for (CpComm cc : cp > 1 ? q.cp_comms : std::vector<CpComm>{CpComm::all_gather}) {
                        ParallelSplit s{dp, tp, pp, ep, v, m, mbs, kind, sp, z, rc, cp, cc, g};
                        if (first_failure(s, model, world_size).empty()) out.push_back(s);
                      }
                    }
          }
        }
      }
    }
  }
  return out;
}

}  // namespace ibt::models
