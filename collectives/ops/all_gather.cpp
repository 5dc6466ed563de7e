// all_gather: rank r contributes count elements; everyone receives all n blocks.
// bytes = n * count * elem (the gathered output); busbw = algbw * (n-1)/n.
// In place (as NCCL): rank r's input already sits at block r of the output buffer.
#include "collectives/collective.hpp"

namespace ibt {
namespace {

class AllGather final : public Collective {
 public:
  std::string_view name() const override { return "all_gather"; }
  bool supports(Placement) const override { return true; }
  OpShape shape(std::size_t bytes, int n, std::size_t elem) const override {
    const std::size_t count = bytes / (elem * n);
    return {count, count, count * n, count * n * elem};
  }
  double bus_factor(int n) const override { return static_cast<double>(n - 1) / n; }
  std::size_t in_place_send_offset(const OpShape& s, int rank) const override { return rank * s.count; }
  std::optional<CallSpec> single_call(const Communicator&, const OpShape& s, DType t, ReduceOp, int) const override {
    return CallSpec{CallSpec::Kind::all_gather, s.count, t};
  }
  double expected(int, std::size_t i, int, const OpShape& s, ReduceOp, int) const override {
    const auto block = static_cast<int>(i / s.count);
    return input_value(block, i % s.count);
  }
};

}  // namespace

std::unique_ptr<Collective> make_all_gather() { return std::make_unique<AllGather>(); }

}  // namespace ibt
