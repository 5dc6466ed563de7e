#pragma once
// The all-to-alls of expert parallelism. MoE layers whose experts are spread over an
// EP group send each dispatched token row to the rank owning its expert and get the
// expert outputs back (and the same in reverse for gradients). The layers stay free
// of MPI: the block calls these, and the CPU executor implements them with
// all-to-allv on the EP communicator.
#include <cstdint>
#include <vector>

#include "models/engine/tensor.hpp"

namespace ibt::models {

class ExpertExchange {
 public:
  virtual ~ExpertExchange() = default;
  virtual int size() const = 0;
  // `send` holds size() equal blocks, block j for peer j; `recv` gets block j from
  // peer j (same block length).
  virtual void exchange_counts(const std::vector<int64_t>& send, std::vector<int64_t>& recv) = 0;
  // Rows of `send` (row width = send.row_size()): the first send_rows[0] rows to peer 0,
  // the next send_rows[1] to peer 1, ...; `recv` receives recv_rows[j] rows from peer j
  // in peer order (recv is resized here).
  virtual void exchange_rows(const Tensor& send, const std::vector<int64_t>& send_rows, Tensor& recv,
                             const std::vector<int64_t>& recv_rows) = 0;
};

}  // namespace ibt::models
