/* The reference for `ibt collectives --timing imb` (issue 41): one plain MPI loop per
 * IMB-MPI1 benchmark, no harness. It makes IMB's calls in IMB's pattern (an untimed pass
 * of n calls, IMB's warm-ups, then the collectives timed call by call after a barrier and
 * PingPong/Sendrecv timed as one loop) and prints IMB's figure: the time per call
 * averaged over ranks (PingPong: half a round trip, rank 0's).
 *
 * Each knob changes one thing a harness might do differently, so that a difference
 * between ibt and IMB can be traced to one of them by experiment:
 *   --alloc malloc|aligned|alloc_mem   where the buffers come from (IMB: MPI_Alloc_mem)
 *   --offset B                         with aligned: B bytes past a page (ibt's imb: 16)
 *   --touch zero|fill|none             the buffers' first touch and contents (IMB fills)
 *   --fresh                            new buffers per size (ibt) instead of one pair
 *                                      grown to the largest size (IMB)
 *   --float                            point-to-point in MPI_FLOAT elements (ibt), not bytes
 *   --dup                              on a duplicate of MPI_COMM_WORLD, not world
 *   --split                            on MPI_Comm_split of world, one colour (ibt, IMB)
 *   --funneled                         MPI_Init_thread(MPI_THREAD_FUNNELED) (ibt), not MPI_Init
 *
 * usage: mpiexec -n 2 plain_mpi_loop OP ITERS BYTES... [knobs]
 *   OP: pingpong sendrecv allreduce bcast allgather alltoall reduce_scatter_block
 *   BYTES: IMB's size (per rank for allgather, alltoall, reduce_scatter_block)
 * Prints "OP BYTES TIME_US" per size on rank 0. Unknown arguments: usage, exit 2.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { kPage = 4096 };

struct Knobs {
  const char* alloc;
  size_t offset;
  const char* touch;
};

static void* take(size_t bytes, const struct Knobs* k) {
  void* p = NULL;
  if (strcmp(k->alloc, "malloc") == 0) {
    p = malloc(bytes);
  } else if (strcmp(k->alloc, "alloc_mem") == 0) {
    MPI_Alloc_mem((MPI_Aint)bytes, MPI_INFO_NULL, &p);
  } else {
    unsigned char* base = aligned_alloc(kPage, (bytes + k->offset + kPage - 1) / kPage * kPage);
    p = base ? base + k->offset : NULL;
  }
  if (!p) {
    fprintf(stderr, "plain_mpi_loop: out of memory (%zu bytes)\n", bytes);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  if (strcmp(k->touch, "zero") == 0) memset(p, 0, bytes);
  if (strcmp(k->touch, "fill") == 0)
    for (size_t i = 0; i < bytes / sizeof(float); ++i) ((float*)p)[i] = (float)(i % 1000);
  return p;
}

static MPI_Comm comm;         /* world, or its duplicate with --dup */
static MPI_Datatype p2p_type; /* MPI_BYTE, or MPI_FLOAT with --float */

static void give_back(void* p, const struct Knobs* k) {
  if (!p) return;
  if (strcmp(k->alloc, "alloc_mem") == 0)
    MPI_Free_mem(p);
  else if (strcmp(k->alloc, "malloc") == 0)
    free(p);
  else
    free((unsigned char*)p - k->offset);
}

/* One call of OP; s/r are send and receive buffers sized for the whole operation. */
static void call(const char* op, unsigned char* s, unsigned char* r, int count, int rank, int size) {
  const int n = p2p_type == MPI_FLOAT ? count / 4 : count;
  if (strcmp(op, "pingpong") == 0) {
    if (rank == 0) {
      MPI_Send(s, n, p2p_type, 1, 1, comm);
      MPI_Recv(r, n, p2p_type, 1, 1, comm, MPI_STATUS_IGNORE);
    } else if (rank == 1) {
      MPI_Recv(r, n, p2p_type, 0, 1, comm, MPI_STATUS_IGNORE);
      MPI_Send(s, n, p2p_type, 0, 1, comm);
    }
  } else if (strcmp(op, "sendrecv") == 0) {
    MPI_Sendrecv(s, n, p2p_type, (rank + 1) % size, 1, r, n, p2p_type, (rank + size - 1) % size, 1, comm,
                 MPI_STATUS_IGNORE);
  } else if (strcmp(op, "allreduce") == 0) {
    MPI_Allreduce(s, r, count / 4, MPI_FLOAT, MPI_SUM, comm);
  } else if (strcmp(op, "bcast") == 0) {
    MPI_Bcast(s, count, MPI_BYTE, 0, comm);
  } else if (strcmp(op, "allgather") == 0) {
    MPI_Allgather(s, count, MPI_BYTE, r, count, MPI_BYTE, comm);
  } else if (strcmp(op, "alltoall") == 0) {
    MPI_Alltoall(s, count, MPI_BYTE, r, count, MPI_BYTE, comm);
  } else {
    MPI_Reduce_scatter_block(s, r, count / 4, MPI_FLOAT, MPI_SUM, comm);
  }
}

static int known(const char* op) {
  const char* ops[] = {"pingpong", "sendrecv", "allreduce", "bcast", "allgather", "alltoall", "reduce_scatter_block"};
  for (size_t i = 0; i < sizeof ops / sizeof ops[0]; ++i)
    if (strcmp(op, ops[i]) == 0) return 1;
  return 0;
}

static int has(int argc, char** argv, const char* flag) {
  for (int i = 3; i < argc; ++i)
    if (strcmp(argv[i], flag) == 0) return 1;
  return 0;
}

