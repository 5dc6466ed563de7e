#pragma once
// One Communicator call described (CallSpec), and the same call with its arguments
// resolved once (PreparedCall), for the harness's timed loops. A measurement makes one
// call tens of thousands of times with only the buffers changing; going through
// Collective::run and the Communicator's virtual method each time cost ibt about 2% of an
// 8-byte MPI op against IMB-MPI1 on the 2-core machine (docs/measurements/imb-agreement.md).
#include <cstddef>

#include "collectives/dtype.hpp"

namespace ibt {

struct CallSpec {
  enum class Kind { all_reduce, all_gather, reduce_scatter, all_to_all, broadcast, send_recv };
  Kind kind = Kind::all_reduce;
  std::size_t count = 0;  // the count argument of the Communicator method
  DType dtype = DType::float32;
  ReduceOp op = ReduceOp::sum;  // all_reduce, reduce_scatter
  int root = 0;                 // broadcast
  int dst = 0, src = 0;         // send_recv: sends count to dst, receives count from src
};

class PreparedCall {
 public:
  virtual ~PreparedCall() = default;
  // Makes the call on these buffers (broadcast: recv is its one buffer; send is unused).
  virtual void operator()(const void* send, void* recv) = 0;
};

}  // namespace ibt
