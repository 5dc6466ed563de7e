#pragma once
// --check's gather of every rank's tensor copies (copy_check.hpp) to rank 0: the copies'
// bytes, each with its slice, and the sending rank and its host.
#include <mpi.h>

#include <vector>

#include "models/engine/copy_check.hpp"

namespace ibt::models {

// Collective over world: rank 0 gets every rank's copies (rank order, each rank's in
// its own order) with rank and host set; the others get nothing. Throws UsageError
// when the world's copies exceed what one gather can carry (2 GiB): --check is for
// small models.
std::vector<TensorCopy> gather_copies(const std::vector<TensorCopy>& mine, MPI_Comm world);

// The byte form the gather sends, and back (tested on its own).
std::vector<char> pack_copies(const std::vector<TensorCopy>& copies);
// Appends the copies in `bytes` to `out`, with rank and host set. Throws
// std::runtime_error on a truncated or malformed buffer.
void unpack_copies(const char* bytes, size_t n, int rank, const std::string& host, std::vector<TensorCopy>& out);

}  // namespace ibt::models
