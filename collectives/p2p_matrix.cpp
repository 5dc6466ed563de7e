#include "collectives/p2p_matrix.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <numeric>

#include "core/errors.hpp"
#include "core/stats.hpp"

namespace ibt {

std::vector<std::vector<std::pair<int, int>>> round_robin_rounds(int units) {
  if (units < 2) return {};
  // Circle method: with an even count m, unit 0 stays put and the others rotate one place
  // per round; position i meets position m-1-i. An odd count gets a phantom unit whose
  // partner rests that round.
  const int m = units % 2 == 0 ? units : units + 1;
  std::vector<int> circle(m);
  std::iota(circle.begin(), circle.end(), 0);
  std::vector<std::vector<std::pair<int, int>>> rounds;
  for (int r = 0; r < m - 1; ++r) {
    std::vector<std::pair<int, int>> pairs;
    for (int i = 0; i < m / 2; ++i) {
      const int a = circle[i], b = circle[m - 1 - i];
      if (a >= units || b >= units) continue;  // the phantom: a rest
      pairs.emplace_back(std::min(a, b), std::max(a, b));
    }
    std::sort(pairs.begin(), pairs.end());
    rounds.push_back(std::move(pairs));
    std::rotate(circle.begin() + 1, circle.end() - 1, circle.end());
  }
  return rounds;
}

namespace {

constexpr int kTag = 7100;

unsigned char pattern_byte(int seed, std::size_t i) {
  return static_cast<unsigned char>((seed * 131 + i * 7 + 1) & 0xff);
}

// world rank of (unit, local index): ranks when units are ranks, the rail-aligned member
// of the domain otherwise.
struct UnitMap {
  int units = 0;
  bool by_domain = false;
  std::vector<std::vector<int>> ranks_of_domain;  // [domain][local] -> world rank
  int my_unit = 0, my_local = 0;
  int rank(int unit) const { return by_domain ? ranks_of_domain.at(unit).at(my_local) : unit; }
};

UnitMap make_unit_map(MPI_Comm world, const DomainLayout& layout, bool by_domain) {
  UnitMap map;
  map.by_domain = by_domain;
  if (!by_domain) {
    map.units = layout.world_size;
    map.my_unit = layout.world_rank;
    return map;
  }
  if (layout.num_domains < 2)
    throw UsageError("--domains needs at least 2 domains (the job has " + std::to_string(layout.num_domains) +
                     ", found by " + layout.method + "; try --domain-size)");
  if (!layout.uniform()) throw UsageError("--domains needs domains of equal size (rail-aligned pairs)");
  std::vector<int> mine{layout.domain, layout.local_rank}, all(2 * layout.world_size);
  MPI_Allgather(mine.data(), 2, MPI_INT, all.data(), 2, MPI_INT, world);
  map.units = layout.num_domains;
  map.ranks_of_domain.assign(layout.num_domains, std::vector<int>(layout.local_size(), -1));
  for (int r = 0; r < layout.world_size; ++r) map.ranks_of_domain[all[2 * r]][all[2 * r + 1]] = r;
  map.my_unit = layout.domain;
  map.my_local = layout.local_rank;
  return map;
}

struct PairTiming {
  double mean_us = 0, p50_us = 0, p99_us = 0;
  std::uint64_t wrong = 0;  // bytes this rank received wrong in the checking pass
};

void busy_delay(double us) {
  const double until = MPI_Wtime() + us * 1e-6;
  while (MPI_Wtime() < until) {
  }
}

PairTiming ping_pong(MPI_Comm comm, int partner, bool initiator, std::size_t bytes, const P2pOptions& opt, bool delayed,
                     std::vector<unsigned char>& buffer) {
  PairTiming t;
  const int count = static_cast<int>(bytes);
  unsigned char* data = buffer.data();
  auto exchange = [&] {
    if (initiator) {
      if (delayed) busy_delay(opt.delay_us);
      MPI_Send(data, count, MPI_BYTE, partner, kTag, comm);
      MPI_Recv(data, count, MPI_BYTE, partner, kTag, comm, MPI_STATUS_IGNORE);
    } else {
      MPI_Recv(data, count, MPI_BYTE, partner, kTag, comm, MPI_STATUS_IGNORE);
      if (delayed) busy_delay(opt.delay_us);
      MPI_Send(data, count, MPI_BYTE, partner, kTag, comm);
    }
  };
  for (int i = 0; i < opt.warmup_iters; ++i) exchange();
  std::vector<double> half_round_trip_us(opt.iters);
  for (int i = 0; i < opt.iters; ++i) {
    const double start = MPI_Wtime();
    exchange();
    half_round_trip_us[i] = (MPI_Wtime() - start) * 1e6 / 2;
  }
  t.mean_us = mean(half_round_trip_us);
  t.p50_us = quantile(half_round_trip_us, 0.5);
  t.p99_us = quantile(half_round_trip_us, 0.99);
  if (!opt.check) return t;
  // Untimed check: each side sends its own pattern; the receiver compares every byte.
  const int my_seed = initiator ? 1 : 2, their_seed = initiator ? 2 : 1;
  auto count_wrong = [&] {
    std::uint64_t wrong = 0;
    for (std::size_t i = 0; i < bytes; ++i) wrong += data[i] != pattern_byte(their_seed, i);
    return wrong;
  };
  auto fill = [&] {
    for (std::size_t i = 0; i < bytes; ++i) data[i] = pattern_byte(my_seed, i);
  };
  if (initiator) {
    fill();
    MPI_Send(data, count, MPI_BYTE, partner, kTag + 1, comm);
    std::fill(buffer.begin(), buffer.begin() + bytes, 0);
    MPI_Recv(data, count, MPI_BYTE, partner, kTag + 1, comm, MPI_STATUS_IGNORE);
    t.wrong = count_wrong();
  } else {
    std::fill(buffer.begin(), buffer.begin() + bytes, 0);
    MPI_Recv(data, count, MPI_BYTE, partner, kTag + 1, comm, MPI_STATUS_IGNORE);
    t.wrong = count_wrong();
    fill();
    MPI_Send(data, count, MPI_BYTE, partner, kTag + 1, comm);
  }
  return t;
}

std::string describe_step(int round, const std::vector<std::pair<int, int>>& pairs, bool by_domain) {
  std::string text = "p2p-matrix round " + std::to_string(round) + " (" + (by_domain ? "domains " : "ranks ");
  for (std::size_t i = 0; i < pairs.size() && i < 8; ++i)
    text += (i ? ", " : "") + std::to_string(pairs[i].first) + "<->" + std::to_string(pairs[i].second);
  if (pairs.size() > 8) text += ", ...";
  return text + ")";
}

}  // namespace

void run_p2p_matrix(MPI_Comm world, const DomainLayout& layout, const P2pOptions& opt, ArrivalGate& gate,
                    Watchdog* watchdog, const P2pEvents& events) {
  if (opt.sizes.empty()) throw UsageError("p2p-matrix: no message sizes");
  if (opt.iters < 1) throw UsageError("--iters must be positive");
  const UnitMap map = make_unit_map(world, layout, opt.by_domain);
  if (map.units < 2) throw UsageError("p2p-matrix needs at least 2 ranks (the job has 1)");
  const auto max_size = *std::max_element(opt.sizes.begin(), opt.sizes.end());
  if (max_size > static_cast<std::size_t>(std::numeric_limits<int>::max()))
    throw UsageError("p2p-matrix: message sizes above 2 GiB - 1 are not supported");

  MPI_Comm comm;
  MPI_Comm_dup(world, &comm);
  std::vector<unsigned char> buffer(max_size);

  // A step is what runs at once: a whole round, or one pair of it when not concurrent.
  struct Step {
    int round;
    std::vector<std::pair<int, int>> pairs;
  };
  std::vector<Step> steps;
  const auto rounds = round_robin_rounds(map.units);
  for (std::size_t r = 0; r < rounds.size(); ++r) {
    if (opt.concurrent)
      steps.push_back({static_cast<int>(r), rounds[r]});
    else
      for (const auto& p : rounds[r]) steps.push_back({static_cast<int>(r), {p}});
  }

  const std::size_t n = opt.sizes.size();
  constexpr std::size_t record = 6;  // role, partner, mean, p50, p99, wrong (of one size)
  std::vector<double> gathered(layout.world_rank == 0 ? record * layout.world_size : 0);
  for (const Step& step : steps) {
    const std::string what = describe_step(step.round, step.pairs, opt.by_domain);
    if (layout.world_rank == 0 && events.on_round)
      events.on_round(step.round, static_cast<int>(rounds.size()), step.pairs.size());
    gate.pass(what, opt.timeout_seconds);
    WatchdogScope guard(watchdog, opt.timeout_seconds, what);
    // A rank takes part in at most one pair of a step.
    int partner = -1;
    bool initiator = false;
    for (const auto& [a, b] : step.pairs) {
      if (map.my_unit != a && map.my_unit != b) continue;
      initiator = map.my_unit == a;
      partner = map.rank(initiator ? b : a);
    }
    // Gathered per size, so each size's rows reach rank 0 (and the results file) as
    // soon as they are measured: an interruption loses at most the size in flight.
    for (std::size_t s = 0; s < n; ++s) {
      double mine[record] = {partner < 0 ? 0.0 : initiator ? 1.0 : 2.0, static_cast<double>(partner), 0, 0, 0, 0};
      if (partner >= 0) {
        const PairTiming t =
            ping_pong(comm, partner, initiator, opt.sizes[s], opt, layout.world_rank == opt.delay_rank, buffer);
        mine[2] = t.mean_us;
        mine[3] = t.p50_us;
        mine[4] = t.p99_us;
        mine[5] = static_cast<double>(t.wrong);
      }
      MPI_Gather(mine, static_cast<int>(record), MPI_DOUBLE, gathered.data(), static_cast<int>(record), MPI_DOUBLE, 0,
                 world);
      if (layout.world_rank != 0) continue;
      const auto unit_of = [&](int rank) {
        if (!opt.by_domain) return rank;
        for (int d = 0; d < map.units; ++d)
          for (int r : map.ranks_of_domain[d])
            if (r == rank) return d;
        return -1;
      };
      for (int r = 0; r < layout.world_size; ++r) {
        const double* rec = &gathered[record * r];
        if (rec[0] != 1) continue;
        const int other_rank = static_cast<int>(rec[1]);
        const double* other = &gathered[record * other_rank];
        P2pResult res;
        res.round = step.round;
        res.rank_a = r;
        res.rank_b = other_rank;
        res.unit_a = unit_of(r);
        res.unit_b = unit_of(other_rank);
        res.bytes = opt.sizes[s];
        res.iters = opt.iters;
        res.time_us = rec[2];
        res.p50_us = rec[3];
        res.p99_us = rec[4];
        res.bandwidth_GBps = res.time_us > 0 ? res.bytes / (res.time_us * 1e3) : 0;
        res.wrong = static_cast<std::uint64_t>(rec[5] + other[5]);
        if (events.on_result) events.on_result(res);
      }
    }
  }
  MPI_Comm_free(&comm);
}

namespace {

double median_of(std::vector<double> v) { return v.empty() ? 0.0 : quantile(std::move(v), 0.5); }

}  // namespace

std::vector<P2pOutlier> find_p2p_outliers(const std::vector<P2pResult>& results, double threshold,
                                          std::size_t bandwidth_min_bytes) {
  std::map<std::size_t, std::vector<const P2pResult*>> by_size;
  for (const auto& r : results) by_size[r.bytes].push_back(&r);
  std::vector<P2pOutlier> out;
  for (const auto& [bytes, rows] : by_size) {
    const bool bandwidth = bytes >= bandwidth_min_bytes;
    const auto value = [&](const P2pResult& r) { return bandwidth ? r.bandwidth_GBps : r.time_us; };
    // Bandwidth is bad when low, latency when high.
    const auto slow = [&](double v, double median) {
      return bandwidth ? v < median * (1 - threshold) : v > median * (1 + threshold);
    };
    const char* metric = bandwidth ? "bandwidth" : "latency";
    std::vector<double> values;
    std::map<int, std::vector<double>> per_rank;
    for (const auto* r : rows) {
      values.push_back(value(*r));
      per_rank[r->rank_a].push_back(value(*r));
      per_rank[r->rank_b].push_back(value(*r));
    }
    const double median = median_of(values);
    for (const auto* r : rows)
      if (median > 0 && slow(value(*r), median))
        out.push_back({"pair", metric, bytes, r->rank_a, r->rank_b, value(*r), median, value(*r) / median});
    // A rank with a bad NIC makes every one of its pairs slow, so its own median moves.
    std::vector<double> rank_medians;
    for (const auto& [rank, v] : per_rank) rank_medians.push_back(median_of(v));
    const double median_of_ranks = median_of(rank_medians);
    for (const auto& [rank, v] : per_rank) {
      const double m = median_of(v);
      if (median_of_ranks > 0 && slow(m, median_of_ranks))
        out.push_back({"rank", metric, bytes, rank, -1, m, median_of_ranks, m / median_of_ranks});
    }
  }
  return out;
}

}  // namespace ibt
