/* Buffer-placement shim for comparing ibt with IMB-MPI1 (compare_imb.py --imb-buffers).
 *
 * IMB-MPI1 takes its message buffers from MPI_Alloc_mem, which MPICH 4.0 serves from malloc
 * behind a header of its own: a buffer lands wherever the process's heap happens to be, at
 * any offset in a page for small blocks, 32 bytes past a page for large ones. `ibt collectives --timing imb` puts
 * every host buffer 16 bytes past a page. Where a buffer sits within its page changes what
 * MPICH over UCX measures: on 2 ranks of one host, a 32 KiB MPI_Allreduce on a communicator
 * split from MPI_COMM_WORLD took 28-30 us from IMB's own buffers (the send buffer 32 bytes
 * before a page boundary, the receive buffer on one) and 19-21 us from page + 16 bytes
 * (docs/measurements/imb-agreement.md). Preloaded into IMB-MPI1, this places every
 * MPI_Alloc_mem block IBT_ALLOC_MEM_OFFSET bytes (default 16) past a page boundary, so both
 * tools time the same placement.
 *
 * It changes where IMB's buffers are, never what IMB sends, times or prints. It replaces
 * MPI_Alloc_mem and MPI_Free_mem outright (the blocks are not the MPI library's), which suits
 * IMB-MPI1's message buffers; do not preload it into programs that use MPI_Alloc_mem for RMA
 * windows.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { kPage = 4096 };

static size_t offset_in_page(void) {
  static long offset = -1;
  if (offset < 0) {
    const char* text = getenv("IBT_ALLOC_MEM_OFFSET");
    char* end = NULL;
    offset = text ? strtol(text, &end, 10) : 16;
    if (text && (*end != '\0' || offset < 0 || offset >= kPage || offset % 16 != 0)) {
      fprintf(stderr, "alloc_mem_offset: IBT_ALLOC_MEM_OFFSET=%s is not a multiple of 16 in 0-4080\n", text);
      abort();
    }
  }
  return (size_t)offset;
}

/* The block starts a page before the buffer, so the page's start is base - offset. */
int MPI_Alloc_mem(MPI_Aint size, MPI_Info info, void* baseptr) {
  (void)info;
  void* block = NULL;
  if (size < 0 || posix_memalign(&block, kPage, (size_t)size + offset_in_page()) != 0) return MPI_ERR_NO_MEM;
  *(void**)baseptr = (char*)block + offset_in_page();
  return MPI_SUCCESS;
}

int MPI_Free_mem(void* base) {
  if (base) free((char*)base - offset_in_page());
  return MPI_SUCCESS;
}
