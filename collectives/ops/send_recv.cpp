// send_recv: every rank sends count elements to its right ring neighbour and receives
// from its left one at once (as nccl-tests' sendrecv). bytes = count * elem; busbw = algbw.
#include "collectives/collective.hpp"

namespace ibt {
namespace {

class SendRecv final : public Collective {
 public:
  std::string_view name() const override { return "send_recv"; }
  bool supports(Placement p) const override { return p == Placement::out_of_place; }
  OpShape shape(std::size_t bytes, int, std::size_t elem) const override {
    const std::size_t count = bytes / elem;
    return {count, count, count, count * elem};
  }
  double bus_factor(int) const override { return 1.0; }
  void run(Communicator& c, const void* send, void* recv, const OpShape& s, DType t, ReduceOp,
           int) const override {
    // The ring neighbours without a division: this runs inside the timed region.
    const int n = c.size(), r = c.rank();
    const int next = r + 1 == n ? 0 : r + 1, prev = r == 0 ? n - 1 : r - 1;
    c.send_recv(send, s.count, next, recv, s.count, prev, t);
  }
  double expected(int rank, std::size_t i, int n, const OpShape&, ReduceOp, int) const override {
    return input_value((rank - 1 + n) % n, i);
  }
};

}  // namespace

std::unique_ptr<Collective> make_send_recv() { return std::make_unique<SendRecv>(); }

}  // namespace ibt
