// ping_pong: two ranks; rank 0 sends, rank 1 answers with a message of the same size.
// One iteration is a round trip; the reported time is half of it (one-way latency), and
// bandwidth is bytes over that half: uni-directional, as OSU's osu_latency defines it.
#include "collectives/collective.hpp"

namespace ibt {
namespace {

class PingPong final : public Collective {
 public:
  std::string_view name() const override { return "ping_pong"; }
  bool supports(Placement p) const override { return p == Placement::out_of_place; }
  int required_group_size() const override { return 2; }
  OpShape shape(std::size_t bytes, int, std::size_t elem) const override {
    const std::size_t count = bytes / elem;
    return {count, count, count, count * elem};
  }
  double bus_factor(int) const override { return 1.0; }
  double time_divisor() const override { return 2.0; }
  void run(Communicator& c, const void* send, void* recv, const OpShape& s, DType t, ReduceOp, int) const override {
    if (c.rank() == 0) {
      c.send(send, s.count, t, 1);
      c.recv(recv, s.count, t, 1);
    } else {
      c.recv(recv, s.count, t, 0);
      c.send(send, s.count, t, 0);
    }
  }
  double expected(int rank, std::size_t i, int, const OpShape&, ReduceOp, int) const override {
    return input_value(1 - rank, i);
  }
};

}  // namespace

std::unique_ptr<Collective> make_ping_pong() { return std::make_unique<PingPong>(); }

}  // namespace ibt
