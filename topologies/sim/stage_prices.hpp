#pragma once
// Prices the ops of one pipeline stage, each distinct op once: a step's ops repeat the
// same few dozen shapes over every layer and microbatch, and pricing one (GEMM tile
// efficiency, collective fits) costs far more than looking it up. What an op costs
// depends on its kind, phase, group, stream, FLOPs, bytes and GEMM shape, and, through
// the group's placement, on its stage: the memo is per stage (OpPricer's contract:
// sim_executor.hpp). Used by the fast walk's templates (stage_walk.cpp) and by
// simulate() on full step programs.
#include <bit>
#include <cstdint>
#include <tuple>
#include <vector>

#include "models/plan/step_program.hpp"
#include "topologies/sim/sim_executor.hpp"

namespace ibt::topo {

// What an op's price depends on: its kind, phase, group, stream, FLOPs, bytes and
// GEMM shape (the shape tells a split backward's B from its W: same FLOPs and bytes).
using OpPriceKey =
    std::tuple<models::OpKind, models::Phase, models::Group, models::Stream, double, double, models::GemmShape>;
inline OpPriceKey price_key(const models::Op& op) {
  return {op.kind, op.phase, op.group, op.stream, op.flops, op.bytes, op.gemm};
}
// Hashed, not ordered: a template has hundreds of ops and a few dozen distinct ones. The
// doubles by their bits (std::hash<double> hashes their bytes, a search's most frequent
// call while it prices templates); +0 and -0, equal keys, hash alike.
struct OpPriceKeyHash {
  static size_t bits(double v) { return v == 0 ? 0 : std::bit_cast<std::uint64_t>(v); }
  size_t operator()(const OpPriceKey& k) const {
    const auto mix = [](size_t h, size_t v) { return h ^ (v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2)); };
    size_t h = static_cast<size_t>(std::get<0>(k));
    h = mix(h, static_cast<size_t>(std::get<1>(k)));
    h = mix(h, static_cast<size_t>(std::get<2>(k)));
    h = mix(h, static_cast<size_t>(std::get<3>(k)));
    h = mix(h, bits(std::get<4>(k)) * 0x9e3779b97f4a7c15ULL);
    h = mix(h, bits(std::get<5>(k)) * 0xc2b2ae3d27d4eb4fULL);
    // The shape's passes tell B from W; its dimensions follow from the FLOPs and bytes
    // in practice, so they are compared (equality) but not hashed.
    const models::GemmShape& g = std::get<6>(k);
    return mix(h, static_cast<size_t>(g.passes) | static_cast<size_t>(g.groups) << 8);
  }
};

// A template's ops grouped by their price key: the distinct ones, and each op's. Found
// once for a template that several pricers price (a crossover row's fabrics), so each
// looks up its few distinct ops instead of all of them.
struct OpClasses {
  std::vector<models::Op> distinct;
  std::vector<int> of;  // [op]: its index in distinct
};
inline OpClasses op_classes(const std::vector<models::Op>& ops) {
  OpClasses out;
  out.of.reserve(ops.size());
  // An open-addressed table of (hash, distinct index), kept per thread: a search
  // classifies 10^5 templates, and a node-based map's allocations cost more than the
  // lookups they save.
  struct Seen {
    size_t hash = 0;
    int distinct = -1;
  };
  thread_local std::vector<Seen> table;
  size_t size = 64;
  while (size < 2 * ops.size()) size *= 2;
  table.assign(size, Seen{});
  const size_t mask = size - 1;
  std::vector<OpPriceKey> keys;  // of the distinct ops
  for (const models::Op& op : ops) {
    const OpPriceKey key = price_key(op);
    const size_t hash = OpPriceKeyHash{}(key);
    size_t j = hash & mask;
    while (table[j].distinct >= 0 && !(table[j].hash == hash && keys[table[j].distinct] == key)) j = (j + 1) & mask;
    if (table[j].distinct < 0) {
      table[j] = Seen{hash, static_cast<int>(out.distinct.size())};
      out.distinct.push_back(op);
      keys.push_back(key);
    }
    out.of.push_back(table[j].distinct);
  }
  return out;
}

class StagePrices {
 public:
  StagePrices(OpPricer& pricer, int stage) : pricer_(pricer) { stub_.stage = stage; }
  // Each op's price, in order.
  std::vector<double> operator()(const std::vector<models::Op>& ops) {
    std::vector<double> dur(ops.size());
    for (size_t i = 0; i < ops.size(); ++i) dur[i] = price(ops[i]);
    return dur;
  }
  // The same from the ops' classes: each distinct op priced (looked up) once.
  std::vector<double> operator()(const OpClasses& classes) {
    std::vector<double> distinct(classes.distinct.size());
    for (size_t i = 0; i < distinct.size(); ++i) distinct[i] = price(classes.distinct[i]);
    std::vector<double> dur(classes.of.size());
    for (size_t i = 0; i < dur.size(); ++i) dur[i] = distinct[classes.of[i]];
    return dur;
  }

  // The op's price, from the memo or priced once. The memo is an open-addressed table
  // (linear probing, at most half full): a search makes 10^5 of these, each pricing a
  // few templates, and a node-based map's allocations and pointer chasing cost several
  // times the pricing they saved.
  double price(const models::Op& op) {
    const OpPriceKey key = price_key(op);
    const size_t hash = OpPriceKeyHash{}(key);
    if (slots_.empty()) slots_.resize(64);
    for (size_t mask = slots_.size() - 1, j = hash & mask;; j = (j + 1) & mask) {
      Slot& slot = slots_[j];
      if (slot.used && slot.hash == hash && slot.key == key) return slot.price;
      if (slot.used) continue;
      if (2 * (used_ + 1) > slots_.size()) {
        grow();
        return price(op);
      }
      slot = Slot{true, hash, key, pricer_.op_us(stub_, op)};
      ++used_;
      return slot.price;
    }
  }

 private:
  void grow() {
    std::vector<Slot> old(slots_.size() * 2);
    old.swap(slots_);
    const size_t mask = slots_.size() - 1;
    for (const Slot& s : old) {
      if (!s.used) continue;
      size_t j = s.hash & mask;
      while (slots_[j].used) j = (j + 1) & mask;
      slots_[j] = s;
    }
  }

  struct Slot {
    bool used = false;
    size_t hash = 0;
    OpPriceKey key{};
    double price = 0;
  };
  OpPricer& pricer_;
  models::StepProgram stub_;
  std::vector<Slot> slots_;  // a power of two of them
  size_t used_ = 0;
};

}  // namespace ibt::topo
