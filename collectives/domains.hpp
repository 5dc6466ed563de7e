#pragma once
// Scale-up domains and the three scopes a collective is measured in:
//   intra: the ranks of one domain (NVLink island; on CPUs, ranks sharing memory),
//   inter: one rank per domain with the same local index (rail-aligned, crosses the network),
//   world: every rank.
// Domains come from MPI's shared-memory split by default, or every K consecutive ranks
// when --domain-size K is given (so the split can be exercised on one machine).
#include <mpi.h>

#include <string>
#include <string_view>
#include <vector>

namespace ibt {

enum class Scope { intra, inter, world };
std::string_view to_string(Scope s);
std::vector<Scope> parse_scopes(std::string_view value);  // intra|inter|world|all, comma lists

struct DomainLayout {
  int world_size = 1;
  int world_rank = 0;
  int domain = 0;      // index of this rank's domain, 0..num_domains-1
  int local_rank = 0;  // index within the domain
  int num_domains = 1;
  std::vector<int> domain_sizes;  // ranks per domain
  std::string method;             // how the domains were found, for provenance

  bool uniform() const;
  int local_size() const { return domain_sizes.at(domain); }
};

// Pure layout math: domain_of[r] is any label shared by the ranks of one domain;
// domains are numbered in order of their lowest rank.
DomainLayout layout_from_labels(const std::vector<int>& domain_of, int my_rank, std::string method);
// Consecutive blocks of `domain_size` ranks; throws UsageError when it does not divide.
DomainLayout layout_by_block(int world_size, int my_rank, int domain_size);
// Collective over world: shared-memory split when domain_size == 0.
DomainLayout detect_domains(MPI_Comm world, int domain_size);

// The MPI_Comm_split color/key that put this rank into its group of the given scope.
// Throws UsageError when the scope cannot exist (inter with one domain, or domains of
// unequal size).
struct GroupKey {
  int color;
  int key;
};
GroupKey group_key(Scope scope, const DomainLayout& layout);
// Number of groups and ranks per group the scope forms.
int group_count(Scope scope, const DomainLayout& layout);
int group_size(Scope scope, const DomainLayout& layout);

}  // namespace ibt
