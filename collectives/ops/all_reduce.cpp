// all_reduce: every rank ends with the reduction of all inputs.
// bytes = count * elem; busbw = algbw * 2(n-1)/n (a ring moves each byte 2(n-1)/n times).
#include "collectives/collective.hpp"

namespace ibt {
namespace {

class AllReduce final : public Collective {
 public:
  std::string_view name() const override { return "all_reduce"; }
  bool reduces() const override { return true; }
  bool supports(Placement) const override { return true; }
  OpShape shape(std::size_t bytes, int, std::size_t elem) const override {
    const std::size_t count = bytes / elem;
    return {count, count, count, count * elem};
  }
  double bus_factor(int n) const override { return 2.0 * (n - 1) / n; }
  std::optional<CallSpec> single_call(const Communicator&, const OpShape& s, DType t, ReduceOp op, int) const override {
    return CallSpec{CallSpec::Kind::all_reduce, s.count, t, op};
  }
  double expected(int, std::size_t i, int n, const OpShape&, ReduceOp op, int) const override {
    return reduce_inputs(i, n, op);
  }
};

}  // namespace

std::unique_ptr<Collective> make_all_reduce() { return std::make_unique<AllReduce>(); }

}  // namespace ibt
