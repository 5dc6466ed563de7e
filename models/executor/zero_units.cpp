#include "models/executor/zero_units.hpp"

#include <algorithm>
#include <functional>
#include <string>

#include <mpi.h>

#include "core/errors.hpp"
#include "models/executor/kv_replica_grads.hpp"
#include "models/executor/param_roles.hpp"

namespace ibt::models {

namespace {

size_t shape_elements(const Tensor& t) {
  size_t n = 1;
  for (int64_t d : t.shape) n *= static_cast<size_t>(d);
  return n;
}

void free_data(Tensor& t) { std::vector<float>().swap(t.data); }

bool is_norm(const Param& p) { return p.name.find("norm.") != std::string::npos; }

}  // namespace

// tied_head: the head's unit index when the chunk's LM head multiplies by the
// embedding table of the same chunk (tied embeddings), else -1. The table's shard
// lives in unit 0; the head's unit then acts on unit 0 too (gathered with it, also
// when prefetched, its gradient allocated and reduce-scattered with it): embedding
// and head as one unit, whose table gradient is reduce-scattered once after the head's
// backward and once after the embedding's (the two sums add up in the shard).
class ZeroUnits::Hooks final : public UnitHooks {
 public:
  Hooks(ZeroUnits& z, std::vector<Unit>& units, int tied_head) : z_(z), units_(units), tied_head_(tied_head) {}
  void before_forward(int u) override {
    if (z_.stage_ < 3) return;
    each(u, [&](Unit& x) { z_.gather(x); });
    if (u + 1 < static_cast<int>(units_.size())) each(u + 1, [&](Unit& x) { z_.gather(x); });  // prefetch
  }
  void after_forward(int u) override {
    if (z_.stage_ >= 3) each(u, [&](Unit& x) { z_.release_weights(x); });
  }
  void before_backward(int u) override {
    if (z_.stage_ >= 3) {
      each(u, [&](Unit& x) { z_.gather(x); });
      if (u > 0) each(u - 1, [&](Unit& x) { z_.gather(x); });  // prefetch (backward runs units in reverse)
    }
    each(u, [&](Unit& x) { z_.allocate_grads(x); });
  }
  void after_backward(int u) override {
    each(u, [&](Unit& x) {
      z_.reduce_grads(x);
      if (z_.stage_ >= 3) z_.release_weights(x);
    });
  }

