// all_to_all: rank r sends block p of its input to rank p and receives block q of its
// output from rank q. bytes = n * count * elem (the whole input); busbw = algbw * (n-1)/n.
// Out of place only, as in nccl-tests.
#include "collectives/collective.hpp"

namespace ibt {
namespace {

class AllToAll final : public Collective {
 public:
  std::string_view name() const override { return "all_to_all"; }
  bool supports(Placement p) const override { return p == Placement::out_of_place; }
  OpShape shape(std::size_t bytes, int n, std::size_t elem) const override {
    const std::size_t count = bytes / (elem * n);
    return {count, count * n, count * n, count * n * elem};
  }
  double bus_factor(int n) const override { return static_cast<double>(n - 1) / n; }
  std::optional<CallSpec> single_call(const Communicator&, const OpShape& s, DType t, ReduceOp, int) const override {
    return CallSpec{CallSpec::Kind::all_to_all, s.count, t};
  }
  double expected(int rank, std::size_t i, int, const OpShape& s, ReduceOp, int) const override {
    const auto source = static_cast<int>(i / s.count);
    return input_value(source, rank * s.count + i % s.count);
  }
};

}  // namespace

std::unique_ptr<Collective> make_all_to_all() { return std::make_unique<AllToAll>(); }

}  // namespace ibt
