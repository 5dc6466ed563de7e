/* Checks the IMB buffer-placement shim (scripts/fidelity/alloc_mem_offset.c) under a real
 * MPI launch: with it preloaded, every MPI_Alloc_mem block starts EXPECTED bytes past a page
 * boundary, whatever its size, holds what is written to it, and MPI_Free_mem takes it back.
 * Usage: alloc_mem_offset_test EXPECTED */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  const long expected = argc > 1 ? atol(argv[1]) : -1;
  const MPI_Aint sizes[] = {1, 8, 4096, 32768, 1 << 20, 64 << 20};
  int failures = 0;
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; ++i) {
    unsigned char* block = NULL;
    if (MPI_Alloc_mem(sizes[i], MPI_INFO_NULL, &block) != MPI_SUCCESS || !block) {
      fprintf(stderr, "MPI_Alloc_mem(%ld) failed\n", (long)sizes[i]);
      ++failures;
      continue;
    }
    const long offset = (long)((uintptr_t)block % 4096);
    memset(block, 0xA5, (size_t)sizes[i]);
    if (offset != expected || block[sizes[i] - 1] != 0xA5) {
      fprintf(stderr, "MPI_Alloc_mem(%ld): %ld bytes past a page, expected %ld\n", (long)sizes[i], offset, expected);
      ++failures;
    }
    MPI_Free_mem(block);
  }
  int total = 0;
  MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 0) printf("%s: %d misplaced blocks\n", total ? "FAILED" : "OK", total);
  MPI_Finalize();
  return total ? 1 : 0;
}
