#pragma once
// Why a crossover cell's verdict is what it is, in one sentence: the verdict, the gain
// and its uncertainty as `ibt crossover` states them, and the term that decides.
//
// Deciding term: both bests run the same global batch on the same devices, so their step
// times differ by the sum of their parts' differences (compute, exposed TP/DP/expert-DP/
// PP/EP/CP, bubble; each best's bottleneck stage once detail_bests() walked every stage,
// else its first stage); the term is the part that moved most in the faster one's favour.
// A verdict forced because one side has no split at all (divisibility) or none that fits
// in device memory is not a comparison: its sentence says which (CrossoverCell::decided_why).
// `ibt crossover` (its own-fabric line and --topology A,B) and the atlas share this.
#include <string>

#include "topologies/studies/crossover.hpp"

namespace ibt::topo {

struct DecidingTerm {
  bool known = false;    // both bests fit: a comparison of parts
  std::string term;      // "compute", "exposed dp", "bubble", ... (the atlas's stored words)
  std::string words;     // the same for a reader: "exposed DP gradient reduction"
  double no_pp_s = 0;    // the term's seconds in the best without PP
  double with_pp_s = 0;  // and with PP
  bool pp_wins = false;  // the best with PP has the shorter step
};

DecidingTerm deciding_term(const CrossoverCell& c);

// A search walks only stage 0 of each split in detail; the cell's two bests again with
// every stage, for the bottleneck stage's breakdown (two projections, not a search).
void detail_bests(const models::ModelConfig& model, const Topology& fabric, const ProjectionOptions& options,
                  CrossoverCell& cell);

// "PP needed (gain +12.3%, uncertainty +-4.1%): decided by exposed DP gradient reduction,
// 0.412 s (18.0% of the step) without PP vs 0.0251 s (1.2%) with PP" (+ " (its first stage)"
// where the best with PP was not walked stage by stage), or for a forced verdict
// "PP needed: no split without PP divides global batch 1536 over 7 devices".
// With a known gain error (measured PP pairs) the uncertainty reads "+-16.6 points (80% of
// measured pairs)"; without one, the cell's MFU band as above.
std::string verdict_sentence(const CrossoverCell& c, const GainError& gain_error = GainError{});

// Where a job does not fill whole scale-up domains, e.g. "1024 devices fill 14 domains
// of 72 and 16 devices of a 15th", or "64 devices in one domain of 72"; empty when it does.
std::string domain_fit_note(int devices, int domain_size);

}  // namespace ibt::topo