 private:
  // f on unit u and, for a tied head, on the embedding's unit.
  template <class F>
  void each(int u, F f) {
    f(units_.at(u));
    if (u == tied_head_) f(units_.at(0));
  }
  ZeroUnits& z_;
  std::vector<Unit>& units_;
  int tied_head_;
};

ZeroUnits::ZeroUnits(int stage, std::vector<std::unique_ptr<Transformer>>& chunks, Comms comms)
    : stage_(stage), comms_(comms) {
  if (stage != 2 && stage != 3) throw std::logic_error("ZeroUnits: stage must be 2 or 3");
  for (auto& chunk : chunks) {
    std::vector<Unit> units(static_cast<size_t>(chunk->unit_count()));
    for (int u = 0; u < chunk->unit_count(); ++u) {
      Part dense, experts;
      dense.comm = comms_.shard;
      experts.comm = comms_.expert_shard;
      experts.expert = true;
      for (Param* p : chunk->unit_params(u)) (is_expert(*p) ? experts : dense).params.push_back(p);
      for (Part* part : {&dense, &experts}) {
        if (part->params.empty()) continue;
        for (Param* p : part->params) part->total += p->value.data.size();
        const size_t d = static_cast<size_t>(part->comm->size());
        part->shard = (part->total + d - 1) / d;
        const size_t lo = static_cast<size_t>(part->comm->rank()) * part->shard;
        part->m.assign(part->shard, 0.0f);
        part->v.assign(part->shard, 0.0f);
        part->grad.assign(part->shard, 0.0f);
        if (stage_ >= 3) {
          part->weight.assign(part->shard, 0.0f);
          for_each_param(*part, [&](Param& p, size_t at) {
            const size_t n = p.value.data.size();
            const size_t a = std::max(at, lo), e = std::min(at + n, lo + part->shard);
            if (a < e) std::copy_n(p.value.data.begin() + (a - at), e - a, part->weight.begin() + (a - lo));
          });
        }
        units[u].parts.push_back(std::move(*part));
      }
      for (Part& part : units[u].parts)
        for (Param* p : part.params) free_data(p->grad);
      if (stage_ >= 3) release_weights(units[u]);
    }
    units_.push_back(std::move(units));
  }
  buffer_ = peak_buffer_ = 0;  // construction is not a step
  for (size_t c = 0; c < units_.size(); ++c) {
    const Transformer& t = *chunks[c];
    const int tied_head = t.embedding && t.head && t.head->tied() ? t.unit_count() - 1 : -1;
    hooks_.push_back(std::make_unique<Hooks>(*this, units_[c], tied_head));
  }
}

ZeroUnits::~ZeroUnits() = default;

UnitHooks* ZeroUnits::hooks(int chunk) { return hooks_.at(chunk).get(); }

template <class F>
void ZeroUnits::for_each_param(const Part& part, F f) const {
  size_t at = 0;
  for (Param* p : part.params) {
    f(*p, at);
    at += shape_elements(p->value);
  }
}

void ZeroUnits::account(double bytes) {
  buffer_ += bytes;
  peak_buffer_ = std::max(peak_buffer_, buffer_);
}

void ZeroUnits::gather(Unit& u) {
  if (u.gathered) return;
  const double start = MPI_Wtime();
  for (Part& part : u.parts) {
    const size_t d = static_cast<size_t>(part.comm->size());
    std::vector<float> full(part.shard * d);
    part.comm->all_gather(part.weight.data(), full.data(), part.shard, DType::float32);
    for_each_param(part, [&](Param& p, size_t at) {
      const size_t n = shape_elements(p.value);
      p.value.data.assign(full.begin() + static_cast<std::ptrdiff_t>(at),
                          full.begin() + static_cast<std::ptrdiff_t>(at + n));
      account(4.0 * static_cast<double>(n));
    });
  }
  u.gathered = true;
  if (dp_seconds_) *dp_seconds_ += MPI_Wtime() - start;
}

void ZeroUnits::release_weights(Unit& u) {
  if (!u.gathered) return;
  for (Part& part : u.parts)
    for (Param* p : part.params) {
      account(-4.0 * static_cast<double>(p->value.data.size()));
      free_data(p->value);
    }
  u.gathered = false;
}

void ZeroUnits::allocate_grads(Unit& u) {
  for (Part& part : u.parts)
    for (Param* p : part.params) {
      const size_t n = shape_elements(p->value);
      p->grad.shape = p->value.shape;
      p->grad.data.assign(n, 0.0f);
      account(4.0 * static_cast<double>(n));
    }
}

void ZeroUnits::reduce_grads(Unit& u) {
  const double start = MPI_Wtime();
  for (Part& part : u.parts) {
    sum_kv_replica_grads(part.params, *comms_.tp_kv);  // replicated KV heads' shares
    if (comms_.sequence_parallel && comms_.tp->size() > 1)
      for (Param* p : part.params)
        if (is_norm(*p))
          comms_.tp->all_reduce(p->grad.ptr(), p->grad.ptr(), p->grad.data.size(), DType::float32, ReduceOp::sum);
    const size_t d = static_cast<size_t>(part.comm->size());
    std::vector<float> flat(part.shard * d, 0.0f), mine(part.shard);
    for_each_param(part, [&](Param& p, size_t at) {
      std::copy(p.grad.data.begin(), p.grad.data.end(), flat.begin() + static_cast<std::ptrdiff_t>(at));
      account(-4.0 * static_cast<double>(p.grad.data.size()));
      free_data(p.grad);
    });
    part.comm->reduce_scatter(flat.data(), mine.data(), part.shard, DType::float32, ReduceOp::sum);
    for (size_t i = 0; i < part.shard; ++i) part.grad[i] += mine[i];
  }
  if (dp_seconds_) *dp_seconds_ += MPI_Wtime() - start;
}

bool ZeroUnits::counted_once(const Param& p) const {
  if (tp_replicated(p) && comms_.tp->rank() != 0) return false;
  if (!kv_copy_counted(p, *comms_.tp_kv)) return false;
  // HSDP replicas hold the same shard (of the expert weights too: the same experts).
  return comms_.replica->rank() == 0;
}

double ZeroUnits::finish_gradients(std::map<std::string, double>* per_tensor) {
  const double start = MPI_Wtime();
  double sum_sq = 0;
  for (auto& units : units_)
    for (Unit& u : units)
      for (Part& part : u.parts) {
        if (comms_.replica->size() > 1)
          comms_.replica->all_reduce(part.grad.data(), part.grad.data(), part.shard, DType::float32, ReduceOp::sum);
        const size_t lo = static_cast<size_t>(part.comm->rank()) * part.shard;
        for_each_param(part, [&](Param& p, size_t at) {
          if (!counted_once(p)) return;
          const size_t a = std::max(at, lo), e = std::min(at + shape_elements(p.value), lo + part.shard);
          double sq = 0;
          for (size_t i = a; i < e; ++i) sq += static_cast<double>(part.grad[i - lo]) * part.grad[i - lo];
          sum_sq += sq;
          if (per_tensor && a < e) (*per_tensor)[p.name] += sq;
        });
      }
  if (dp_seconds_) *dp_seconds_ += MPI_Wtime() - start;
  return sum_sq;
}

void ZeroUnits::update(int64_t t, const AdamWConfig& config, double& compute_seconds) {
  for (auto& units : units_)
    for (Unit& u : units)
      for (Part& part : u.parts) {
        double t0 = MPI_Wtime();
        const size_t lo = static_cast<size_t>(part.comm->rank()) * part.shard;
        const size_t d = static_cast<size_t>(part.comm->size());
        // ZeRO-2 updates its slice of the full weights and gathers the slices back.
        std::vector<float> full;
        if (stage_ == 2) full.assign(part.shard * d, 0.0f);
        for_each_param(part, [&](Param& p, size_t at) {
          const size_t n = shape_elements(p.value);
          const size_t a = std::max(at, lo), e = std::min(at + n, lo + part.shard);
          if (a >= e) return;
          float* w = stage_ == 2 ? p.value.ptr() + (a - at) : part.weight.data() + (a - lo);
          adamw_update(w, part.grad.data() + (a - lo), part.m.data() + (a - lo), part.v.data() + (a - lo),
                       static_cast<int64_t>(e - a), t, config, p.decay);
          if (stage_ == 2) std::copy_n(w, e - a, full.begin() + static_cast<std::ptrdiff_t>(a));
        });
        std::fill(part.grad.begin(), part.grad.end(), 0.0f);
        compute_seconds += MPI_Wtime() - t0;
        if (stage_ != 2) continue;
        t0 = MPI_Wtime();
        std::vector<float> gathered(part.shard * d);
        part.comm->all_gather(full.data() + lo, gathered.data(), part.shard, DType::float32);
        for_each_param(part, [&](Param& p, size_t at) {
          std::copy_n(gathered.begin() + static_cast<std::ptrdiff_t>(at), p.value.data.size(), p.value.data.begin());
        });
        if (dp_seconds_) *dp_seconds_ += MPI_Wtime() - t0;
      }
}

double ZeroUnits::weight_sum_squares(std::map<std::string, double>* per_tensor) const {
  double sum_sq = 0;
  for (const auto& units : units_)
    for (const Unit& u : units)
      for (const Part& part : u.parts) {
        const size_t lo = static_cast<size_t>(part.comm->rank()) * part.shard;
        for_each_param(part, [&](Param& p, size_t at) {
          if (!counted_once(p)) return;
          const size_t n = shape_elements(p.value);
          const size_t a = std::max(at, lo), e = std::min(at + n, lo + part.shard);
          double sq = 0;
          for (size_t i = a; i < e; ++i) {
            const double w = stage_ >= 3 ? part.weight[i - lo] : p.value.data[i - at];
            sq += w * w;
          }
          sum_sq += sq;
          if (per_tensor && a < e) (*per_tensor)[p.name] += sq;
        });
      }
  return sum_sq;
}

void ZeroUnits::take_copies(bool grads, std::vector<TensorCopy>& out) const {
  for (const auto& units : units_)
    for (const Unit& u : units)
      for (const Part& part : u.parts) {
        const size_t lo = static_cast<size_t>(part.comm->rank()) * part.shard;
        for_each_param(part, [&](Param& p, size_t at) {
          if (!grads && stage_ == 2) {  // every rank holds the gathered weights
            out.push_back(copy_of(p, false));
            return;
          }
          const size_t a = std::max(at, lo), e = std::min(at + shape_elements(p.value), lo + part.shard);
          if (a >= e) return;
          const float* src = (grads ? part.grad.data() : part.weight.data()) + (a - lo);
          out.push_back(copy_of(p, grads, static_cast<int64_t>(a - at), src, static_cast<int64_t>(e - a)));
        });
      }
}

double ZeroUnits::state_bytes() const {
  double elements = 0;
  for (const auto& units : units_)
    for (const Unit& u : units)
      for (const Part& part : u.parts) {
        elements += 3.0 * static_cast<double>(part.shard);  // m, v, gradient
        elements += stage_ >= 3 ? static_cast<double>(part.shard) : static_cast<double>(part.total);
      }
  return 4.0 * elements;
}

namespace {
std::string part_name(int stage, size_t chunk, size_t unit, bool expert) {
  return "zero" + std::to_string(stage) + "/c" + std::to_string(chunk) + "/u" + std::to_string(unit) +
         (expert ? "/expert/" : "/dense/");
}
void take(const TrainingState& s, const std::string& name, std::vector<float>& dst) {
  const StateArray* a = s.find(name);
  if (!a) throw UsageError("checkpoint: array " + name + " is missing from this rank's shard");
  if (a->data.size() != dst.size())
    throw UsageError("checkpoint: array " + name + " has " + std::to_string(a->data.size()) +
                     " elements, this rank holds " + std::to_string(dst.size()));
  dst = a->data;
}
}  // namespace

void ZeroUnits::save(TrainingState& s) const {
  for (size_t c = 0; c < units_.size(); ++c)
    for (size_t u = 0; u < units_[c].size(); ++u)
      for (const Part& part : units_[c][u].parts) {
        const std::string base = part_name(stage_, c, u, part.expert);
        s.arrays.push_back({base + "m", part.m});
        s.arrays.push_back({base + "v", part.v});
        if (stage_ >= 3) s.arrays.push_back({base + "w", part.weight});
      }
}

void ZeroUnits::restore(const TrainingState& s) {
  for (size_t c = 0; c < units_.size(); ++c)
    for (size_t u = 0; u < units_[c].size(); ++u)
      for (Part& part : units_[c][u].parts) {
        const std::string base = part_name(stage_, c, u, part.expert);
        take(s, base + "m", part.m);
        take(s, base + "v", part.v);
        if (stage_ >= 3) take(s, base + "w", part.weight);
      }
}

}  // namespace ibt::models
