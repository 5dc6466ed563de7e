#pragma once
// Prices the ops of one pipeline stage, each distinct op once: a step's ops repeat the
// same few dozen shapes over every layer and microbatch, and pricing one (GEMM tile
// efficiency, collective fits) costs far more than looking it up. What an op costs
// depends on its kind, phase, group, stream, FLOPs, bytes and GEMM shape, and, through
// the group's placement, on its stage: the memo is per stage (OpPricer's contract:
// sim_executor.hpp). Used by the fast walk's templates (sim_fast.cpp) and by
// simulate() on full step programs.
#include <bit>
#include <cstdint>
#include <tuple>
#include <vector>

#include "models/step_program.hpp"
#include "topologies/sim_executor.hpp"

namespace ibt::topo {

class StagePrices {
 public:
  StagePrices(OpPricer& pricer, int stage) : pricer_(pricer) { stub_.stage = stage; }
  // Each op's price, in order.
  std::vector<double> operator()(const std::vector<models::Op>& ops) {
    std::vector<double> dur(ops.size());
    for (size_t i = 0; i < ops.size(); ++i) dur[i] = price(ops[i]);
    return dur;
  }

  // The op's price, from the memo or priced once. The memo is an open-addressed table
  // (linear probing, at most half full): a search makes 10^5 of these, each pricing a
  // few templates, and a node-based map's allocations and pointer chasing cost several
  // times the pricing they saved.
  double price(const models::Op& op) {
    const Key key{op.kind, op.phase, op.group, op.stream, op.flops, op.bytes, op.gemm};
    const size_t hash = KeyHash{}(key);
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

  // The GEMM shape tells a split backward's B from its W (same FLOPs and bytes).
  using Key = std::tuple<models::OpKind, models::Phase, models::Group, models::Stream, double, double, models::GemmShape>;
  // A template has thousands of ops and a few dozen distinct ones: hashed, not ordered.
  // The doubles by their bits (std::hash<double> hashes their bytes, a search's most
  // frequent call while it prices templates); +0 and -0, equal keys, hash alike.
  struct KeyHash {
    static size_t bits(double v) { return v == 0 ? 0 : std::bit_cast<std::uint64_t>(v); }
    size_t operator()(const Key& k) const {
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
  struct Slot {
    bool used = false;
    size_t hash = 0;
    Key key{};
    double price = 0;
  };
  OpPricer& pricer_;
  models::StepProgram stub_;
  std::vector<Slot> slots_;  // a power of two of them
  size_t used_ = 0;
};

}  // namespace ibt::topo
