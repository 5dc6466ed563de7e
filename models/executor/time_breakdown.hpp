#pragma once
// Where one training step's seconds went on this rank. Shared by every executor that
// walks the pipeline schedule (cpu, cuda), so `ibt train` reports them alike.
namespace ibt::models {

struct TimeBreakdown {
  double total = 0;
  double compute = 0;  // forward/backward math, optimizer (TP all-reduces excluded)
  double tp = 0;       // TP all-reduces inside forward/backward
  double pp = 0;       // pipeline exchanges, including waiting for the peer (bubble)
  double dp = 0;       // gradient all-reduce over dp (the part not hidden behind compute)
  double ep = 0;       // expert all-to-alls (dispatch and combine, forward and backward)
  double cp = 0;       // context-parallel K/V all-gathers and dK/dV reduce-scatters
  double other = 0;    // step statistics reductions, bookkeeping
};

}  // namespace ibt::models
