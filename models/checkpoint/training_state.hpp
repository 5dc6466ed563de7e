#pragma once
// One rank's full training state as named flat float32 arrays plus counters: what an
// executor hands to the checkpointer and takes back on resume. Header-only and free of
// MPI and HDF5 so that any executor (cpu, cuda) can fill it.
//
// Array names are paths ("params/<name>", "adam_m/<name>", "zero1/dense/m",
// "moe_bias/chunk0/layer1"); each executor documents its own set. Shapes are not
// stored: the executor that restores knows them and checks element counts.
#include <cstdint>
#include <string>
#include <vector>

namespace ibt::models {

struct StateArray {
  std::string name;
  std::vector<float> data;
};

struct TrainingState {
  // Steps completed. The data position and the random stream follow from it: data is
  // addressed by (step, sequence index) and every random number in training is a pure
  // function of (seed, step, index) (data.hpp, init.hpp), so (seed, step) IS the RNG
  // state; there is no hidden generator state to save.
  std::int64_t steps_done = 0;
  std::int64_t optimizer_steps = 0;  // AdamW's t (bias correction); equals steps_done today
  std::uint64_t seed = 0;
  std::vector<StateArray> arrays;

  std::uint64_t bytes() const {
    std::uint64_t n = 0;
    for (const StateArray& a : arrays) n += a.data.size() * sizeof(float);
    return n;
  }
  const StateArray* find(const std::string& name) const {
    for (const StateArray& a : arrays)
      if (a.name == name) return &a;
    return nullptr;
  }
};

}  // namespace ibt::models
