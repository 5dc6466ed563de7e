#pragma once
// One measurable collective: its byte accounting, bus-bandwidth factor, how it runs on
// a Communicator, and the exact result every rank must see. One file per collective in
// collectives/ops/, as nccl-tests has one per test.
//
// Sizes follow nccl-tests: `bytes` is the whole buffer of the op (all_gather: the gathered
// output; reduce_scatter, all_to_all: the whole input). IMB and OSU quote per-peer sizes
// for these three ops: divide by the group size to compare.
#include <cstddef>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "collectives/communicator.hpp"
#include "collectives/dtype.hpp"

namespace ibt {

struct OpShape {
  std::size_t count = 0;       // the count argument of the Communicator call
  std::size_t send_elems = 0;  // elements in the send buffer
  std::size_t recv_elems = 0;  // elements in the receive buffer
  std::size_t bytes = 0;       // the size as nccl-tests counts it (after rounding)
};

enum class Placement { out_of_place, in_place };
std::string_view to_string(Placement p);

// The value rank r contributes at element j of its input. Small integers in [-5, 5], so
// sums over thousands of ranks are exact in float32 and the expected result is known.
double input_value(int rank, std::size_t j);

class Collective {
 public:
  virtual ~Collective() = default;
  virtual std::string_view name() const = 0;
  virtual bool reduces() const { return false; }
  virtual bool supports(Placement p) const = 0;
  // 0 when any group size works; otherwise the one group size the op needs.
  virtual int required_group_size() const { return 0; }
  // The largest shape not above requested_bytes (rounds down to whole elements per rank).
  virtual OpShape shape(std::size_t requested_bytes, int n, std::size_t elem_bytes) const = 0;
  // busbw = algbw * factor (nccl-tests' definition).
  virtual double bus_factor(int n) const = 0;
  // Measured time per iteration is divided by this (2 for ping-pong: half a round trip).
  virtual double time_divisor() const { return 1.0; }

  // Where send and receive data sit in the single buffer of an in-place run.
  virtual std::size_t in_place_send_offset(const OpShape&, int /*rank*/) const { return 0; }
  virtual std::size_t in_place_recv_offset(const OpShape&, int /*rank*/) const { return 0; }

  // The one Communicator call this collective makes on `comm`, where it makes one (every
  // op but ping_pong, which makes two that depend on the rank).
  virtual std::optional<CallSpec> single_call(const Communicator&, const OpShape&, DType, ReduceOp, int) const {
    return std::nullopt;
  }
  // Runs the collective once. This default makes single_call() (one of the two must be
  // overridden).
  virtual void run(Communicator& comm, const void* send, void* recv, const OpShape& s, DType t, ReduceOp op,
                   int root) const;
  // The collective ready to run many times on changing buffers (the harness's loops): the
  // communicator's prepared single_call() where there is one, else run() each time.
  std::unique_ptr<PreparedCall> prepare(Communicator& comm, const OpShape& s, DType t, ReduceOp op, int root) const;

  // Input at send element j of `rank` (defaults to input_value).
  virtual double input(int rank, std::size_t j, int /*n*/, int /*root*/) const { return input_value(rank, j); }
  // Exact result at receive element i of `rank`, before rounding to the dtype.
  virtual double expected(int rank, std::size_t i, int n, const OpShape& s, ReduceOp op, int root) const = 0;
};

// Reduces input_value over ranks 0..n-1 at element j.
double reduce_inputs(std::size_t j, int n, ReduceOp op);

// Every collective, in the order the suite runs them.
const std::vector<std::unique_ptr<Collective>>& all_collectives();
const Collective& find_collective(std::string_view name);                // throws UsageError
std::vector<const Collective*> parse_collectives(std::string_view csv);  // "all" or a list

}  // namespace ibt
