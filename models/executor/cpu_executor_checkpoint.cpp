// The cpu executor's checkpoint state (cpu_executor.hpp, "checkpointing"): what
// training_state() saves of a rank and restore_training_state() takes back. Kept apart
// from the step loop (cpu_executor.cpp): it only reads and writes the members the loop uses.
#include "models/executor/cpu_executor.hpp"

#include <algorithm>
#include <cstddef>
#include <string>
#include <vector>

#include "core/errors.hpp"

namespace ibt::models {

namespace {

std::string chunk_name(size_t c) { return "c" + std::to_string(c); }

// Copies a saved array into dst, which must have exactly its element count.
void take_array(const TrainingState& s, const std::string& name, float* dst, size_t n) {
  const StateArray* a = s.find(name);
  if (!a) throw UsageError("checkpoint: array " + name + " is missing from this rank's shard");
  if (a->data.size() != n)
    throw UsageError("checkpoint: array " + name + " has " + std::to_string(a->data.size()) +
                     " elements, this rank holds " + std::to_string(n));
  std::copy(a->data.begin(), a->data.end(), dst);
}

}  // namespace

TrainingState CpuExecutor::training_state() {
  TrainingState s;
  s.steps_done = step_;
  s.optimizer_steps = optimizer_ ? optimizer_->steps() : step_;
  s.seed = train_.seed;
  if (zero_) zero_->save(s);  // ZeRO-3: the weights are these shards
  const bool full_weights = split_.zero < 3;
  for (size_t c = 0; c < chunks_.size(); ++c) {
    if (full_weights)
      for (Param* p : chunks_[c]->params())
        s.arrays.push_back({"params/" + chunk_name(c) + "/" + p->name, p->value.data});
    std::vector<MoeLayer*> moe = chunks_[c]->moe_layers();
    for (size_t i = 0; i < moe.size(); ++i)
      s.arrays.push_back({"moe_bias/" + chunk_name(c) + "/layer" + std::to_string(i), moe[i]->selection_bias});
  }
  if (optimizer_) {
    // AdamW holds one moment vector per params() entry, chunk by chunk.
    size_t i = 0;
    for (size_t c = 0; c < chunks_.size(); ++c)
      for (Param* p : chunks_[c]->params()) {
        s.arrays.push_back({"adam_m/" + chunk_name(c) + "/" + p->name, optimizer_->first_moments()[i]});
        s.arrays.push_back({"adam_v/" + chunk_name(c) + "/" + p->name, optimizer_->second_moments()[i]});
        ++i;
      }
  }
  for (size_t b = 0; b < buckets_.size(); ++b) {
    if (split_.zero == 0) break;
    s.arrays.push_back({"zero1/bucket" + std::to_string(b) + "/m", buckets_[b].m});
    s.arrays.push_back({"zero1/bucket" + std::to_string(b) + "/v", buckets_[b].v});
  }
  return s;
}

void CpuExecutor::restore_training_state(const TrainingState& s) {
  if (s.seed != train_.seed)
    throw UsageError("checkpoint: seed " + std::to_string(s.seed) + " differs from this run's " +
                     std::to_string(train_.seed));
  if (zero_) zero_->restore(s);
  for (size_t c = 0; c < chunks_.size(); ++c) {
    if (split_.zero < 3)
      for (Param* p : chunks_[c]->params())
        take_array(s, "params/" + chunk_name(c) + "/" + p->name, p->value.ptr(), p->value.data.size());
    std::vector<MoeLayer*> moe = chunks_[c]->moe_layers();
    for (size_t i = 0; i < moe.size(); ++i)
      take_array(s, "moe_bias/" + chunk_name(c) + "/layer" + std::to_string(i), moe[i]->selection_bias.data(),
                 moe[i]->selection_bias.size());
  }
  if (optimizer_) {
    size_t i = 0;
    for (size_t c = 0; c < chunks_.size(); ++c)
      for (Param* p : chunks_[c]->params()) {
        take_array(s, "adam_m/" + chunk_name(c) + "/" + p->name, optimizer_->first_moments()[i].data(),
                   optimizer_->first_moments()[i].size());
        take_array(s, "adam_v/" + chunk_name(c) + "/" + p->name, optimizer_->second_moments()[i].data(),
                   optimizer_->second_moments()[i].size());
        ++i;
      }
    optimizer_->set_steps(s.optimizer_steps);
  }
  for (size_t b = 0; b < buckets_.size(); ++b) {
    if (split_.zero == 0) break;
    take_array(s, "zero1/bucket" + std::to_string(b) + "/m", buckets_[b].m.data(), buckets_[b].m.size());
    take_array(s, "zero1/bucket" + std::to_string(b) + "/v", buckets_[b].v.data(), buckets_[b].v.size());
  }
  step_ = s.steps_done;
}

}  // namespace ibt::models
