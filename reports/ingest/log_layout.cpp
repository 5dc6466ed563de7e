// The layout and batch of an imported log, judged like a model file's fields: what cannot
// be a run's layout is refused with the argument named, never cut to fit an int.
#include <limits>

#include "core/errors.hpp"
#include "reports/ingest/training_log.hpp"

namespace ibt::suites {
namespace {

constexpr long long kIntMax = std::numeric_limits<int>::max();

// a x b, or a UsageError naming `what` when it passes int's largest.
long long product(long long a, long long b, const std::string& what, const std::string& file) {
  long long p = 0;
  if (__builtin_mul_overflow(a, b, &p) || p > kIntMax)
    throw UsageError(file + ": " + what + " is beyond " + std::to_string(kIntMax) + " (" + std::to_string(a) + " x " +
                     std::to_string(b) + ")");
  return p;
}

}  // namespace

LogLayout read_log_layout(const TrainingLog& log) {
  const std::string& file = log.file;
  const long long tp = log.integer("tensor_model_parallel_size");
  const long long pp = log.integer("pipeline_model_parallel_size");
  const long long cp = log.integer("context_parallel_size", 1);
  const long long ep = log.integer("expert_model_parallel_size", 1);
  const long long model_ranks = product(product(tp, pp, "tensor x pipeline parallel size", file), cp,
                                        "tensor x pipeline x context parallel size", file);
  const long long world = log.integer("world_size", 0);
  const long long dp = log.integer("data_parallel_size", world / model_ranks);
  if (dp < 1)
    throw UsageError(file + ": world_size " + std::to_string(world) + " is smaller than tensor x pipeline x " +
                     "context parallel sizes (" + std::to_string(model_ranks) + ")");
  const long long ranks = product(dp, model_ranks, "data x tensor x pipeline x context parallel size", file);
  if (world > 0 && world != ranks)
    throw UsageError(file + ": world_size " + std::to_string(world) + " is not data x tensor x pipeline x " +
                     "context parallel sizes (" + std::to_string(ranks) + ")");
  LogLayout l;
  l.tp = static_cast<int>(tp);
  l.pp = static_cast<int>(pp);
  l.cp = static_cast<int>(cp);
  l.ep = static_cast<int>(ep);
  l.dp = static_cast<int>(dp);
  l.micro_batch_size = static_cast<int>(log.integer("micro_batch_size"));
  const long long global = log.integer("global_batch_size");
  const long long per_step = product(dp, l.micro_batch_size, "data parallel size x micro_batch_size", file);
  if (global < per_step || global % per_step != 0)
    throw UsageError(file + ": global_batch_size " + std::to_string(global) +
                     " is not a whole number (1 or more) of micro-batches per data-parallel replica (" +
                     std::to_string(dp) + " x " + std::to_string(l.micro_batch_size) + ")");
  l.microbatches = static_cast<int>(global / per_step);
  l.vpp = static_cast<int>(log.integer("virtual_pipeline_model_parallel_size", 1));
  return l;
}

}  // namespace ibt::suites
