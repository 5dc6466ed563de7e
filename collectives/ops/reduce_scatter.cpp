// reduce_scatter: each rank inputs n blocks of count elements and receives the
// reduction of its own block. bytes = n * count * elem (the whole input);
// busbw = algbw * (n-1)/n. In place (as NCCL): the result lands in block r of the input.
#include "collectives/collective.hpp"

namespace ibt {
namespace {

class ReduceScatter final : public Collective {
 public:
  std::string_view name() const override { return "reduce_scatter"; }
  bool reduces() const override { return true; }
  bool supports(Placement) const override { return true; }
  OpShape shape(std::size_t bytes, int n, std::size_t elem) const override {
    const std::size_t count = bytes / (elem * n);
    return {count, count * n, count, count * n * elem};
  }
  double bus_factor(int n) const override { return static_cast<double>(n - 1) / n; }
  std::size_t in_place_recv_offset(const OpShape& s, int rank) const override { return rank * s.count; }
  std::optional<CallSpec> single_call(const Communicator&, const OpShape& s, DType t, ReduceOp op, int) const override {
    return CallSpec{CallSpec::Kind::reduce_scatter, s.count, t, op};
  }
  double expected(int rank, std::size_t i, int n, const OpShape& s, ReduceOp op, int) const override {
    return reduce_inputs(rank * s.count + i, n, op);
  }
};

}  // namespace

std::unique_ptr<Collective> make_reduce_scatter() { return std::make_unique<ReduceScatter>(); }

}  // namespace ibt
