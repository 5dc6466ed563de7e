#include "models/executor/process_groups.hpp"

#include "core/errors.hpp"

namespace ibt::models {

namespace {
std::unique_ptr<MpiCommunicator> split_group(MPI_Comm world, const RankLayout& layout, Group g, int rank) {
  MPI_Comm comm = MPI_COMM_NULL;
  MPI_Comm_split(world, layout.group_color(g, rank), layout.index_in_group(g, rank), &comm);
  return std::make_unique<MpiCommunicator>(comm);
}
}  // namespace

ProcessGroups::ProcessGroups(const ParallelSplit& split, MPI_Comm world_comm) : layout(split) {
  int size = 0;
  MPI_Comm_rank(world_comm, &world_rank);
  MPI_Comm_size(world_comm, &size);
  if (size != layout.world_size())
    throw UsageError("split " + describe(split) + " needs " + std::to_string(layout.world_size()) +
                     " ranks, the job has " + std::to_string(size));
  coord = layout.coord(world_rank);
  MPI_Comm dup = MPI_COMM_NULL;
  MPI_Comm_dup(world_comm, &dup);
  world = std::make_unique<MpiCommunicator>(dup);
  tp = split_group(world_comm, layout, Group::tp, world_rank);
  dp = split_group(world_comm, layout, Group::dp, world_rank);
  pp = split_group(world_comm, layout, Group::pp, world_rank);
  ep = split_group(world_comm, layout, Group::ep, world_rank);
  expert_dp = split_group(world_comm, layout, Group::expert_dp, world_rank);
  dp_shard = split_group(world_comm, layout, Group::dp_shard, world_rank);
  dp_replica = split_group(world_comm, layout, Group::dp_replica, world_rank);
  expert_dp_shard = split_group(world_comm, layout, Group::expert_dp_shard, world_rank);
  cp = split_group(world_comm, layout, Group::cp, world_rank);
  dp_cp = split_group(world_comm, layout, Group::dp_cp, world_rank);
  expert_dp_cp = split_group(world_comm, layout, Group::expert_dp_cp, world_rank);
  world->set_label("world");
  tp->set_label("tp");
  dp->set_label("dp");
  pp->set_label("pp");
  ep->set_label("ep");
  expert_dp->set_label("expert-dp");
  cp->set_label("cp");
  dp_cp->set_label("dp-cp");
  expert_dp_cp->set_label("expert-dp-cp");
}

}  // namespace ibt::models
