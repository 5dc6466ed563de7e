// broadcast: the root's buffer reaches every rank. bytes = count * elem; busbw = algbw.
// One buffer (in place): MPI_Bcast has no separate send buffer.
#include "collectives/collective.hpp"

namespace ibt {
namespace {

class Broadcast final : public Collective {
 public:
  std::string_view name() const override { return "broadcast"; }
  bool supports(Placement p) const override { return p == Placement::in_place; }
  OpShape shape(std::size_t bytes, int, std::size_t elem) const override {
    const std::size_t count = bytes / elem;
    return {count, count, count, count * elem};
  }
  double bus_factor(int) const override { return 1.0; }
  // In place in the receive buffer.
  std::optional<CallSpec> single_call(const Communicator&, const OpShape& s, DType t, ReduceOp,
                                      int root) const override {
    CallSpec call{CallSpec::Kind::broadcast, s.count, t};
    call.root = root;
    return call;
  }
  // Non-roots start from a value the root never sends, so a missed delivery shows.
  double input(int rank, std::size_t j, int, int root) const override {
    return rank == root ? input_value(root, j) : input_value(root, j) + 17;
  }
  double expected(int, std::size_t i, int, const OpShape&, ReduceOp, int root) const override {
    return input_value(root, i);
  }
};

}  // namespace

std::unique_ptr<Collective> make_broadcast() { return std::make_unique<Broadcast>(); }

}  // namespace ibt
