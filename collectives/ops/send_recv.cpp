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
  std::optional<CallSpec> single_call(const Communicator& c, const OpShape& s, DType t, ReduceOp, int) const override {
    CallSpec call{CallSpec::Kind::send_recv, s.count, t};
    call.dst = (c.rank() + 1) % c.size();
    call.src = (c.rank() - 1 + c.size()) % c.size();
    return call;
  }
  double expected(int rank, std::size_t i, int n, const OpShape&, ReduceOp, int) const override {
    return input_value((rank - 1 + n) % n, i);
  }
};

}  // namespace

std::unique_ptr<Collective> make_send_recv() { return std::make_unique<SendRecv>(); }

}  // namespace ibt
