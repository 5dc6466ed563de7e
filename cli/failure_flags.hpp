#pragma once
// The failure and storage flags `ibt project` and `ibt crossover` share
// (topologies/goodput/failure_model.hpp): each overrides the topology's reliability section.
#include <boost/program_options.hpp>
#include <string>

#include "topologies/goodput/failure_model.hpp"

namespace ibt::suites {

void add_failure_options(boost::program_options::options_description& opts);
// The given flags (UsageError naming a flag whose value is out of range comes later,
// from topo::failure_assumptions).
topo::FailureOverrides failure_overrides(const boost::program_options::variables_map& vm);
// --assumptions: print the assumptions in full (notes and sources) instead of one line.
bool wants_full_assumptions(const boost::program_options::variables_map& vm);

}  // namespace ibt::suites
