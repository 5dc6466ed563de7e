#include "models/executor/copy_gather.hpp"

#include <climits>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>

#include "collectives/rank_identity.hpp"
#include "core/errors.hpp"

namespace ibt::models {

namespace {

void put_i64(std::vector<char>& b, int64_t v) {
  const char* p = reinterpret_cast<const char*>(&v);
  b.insert(b.end(), p, p + sizeof v);
}
void put_dims(std::vector<char>& b, const std::vector<int64_t>& dims) {
  put_i64(b, static_cast<int64_t>(dims.size()));
  for (int64_t d : dims) put_i64(b, d);
}

class Reader {
 public:
  Reader(const char* p, size_t n) : p_(p), end_(p + n) {}
  bool done() const { return p_ == end_; }
  void take(void* dst, size_t n) {
    if (static_cast<size_t>(end_ - p_) < n) throw std::runtime_error("unpack_copies: truncated buffer");
    std::memcpy(dst, p_, n);
    p_ += n;
  }
  int64_t i64() {
    int64_t v = 0;
    take(&v, sizeof v);
    return v;
  }
  int64_t count(int64_t limit) {
    const int64_t n = i64();
    if (n < 0 || n > limit) throw std::runtime_error("unpack_copies: malformed count");
    return n;
  }
  std::vector<int64_t> dims() {
    std::vector<int64_t> d(static_cast<size_t>(count(16)));
    for (int64_t& x : d) x = i64();
    return d;
  }

 private:
  const char* p_;
  const char* end_;
};

}  // namespace

std::vector<char> pack_copies(const std::vector<TensorCopy>& copies) {
  std::vector<char> b;
  for (const TensorCopy& c : copies) {
    put_i64(b, static_cast<int64_t>(c.name.size()));
    b.insert(b.end(), c.name.begin(), c.name.end());
    put_i64(b, c.grad ? 1 : 0);
    put_dims(b, c.slice.full_dims);
    put_i64(b, c.slice.axis);
    put_i64(b, c.slice.begin);
    put_dims(b, c.local_dims);
    put_i64(b, c.first);
    put_i64(b, static_cast<int64_t>(c.data.size()));
    const char* p = reinterpret_cast<const char*>(c.data.data());
    b.insert(b.end(), p, p + 4 * c.data.size());
  }
  return b;
}

void unpack_copies(const char* bytes, size_t n, int rank, const std::string& host, std::vector<TensorCopy>& out) {
  Reader r(bytes, n);
  while (!r.done()) {
    TensorCopy c;
    c.name.resize(static_cast<size_t>(r.count(4096)));
    r.take(c.name.data(), c.name.size());
    c.grad = r.i64() != 0;
    c.slice.full_dims = r.dims();
    c.slice.axis = static_cast<int>(r.i64());
    c.slice.begin = r.i64();
    c.local_dims = r.dims();
    c.first = r.i64();
    c.data.resize(static_cast<size_t>(r.count(static_cast<int64_t>(n / 4))));
    r.take(c.data.data(), 4 * c.data.size());
    c.rank = rank;
    c.host = host;
    out.push_back(std::move(c));
  }
}

std::vector<TensorCopy> gather_copies(const std::vector<TensorCopy>& mine, MPI_Comm world) {
  int rank = 0, size = 1;
  MPI_Comm_rank(world, &rank);
  MPI_Comm_size(world, &size);
  // The hosts are the job's (rank_identity.hpp): gathered once per process, usually
  // already by the run's first arrival gate, not again every checked step.
  gather_rank_identities(world);

  const std::vector<char> bytes = pack_copies(mine);
  // Each rank's size as a 64-bit count, so a world total past int is refused, not wrapped.
  const int64_t n = static_cast<int64_t>(bytes.size());
  std::vector<int64_t> sizes(static_cast<size_t>(size));
  MPI_Allgather(&n, 1, MPI_INT64_T, sizes.data(), 1, MPI_INT64_T, world);
  int64_t total = 0;
  for (int64_t s : sizes) total += s;
  if (total > INT_MAX)
    throw UsageError("--check: the ranks' tensor copies come to " + std::to_string(total) +
                     " bytes a step, more than one gather carries (2 GiB): check a smaller model");
  std::vector<int> counts(static_cast<size_t>(size)), at(static_cast<size_t>(size), 0);
  for (int r = 0; r < size; ++r) {
    counts[r] = static_cast<int>(sizes[r]);
    if (r > 0) at[r] = at[r - 1] + counts[r - 1];
  }
  std::vector<char> all(rank == 0 ? static_cast<size_t>(total) : 0);
  MPI_Gatherv(bytes.data(), static_cast<int>(n), MPI_BYTE, all.data(), counts.data(), at.data(), MPI_BYTE, 0, world);
  std::vector<TensorCopy> out;
  if (rank != 0) return out;
  for (int r = 0; r < size; ++r)
    unpack_copies(all.data() + at[r], static_cast<size_t>(counts[r]), r, rank_host(r), out);
  return out;
}

}  // namespace ibt::models
