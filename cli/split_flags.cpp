#include "cli/split_flags.hpp"

#include <algorithm>

#include "core/errors.hpp"
#include "core/memory_plan.hpp"
#include "models/plan/schedule.hpp"

namespace ibt::suites {

namespace po = boost::program_options;

namespace {

template <typename Int>
void add_split_options_of(po::options_description& opts, SplitFlags<Int>& f, SplitFlagsFor use) {
  const bool projection = use == SplitFlagsFor::projection;
  // A run's degrees all default to 1; a projection derives these three when not given.
  auto derived = [&](Int* target) { return projection ? po::value(target) : po::value(target)->default_value(1); };
  opts.add_options()("dp", derived(&f.dp),
                     projection ? "data-parallel degree (default: gpus / (tp*pp*cp))" : "data-parallel degree")(
      "tp", po::value(&f.tp)->default_value(1), "tensor-parallel degree")("pp", po::value(&f.pp)->default_value(1),
                                                                          "pipeline stages")(
      "ep", po::value(&f.ep)->default_value(1), "expert-parallel degree (drawn from dp, which it divides)")(
      "cp", po::value(&f.cp)->default_value(1),
      projection ? "context-parallel degree: each sequence split over cp ranks (2*cp chunks, paired for causal "
                   "balance); with --all: the largest CP degree searched (default 16, where seq_len allows)"
                 : "context-parallel degree: each sequence split over cp ranks (2*cp chunks, paired for causal "
                   "balance)")(
      "cp-comm", po::value(&f.cp_comm)->default_value(f.cp_comm),
      projection ? "context-parallel attention: all_gather (Llama 3: K/V gathered per layer) or ring (K/V blocks "
                   "passed around the CP ring, hidden behind attention where it is long enough); --all tries both"
                 : "context-parallel attention: all_gather (Llama 3: K/V gathered per layer) or ring (K/V blocks "
                   "passed around the CP ring)")(
      "vpp", derived(&f.vpp),
      projection ? "model chunks per stage (interleaved; default 2 for interleaved and dualpipev, else 1)"
                 : "model chunks per stage (interleaved; 2 for dualpipev)")(
      "microbatches", derived(&f.microbatches),
      projection ? "microbatches per DP replica per step (default: from the global batch)"
                 : "microbatches per DP replica per step")(
      "micro-batch-size", po::value(&f.micro_batch_size)->default_value(1), "sequences per microbatch")(
      "schedule", po::value(&f.schedule)->default_value(f.schedule),
      "afab, 1f1b, interleaved, zb-h1 (zero bubble: weight gradients deferred) or dualpipev (DeepSeek's DualPipe, "
      "V-shaped; vpp 2)");
}

}  // namespace

void add_split_options(po::options_description& opts, SplitFlags<int>& f, SplitFlagsFor use) {
  add_split_options_of(opts, f, use);
}

void add_split_options(po::options_description& opts, SplitFlags<long>& f, SplitFlagsFor use) {
  add_split_options_of(opts, f, use);
}

long long GlobalBatchFlags::in_sequences(int seq_len) const {
  if (sequences == 0) throw UsageError("--global-batch must be positive (got 0): the global batch in sequences");
  if (tokens <= 0)
    throw UsageError("--global-batch-tokens must be positive (got " + std::to_string(tokens) +
                     "): the global batch in tokens");
  return sequences > 0 ? sequences : std::max<long long>(1, tokens / seq_len);
}

void require_search_memory(long long global_batch, long devices, int layers, int chunks, int jobs,
                           const std::string& flag) {
  const double stages = static_cast<double>(std::max(1L, std::min(devices, static_cast<long>(std::max(1, layers)))));
  // Per (stage, chunk, microbatch): the schedule's actions (models::schedule_bytes) and
  // the compute order's tasks (forward, backward, weight).
  const double per_microbatch = models::schedule_bytes(1, 1, 1) + 3.0 * sizeof(models::ComputeTask);
  const double bytes =
      std::max(1, jobs) * stages * std::max(1, chunks) * static_cast<double>(global_batch) * per_microbatch;
  require_memory(bytes, flag + " (the pipeline schedules of the search: up to " + std::to_string(global_batch) +
                            " microbatches on " + std::to_string(static_cast<long>(stages)) + " stages x " +
                            std::to_string(chunks) + " chunks, on " + std::to_string(std::max(1, jobs)) +
                            " thread(s))");
}

void add_global_batch_options(po::options_description& opts, GlobalBatchFlags& f) {
  opts.add_options()("global-batch", po::value(&f.sequences),
                     "global batch in sequences (overrides --global-batch-tokens)")(
      "global-batch-tokens", po::value(&f.tokens)->default_value(f.tokens),
      "global batch in tokens (divided by the model's sequence length)");
}

}  // namespace ibt::suites
