#pragma once
// The one CPU GEMM-peak rule: the fp32 rate `train` measures its MFU against and
// `calibrate --measure-local` writes into a topology's device figures, so both read the
// same peak on the same machine.
#include <string>

namespace ibt::models {

// The rule, measured at `threads` OpenBLAS threads (the count is restored afterwards):
// an sgemm of kSgemmPeakSize^3 through the engine's gemm(), one untimed warm-up call,
// then the fastest of at least kSgemmPeakMinCalls timed calls and at least
// kSgemmPeakMinSeconds of them (at most kSgemmPeakMaxCalls). Why:
//  - the fastest call, not a mean or median: a peak is the fastest the core ran, and on a
//    shared machine a short window misses it (MFU above 100% was seen with 5 calls);
//  - the warm-up: the first call pays page faults on the output and OpenBLAS's thread and
//    buffer start-up, which no later GEMM pays;
//  - 1024^3 (2.1 GFLOP): large enough that OpenBLAS runs its blocked kernel at full rate
//    (the engine's own GEMMs are of this size or smaller, so a larger one would only be a
//    peak they never reach), small enough that 0.3 s holds several calls on one core, and
//    `train` pays well under a second for it at start.
// One rank's figure; `train` takes the median over ranks (models/training/train_runner.cpp).
inline constexpr int kSgemmPeakSize = 1024;
inline constexpr int kSgemmPeakMinCalls = 5;
inline constexpr int kSgemmPeakMaxCalls = 100;
inline constexpr double kSgemmPeakMinSeconds = 0.3;

// GFLOP/s by the rule above.
double measure_sgemm_peak_gflops(int threads);

// The rule in words, for sources and notes: "sgemm 1024^3, best of >= 5 calls and
// >= 0.3 s after a warm-up".
std::string sgemm_peak_rule();

}  // namespace ibt::models
