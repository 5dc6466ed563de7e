#include "collectives/domains.hpp"

#include <algorithm>
#include <map>
#include <string>

#include "core/errors.hpp"

namespace ibt {

std::string_view to_string(Scope s) {
  switch (s) {
    case Scope::intra: return "intra";
    case Scope::inter: return "inter";
    case Scope::world: return "world";
  }
  return "?";
}

std::vector<Scope> parse_scopes(std::string_view value) {
  if (value == "all") return {Scope::intra, Scope::inter, Scope::world};
  std::vector<Scope> out;
  std::size_t start = 0;
  while (start <= value.size()) {
    auto end = value.find(',', start);
    if (end == std::string_view::npos) end = value.size();
    const auto item = value.substr(start, end - start);
    if (item == "intra")
      out.push_back(Scope::intra);
    else if (item == "inter")
      out.push_back(Scope::inter);
    else if (item == "world")
      out.push_back(Scope::world);
    else
      throw UsageError("unknown scope '" + std::string(item) + "' (expected intra, inter, world or all)");
    start = end + 1;
  }
  return out;
}

bool DomainLayout::uniform() const {
  return std::all_of(domain_sizes.begin(), domain_sizes.end(), [&](int s) { return s == domain_sizes.front(); });
}

DomainLayout layout_from_labels(const std::vector<int>& domain_of, int my_rank, std::string method) {
  DomainLayout l;
  l.world_size = static_cast<int>(domain_of.size());
  l.world_rank = my_rank;
  l.method = std::move(method);
  std::map<int, int> index_of_label;  // label -> domain index, in order of first rank
  std::vector<int> index(domain_of.size());
  for (std::size_t r = 0; r < domain_of.size(); ++r) {
    auto [it, inserted] = index_of_label.try_emplace(domain_of[r], static_cast<int>(index_of_label.size()));
    index[r] = it->second;
    if (inserted) l.domain_sizes.push_back(0);
    if (static_cast<int>(r) == my_rank) l.local_rank = l.domain_sizes[it->second];
    ++l.domain_sizes[it->second];
  }
  l.num_domains = static_cast<int>(l.domain_sizes.size());
  l.domain = index.at(my_rank);
  return l;
}

DomainLayout layout_by_block(int world_size, int my_rank, int domain_size) {
  if (domain_size <= 0) throw UsageError("--domain-size must be positive");
  if (world_size % domain_size != 0)
    throw UsageError("--domain-size " + std::to_string(domain_size) + " does not divide the " +
                     std::to_string(world_size) + " ranks of this job");
  std::vector<int> labels(world_size);
  for (int r = 0; r < world_size; ++r) labels[r] = r / domain_size;
  return layout_from_labels(labels, my_rank, "--domain-size " + std::to_string(domain_size));
}

DomainLayout detect_domains(MPI_Comm world, int domain_size) {
  int rank = 0, size = 1;
  MPI_Comm_rank(world, &rank);
  MPI_Comm_size(world, &size);
  if (domain_size > 0) return layout_by_block(size, rank, domain_size);
  // Label each rank by the lowest world rank that shares its memory.
  MPI_Comm shared;
  MPI_Comm_split_type(world, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &shared);
  int leader = rank;
  MPI_Allreduce(MPI_IN_PLACE, &leader, 1, MPI_INT, MPI_MIN, shared);
  MPI_Comm_free(&shared);
  std::vector<int> labels(size);
  MPI_Allgather(&leader, 1, MPI_INT, labels.data(), 1, MPI_INT, world);
  return layout_from_labels(labels, rank, "shared-memory split (MPI_COMM_TYPE_SHARED)");
}

GroupKey group_key(Scope scope, const DomainLayout& l) {
  switch (scope) {
    case Scope::world: return {0, l.world_rank};
    case Scope::intra: return {l.domain, l.local_rank};
    case Scope::inter:
      if (l.num_domains < 2)
        throw UsageError("scope inter needs at least 2 domains; this job has 1 (" + l.method +
                         "): run more nodes or pass --domain-size");
      if (!l.uniform())
        throw UsageError("scope inter needs domains of equal size; found sizes differing (" + l.method + ")");
      return {l.local_rank, l.domain};
  }
  return {0, l.world_rank};
}

int group_count(Scope scope, const DomainLayout& l) {
  switch (scope) {
    case Scope::world: return 1;
    case Scope::intra: return l.num_domains;
    case Scope::inter: return l.domain_sizes.front();
  }
  return 1;
}

int group_size(Scope scope, const DomainLayout& l) {
  switch (scope) {
    case Scope::world: return l.world_size;
    case Scope::intra: return l.local_size();
    case Scope::inter: return l.num_domains;
  }
  return l.world_size;
}

}  // namespace ibt
