#pragma once
// ZeRO-2 and ZeRO-3 (FSDP) in the cpu executor, with hybrid sharding (HSDP).
//
// The rank's parameters are cut into units (Transformer::unit_params: [embedding],
// each block, [final norm + LM head]) of each chunk, FSDP's usual wrapping. Each unit's
// weights form up to two flat parts: the non-expert ones, sharded over the shard group
// (dp_shard: dp x cp, or a shard group x cp; CP ranks are gradient replicas), and the
// routed-expert ones, sharded over expert_dp_cp (expert_dp x cp). A part of n
// elements is padded to d * ceil(n/d); member i of the group owns elements [i*shard, (i+1)*shard) and keeps for them
// the AdamW moments, the reduced gradient accumulated over the step's microbatches and, with ZeRO-3, the weights
// themselves (the full weights are dropped after construction).
//
// The hooks, called by Transformer::forward/backward around each unit:
//   ZeRO-3, before a unit's forward or backward: its weights all-gathered (unless
//     still gathered), then the next unit in the same direction gathered too. That
//     is FSDP's prefetch in memory (two units gathered at a time) but not in time: the
//     MPI calls here are blocking, like every other collective of this executor; the
//     overlap is what the sim prices (step_program.hpp, "ZeRO-3 / FSDP").
//   ZeRO-3, after a unit's forward: its weights freed.
//   ZeRO-2/3, before a unit's backward: zeroed gradients allocated for it.
//   ZeRO-2/3, after a unit's backward: with sequence parallelism the norm gradients
//     summed over tp (each TP rank saw only its rows); the gradients reduce-scattered
//     over the part's group and added into the rank's shard; the full gradients (and,
//     ZeRO-3, weights) freed. Every microbatch: no full gradient survives a backward.
// After the schedule: with HSDP each shard (expert ones too) all-reduced over dp_replica; AdamW on the
// shards; ZeRO-2 all-gathers the updated shards back into its full weights.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "collectives/communicator.hpp"
#include "models/checkpoint/training_state.hpp"
#include "models/engine/copy_check.hpp"
#include "models/engine/layers/transformer.hpp"
#include "models/engine/optimizer.hpp"

namespace ibt::models {

class ZeroUnits {
 public:
  struct Comms {
    Communicator* shard = nullptr;         // non-expert weights: dp_shard (dp x cp, or g x cp)
    Communicator* replica = nullptr;       // HSDP: dp_replica (size 1 without)
    Communicator* expert_shard = nullptr;  // expert weights: expert_dp_shard (expert_dp_cp, or inside g)
    Communicator* tp = nullptr;
    Communicator* tp_kv = nullptr;  // replicated KV heads' copies (size 1 without)
    bool sequence_parallel = false;
  };
  // stage: 2 or 3. Takes this rank's shards from the chunks' (fully initialised)
  // weights; with ZeRO-3 frees the full weights.
  ZeroUnits(int stage, std::vector<std::unique_ptr<Transformer>>& chunks, Comms comms);
  ~ZeroUnits();

  // The hooks for chunk c's Transformer::forward/backward. Communication time is
  // added to *dp_seconds (set_timer, once per step).
  UnitHooks* hooks(int chunk);
  void set_timer(double* dp_seconds) { dp_seconds_ = dp_seconds; }

  // After the walk: HSDP's replica all-reduce. Returns this rank's share of the
  // squared gradient norm (each element counted once over the world).
  // per_tensor (optional): each tensor's counted share added under its name.
  double finish_gradients(std::map<std::string, double>* per_tensor = nullptr);
  // AdamW step t on the shards; ZeRO-2 then gathers the full weights back.
  void update(int64_t t, const AdamWConfig& config, double& compute_seconds);
  // This rank's share of the squared weight norm (each element once over the world).
  double weight_sum_squares(std::map<std::string, double>* per_tensor = nullptr) const;
  // --check: this rank's gradient shards (after finish_gradients, before update) or
  // weights (after update: ZeRO-3 its shards, ZeRO-2 the full weights it gathered), each
  // parameter's part of a shard as one copy (copy_check.hpp).
  void take_copies(bool grads, std::vector<TensorCopy>& out) const;

  // Bytes held between steps: shards (m, v, gradient; ZeRO-3 weights) and, with
  // ZeRO-2, the full weights.
  double state_bytes() const;
  // The most bytes of gathered weights and unit gradients held at once during the
  // steps so far (accounting.hpp's ZeRO buffers).
  double peak_buffer_bytes() const { return peak_buffer_; }

  // Checkpoints: "zero<stage>/c<chunk>/u<unit>/<dense|expert>/<m|v|w>" (w: ZeRO-3).
  void save(TrainingState& state) const;
  void restore(const TrainingState& state);

 private:
  struct Part {
    std::vector<Param*> params;
    Communicator* comm = nullptr;
    bool expert = false;
    size_t total = 0, shard = 0;
    std::vector<float> weight, grad, m, v;  // this rank's shard (weight: ZeRO-3 only)
  };
  struct Unit {
    std::vector<Part> parts;
    bool gathered = true;  // full weights present
  };
  class Hooks;

  void gather(Unit& u);
  void release_weights(Unit& u);
  void allocate_grads(Unit& u);
  void reduce_grads(Unit& u);
  void account(double bytes);
  // Calls f(part, param, offset in the part) for every parameter.
  template <class F>
  void for_each_param(const Part& part, F f) const;
  bool counted_once(const Param& p) const;

  int stage_;
  Comms comms_;
  std::vector<std::vector<Unit>> units_;  // [chunk][unit]
  std::vector<std::unique_ptr<Hooks>> hooks_;
  double* dp_seconds_ = nullptr;
  double buffer_ = 0, peak_buffer_ = 0;
};

}  // namespace ibt::models