int main(int argc, char** argv) {
  if (has(argc, argv, "--funneled")) {
    int provided = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  } else {
    MPI_Init(&argc, &argv);
  }
  comm = MPI_COMM_WORLD;
  p2p_type = MPI_BYTE;
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  struct Knobs k = {"alloc_mem", 16, "fill"};
  int fresh = 0, iters = 0;
  const char* op = argc > 1 ? argv[1] : "";
  long sizes[64];
  int n_sizes = 0;
  const char* bad = NULL;
  if (argc > 2) iters = atoi(argv[2]);
  for (int i = 3; i < argc && !bad; ++i) {
    if (strcmp(argv[i], "--alloc") == 0 && i + 1 < argc)
      k.alloc = argv[++i];
    else if (strcmp(argv[i], "--offset") == 0 && i + 1 < argc)
      k.offset = (size_t)atol(argv[++i]);
    else if (strcmp(argv[i], "--touch") == 0 && i + 1 < argc)
      k.touch = argv[++i];
    else if (strcmp(argv[i], "--fresh") == 0)
      fresh = 1;
    else if (strcmp(argv[i], "--float") == 0)
      p2p_type = MPI_FLOAT;
    else if (strcmp(argv[i], "--dup") == 0)
      MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    else if (strcmp(argv[i], "--split") == 0)
      MPI_Comm_split(MPI_COMM_WORLD, 0, rank, &comm);
    else if (strcmp(argv[i], "--funneled") == 0)
      continue;
    else if (argv[i][0] != '-' && atol(argv[i]) >= 4 && atol(argv[i]) % 4 == 0 && n_sizes < 64)
      sizes[n_sizes++] = atol(argv[i]);
    else
      bad = argv[i];
  }
  const int alloc_ok = !strcmp(k.alloc, "alloc_mem") || !strcmp(k.alloc, "malloc") || !strcmp(k.alloc, "aligned");
  const int touch_ok = !strcmp(k.touch, "fill") || !strcmp(k.touch, "zero") || !strcmp(k.touch, "none");
  if (!known(op) || iters < 1 || n_sizes == 0 || bad || !alloc_ok || !touch_ok ||
      (strcmp(op, "pingpong") == 0 && size != 2)) {
    if (rank == 0) {
      if (bad) fprintf(stderr, "plain_mpi_loop: bad argument '%s'\n", bad);
      fprintf(stderr,
              "usage: plain_mpi_loop OP ITERS BYTES... [--alloc alloc_mem|malloc|aligned] [--offset B]\n"
              "       [--touch fill|zero|none] [--fresh] [--float] [--dup] [--split] [--funneled]\n"
              "  OP: pingpong (2 ranks) sendrecv allreduce bcast allgather alltoall reduce_scatter_block;\n"
              "  BYTES: multiples of 4, IMB's size (per rank for allgather, alltoall, reduce_scatter_block)\n");
    }
    MPI_Finalize();
    return 2;
  }
  const int per_rank_recv = strcmp(op, "allgather") == 0 || strcmp(op, "alltoall") == 0;
  const int per_rank_send = strcmp(op, "alltoall") == 0 || strcmp(op, "reduce_scatter_block") == 0;
  /* IMB's warm-up (IMB_warm_up.c): n/10 calls, at least min(10, n). */
  const int warmups = iters / 10 > (iters < 10 ? iters : 10) ? iters / 10 : (iters < 10 ? iters : 10);
  const int timed_as_loop = strcmp(op, "pingpong") == 0 || strcmp(op, "sendrecv") == 0;
  long largest = 0;
  for (int i = 0; i < n_sizes; ++i) largest = sizes[i] > largest ? sizes[i] : largest;
  /* IMB keeps one pair of buffers for the largest size; --fresh takes new ones per size. */
  unsigned char* s = fresh ? NULL : take((size_t)largest * (per_rank_send ? size : 1), &k);
  unsigned char* r = fresh ? NULL : take((size_t)largest * (per_rank_recv ? size : 1), &k);
  for (int z = 0; z < n_sizes; ++z) {
    const int count = (int)sizes[z];
    if (fresh) {
      give_back(s, &k);
      give_back(r, &k);
      s = take((size_t)count * (per_rank_send ? size : 1), &k);
      r = take((size_t)count * (per_rank_recv ? size : 1), &k);
    }
    for (int i = 0; i < iters; ++i) call(op, s, r, count, rank, size); /* IMB's untimed pass */
    for (int i = 0; i < warmups; ++i) call(op, s, r, count, rank, size);
    MPI_Barrier(comm);
    double t = 0;
    if (timed_as_loop) {
      const double t0 = MPI_Wtime();
      for (int i = 0; i < iters; ++i) call(op, s, r, count, rank, size);
      t = (MPI_Wtime() - t0) / iters;
      if (strcmp(op, "pingpong") == 0) t /= 2;
    } else {
      for (int i = 0; i < iters; ++i) {
        MPI_Barrier(comm);
        const double t0 = MPI_Wtime();
        call(op, s, r, count, rank, size);
        t += MPI_Wtime() - t0;
      }
      t /= iters;
    }
    double sum = 0;
    MPI_Reduce(&t, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) printf("%s %d %.3f\n", op, count, (strcmp(op, "pingpong") == 0 ? t : sum / size) * 1e6);
    fflush(stdout);
  }
  give_back(s, &k);
  give_back(r, &k);
  MPI_Finalize();
  return 0;
}
