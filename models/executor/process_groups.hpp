#pragma once
// The MPI communicators of one rank for a split: tp, dp, pp, ep, expert_dp; for
// context parallelism cp and the gradient groups dp_cp and expert_dp_cp; for hybrid
// sharding dp_shard and dp_replica; made by
// MPI_Comm_split with the colours and keys of rank_groups.hpp, so member i of each
// communicator is the member with index_in_group() == i (for pp: the stage).
#include <memory>

#include <mpi.h>

#include "collectives/mpi_communicator.hpp"
#include "models/plan/parallel_split.hpp"
#include "models/plan/rank_groups.hpp"

namespace ibt::models {

struct ProcessGroups {
  // kv_replicas: the model's KV-head replicas at this tp (model_config.hpp), for tp_kv.
  ProcessGroups(const ParallelSplit& split, MPI_Comm world, int kv_replicas = 1);
  RankLayout layout;
  int world_rank = 0;
  RankCoord coord;
  std::unique_ptr<MpiCommunicator> world, tp, dp, pp, ep, expert_dp;
  std::unique_ptr<MpiCommunicator> cp, dp_cp, expert_dp_cp;
  // Hybrid sharding (rank_groups.hpp): the shard group and the replicas of one shard
  // (dp and a single rank without a shard group).
  std::unique_ptr<MpiCommunicator> dp_shard, dp_replica;
  // The TP ranks holding the same replicated KV head (a single rank without replication).
  std::unique_ptr<MpiCommunicator> tp_kv;
  // The expert weights' shard group (expert_dp_cp without a shard group).
  std::unique_ptr<MpiCommunicator> expert_dp_shard;
};

}  // namespace ibt::models
