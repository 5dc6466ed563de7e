#include "collectives/collective.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "core/errors.hpp"

namespace ibt {

std::unique_ptr<Collective> make_all_reduce();
std::unique_ptr<Collective> make_all_gather();
std::unique_ptr<Collective> make_reduce_scatter();
std::unique_ptr<Collective> make_all_to_all();
std::unique_ptr<Collective> make_broadcast();
std::unique_ptr<Collective> make_send_recv();
std::unique_ptr<Collective> make_ping_pong();

std::string_view to_string(Placement p) { return p == Placement::in_place ? "in" : "out"; }

void Collective::run(Communicator& comm, const void* send, void* recv, const OpShape& s, DType t, ReduceOp op,
                     int root) const {
  const std::optional<CallSpec> call = single_call(comm, s, t, op, root);
  if (!call) throw std::logic_error(std::string(name()) + ": a collective overrides run() or single_call()");
  comm.call(*call, send, recv);
}

namespace {

class RunEachTime final : public PreparedCall {
 public:
  RunEachTime(const Collective& op, Communicator& comm, const OpShape& s, DType t, ReduceOp reduce, int root)
      : op_(op), comm_(comm), shape_(s), dtype_(t), reduce_(reduce), root_(root) {}
  void operator()(const void* send, void* recv) override { op_.run(comm_, send, recv, shape_, dtype_, reduce_, root_); }

 private:
  const Collective& op_;
  Communicator& comm_;
  OpShape shape_;
  DType dtype_;
  ReduceOp reduce_;
  int root_;
};

}  // namespace

std::unique_ptr<PreparedCall> Collective::prepare(Communicator& comm, const OpShape& s, DType t, ReduceOp op,
                                                  int root) const {
  if (const std::optional<CallSpec> call = single_call(comm, s, t, op, root)) return comm.prepare(*call);
  return std::make_unique<RunEachTime>(*this, comm, s, t, op, root);
}

double input_value(int rank, std::size_t j) {
  return static_cast<double>(static_cast<long long>((j * 7 + static_cast<std::size_t>(rank) * 13 + 3) % 11) - 5);
}

double reduce_inputs(std::size_t j, int n, ReduceOp op) {
  double acc = input_value(0, j);
  for (int r = 1; r < n; ++r) {
    const double v = input_value(r, j);
    switch (op) {
      case ReduceOp::sum:
      case ReduceOp::avg: acc += v; break;
      case ReduceOp::max: acc = std::max(acc, v); break;
      case ReduceOp::min: acc = std::min(acc, v); break;
      case ReduceOp::prod: acc *= v; break;
    }
  }
  return op == ReduceOp::avg ? acc / n : acc;
}

const std::vector<std::unique_ptr<Collective>>& all_collectives() {
  static const auto ops = [] {
    std::vector<std::unique_ptr<Collective>> v;
    v.push_back(make_all_reduce());
    v.push_back(make_all_gather());
    v.push_back(make_reduce_scatter());
    v.push_back(make_all_to_all());
    v.push_back(make_broadcast());
    v.push_back(make_send_recv());
    v.push_back(make_ping_pong());
    return v;
  }();
  return ops;
}

const Collective& find_collective(std::string_view name) {
  for (const auto& op : all_collectives())
    if (op->name() == name) return *op;
  std::string known;
  for (const auto& op : all_collectives()) known += (known.empty() ? "" : ", ") + std::string(op->name());
  throw UsageError("unknown op '" + std::string(name) + "' (expected " + known + " or all)");
}

std::vector<const Collective*> parse_collectives(std::string_view csv) {
  std::vector<const Collective*> out;
  if (csv == "all") {
    for (const auto& op : all_collectives()) out.push_back(op.get());
    return out;
  }
  std::size_t start = 0;
  while (start <= csv.size()) {
    auto end = csv.find(',', start);
    if (end == std::string_view::npos) end = csv.size();
    out.push_back(&find_collective(csv.substr(start, end - start)));
    start = end + 1;
  }
  return out;
}

}  // namespace ibt
