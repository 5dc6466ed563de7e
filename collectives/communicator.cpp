#include "collectives/communicator.hpp"

namespace ibt {

void Communicator::call(const CallSpec& c, const void* send, void* recv) {
  switch (c.kind) {
    case CallSpec::Kind::all_reduce: return all_reduce(send, recv, c.count, c.dtype, c.op);
    case CallSpec::Kind::all_gather: return all_gather(send, recv, c.count, c.dtype);
    case CallSpec::Kind::reduce_scatter: return reduce_scatter(send, recv, c.count, c.dtype, c.op);
    case CallSpec::Kind::all_to_all: return all_to_all(send, recv, c.count, c.dtype);
    case CallSpec::Kind::broadcast: return broadcast(recv, c.count, c.dtype, c.root);
    case CallSpec::Kind::send_recv: return send_recv(send, c.count, c.dst, recv, c.count, c.src, c.dtype);
  }
}

namespace {

class CallEachTime final : public PreparedCall {
 public:
  CallEachTime(Communicator& comm, const CallSpec& spec) : comm_(comm), spec_(spec) {}
  void operator()(const void* send, void* recv) override { comm_.call(spec_, send, recv); }

 private:
  Communicator& comm_;
  CallSpec spec_;
};

}  // namespace

std::unique_ptr<PreparedCall> Communicator::prepare(const CallSpec& c) {
  return std::make_unique<CallEachTime>(*this, c);
}

}  // namespace ibt
