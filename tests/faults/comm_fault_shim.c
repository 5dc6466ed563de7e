/* comm_fault_shim: perturbs one rank's MPI traffic, for testing `ibt train --check`.
 *
 * Preloaded (LD_PRELOAD) into `ibt train`, it wraps through PMPI the MPI calls the CPU
 * engine's communication goes through (collectives/mpi_communicator.cpp and the CP ring in
 * models/executor/cpu_executor.cpp) and, on one rank, changes the float payload of chosen
 * calls: a fault the split engine did not make, which a check worth its name must see.
 *
 *   IBT_FAULT_OP         allreduce | allgather | reduce_scatter | alltoallv | sendrecv |
 *                        send | isend   (unset: the shim does nothing at all)
 *   IBT_FAULT_RANK       the MPI_COMM_WORLD rank that faults (default 0)
 *   IBT_FAULT_CALL       N | A-B | all: which matching calls on that rank, counted from 1
 *                        (default 1)
 *   IBT_FAULT_MODE       scale (default): multiply the payload's first non-zero element by
 *                        IBT_FAULT_SCALE; reverse: reverse the payload's element order;
 *                        count: change nothing, only count
 *   IBT_FAULT_SCALE      the factor of scale mode (default 1.001)
 *   IBT_FAULT_COMM_SIZE  only calls on communicators of this size (default any), to aim at
 *                        a TP or DP group rather than a size-1 one
 *
 * A matching call: of that op, with datatype MPI_FLOAT, on a communicator of the chosen
 * size. The payload is what this rank receives for collectives and MPI_Sendrecv (its
 * result after the call: MPI_Allreduce's count elements, MPI_Allgather's whole output,
 * MPI_Reduce_scatter_block's block, MPI_Alltoallv's first non-empty block), and what it
 * sends for MPI_Send and MPI_Isend (a changed copy goes out, so the sender's own data stays
 * as the engine computed it).
 *
 * Every fault prints one line to stderr ("comm_fault_shim: rank 1 scaled element 0 of
 * MPI_Allreduce call 7 by 1.001"), so a test can tell a fault that fired from one that
 * never did; at MPI_Finalize the faulting rank prints how many calls matched and how many
 * it changed. A malformed variable, or a rank the job does not have, ends the process at
 * MPI_Init with exit status 2, naming it. Calls are counted as the engine makes them: from one thread
 * (MPI_THREAD_FUNNELED).
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum mode { kScale, kReverse, kCount };

static struct {
  int active;       /* IBT_FAULT_OP set */
  char op[32];      /* its value */
  int rank;         /* IBT_FAULT_RANK */
  long first, last; /* IBT_FAULT_CALL as a range; last < 0: every call from first */
  enum mode mode;
  double scale;
  int comm_size;  /* 0: any */
  int world_rank; /* this process's */
  long matched, changed;
  const char* call_name; /* the MPI function of op, for the messages */
} cfg;

static void refuse(const char* name, const char* value, const char* want) {
  fprintf(stderr, "comm_fault_shim: %s='%s' is not %s\n", name, value, want);
  exit(2);
}

/* A whole decimal integer in lo-hi, or refuse(). */
static long parse_long(const char* name, const char* text, long lo, long hi) {
  char* end = NULL;
  errno = 0;
  const long v = strtol(text, &end, 10);
  if (errno || end == text || *end != '\0' || v < lo || v > hi) {
    char want[64];
    snprintf(want, sizeof want, "a whole number in %ld-%ld", lo, hi);
    refuse(name, text, want);
  }
  return v;
}

static const struct {
  const char* op;
  const char* call;
} kOps[] = {
    {"allreduce", "MPI_Allreduce"}, {"allgather", "MPI_Allgather"}, {"reduce_scatter", "MPI_Reduce_scatter_block"},
    {"alltoallv", "MPI_Alltoallv"}, {"sendrecv", "MPI_Sendrecv"},   {"send", "MPI_Send"},
    {"isend", "MPI_Isend"}};

/* Reads the variables once, before MPI starts, so a bad one stops every rank alike. */
static void configure(void) {
  const char* op = getenv("IBT_FAULT_OP");
  if (!op || !*op) return;
  for (size_t i = 0; i < sizeof kOps / sizeof kOps[0]; ++i)
    if (strcmp(op, kOps[i].op) == 0) cfg.call_name = kOps[i].call;
  if (!cfg.call_name)
    refuse("IBT_FAULT_OP", op, "one of allreduce allgather reduce_scatter alltoallv sendrecv send isend");
  snprintf(cfg.op, sizeof cfg.op, "%s", op);
  const char* v = getenv("IBT_FAULT_RANK");
  cfg.rank = v ? (int)parse_long("IBT_FAULT_RANK", v, 0, INT_MAX) : 0;
  v = getenv("IBT_FAULT_COMM_SIZE");
  cfg.comm_size = v ? (int)parse_long("IBT_FAULT_COMM_SIZE", v, 1, INT_MAX) : 0;
  cfg.first = cfg.last = 1;
  v = getenv("IBT_FAULT_CALL");
  if (v && strcmp(v, "all") == 0) {
    cfg.last = -1;
  } else if (v) {
    char buf[64];
    snprintf(buf, sizeof buf, "%s", v);
    char* dash = strchr(buf, '-');
    if (dash) *dash = '\0';
    cfg.first = parse_long("IBT_FAULT_CALL", buf, 1, LONG_MAX);
    cfg.last = dash ? parse_long("IBT_FAULT_CALL", dash + 1, 1, LONG_MAX) : cfg.first;
    if (strlen(v) >= sizeof buf || cfg.last < cfg.first) refuse("IBT_FAULT_CALL", v, "N, A-B with A <= B, or all");
  }
  v = getenv("IBT_FAULT_MODE");
  cfg.mode = kScale;
  if (v && strcmp(v, "reverse") == 0)
    cfg.mode = kReverse;
  else if (v && strcmp(v, "count") == 0)
    cfg.mode = kCount;
  else if (v && strcmp(v, "scale") != 0)
    refuse("IBT_FAULT_MODE", v, "scale, reverse or count");
  cfg.scale = 1.001;
  v = getenv("IBT_FAULT_SCALE");
  if (v) {
    char* end = NULL;
    cfg.scale = strtod(v, &end);
    if (end == v || *end != '\0' || !isfinite(cfg.scale)) refuse("IBT_FAULT_SCALE", v, "a finite number");
  }
  cfg.active = 1;
}

/* After MPI_Init: this rank, and a faulting rank the job has. */
static void started(void) {
  if (!cfg.active) return;
  int size = 0;
  PMPI_Comm_rank(MPI_COMM_WORLD, &cfg.world_rank);
  PMPI_Comm_size(MPI_COMM_WORLD, &size);
  if (cfg.rank >= size) {
    char want[64];
    snprintf(want, sizeof want, "a rank of this job (0-%d)", size - 1);
    char rank[16];
    snprintf(rank, sizeof rank, "%d", cfg.rank);
    refuse("IBT_FAULT_RANK", rank, want);
  }
}

/* Whether this call is one to change (counting it if it matches). */
static int chosen(const char* op, MPI_Datatype type, MPI_Comm comm) {
  if (!cfg.active || cfg.world_rank != cfg.rank || strcmp(op, cfg.op) != 0 || type != MPI_FLOAT) return 0;
  if (cfg.comm_size) {
    int size = 0;
    PMPI_Comm_size(comm, &size);
    if (size != cfg.comm_size) return 0;
  }
  const long n = ++cfg.matched;
  return cfg.mode != kCount && n >= cfg.first && (cfg.last < 0 || n <= cfg.last);
}

/* Changes n floats at p as the mode says, and says so. */
static void perturb(float* p, long n) {
  if (n <= 0) return;
  ++cfg.changed;
  if (cfg.mode == kScale) {
    /* The first non-zero element: a scaled zero (the gradient of an embedding row no
     * token of the batch used) would be a fault that changes nothing. */
    long i = 0;
    while (i < n - 1 && p[i] == 0.0f) ++i;
    p[i] = (float)(p[i] * cfg.scale);
    fprintf(stderr, "comm_fault_shim: rank %d scaled element %ld of %s call %ld by %.9g\n", cfg.world_rank, i,
            cfg.call_name, cfg.matched, cfg.scale);
  } else {
    for (long i = 0, j = n - 1; i < j; ++i, --j) {
      const float t = p[i];
      p[i] = p[j];
      p[j] = t;
    }
    fprintf(stderr, "comm_fault_shim: rank %d reversed the %ld elements of %s call %ld\n", cfg.world_rank, n,
            cfg.call_name, cfg.matched);
  }
}

/* A changed copy of a send buffer. Isend's copies must outlive the call until its
 * request completes; they are not freed (a test faults a handful of calls). */
static const void* changed_copy(const void* buf, int count) {
  float* copy = malloc(count > 0 ? (size_t)count * sizeof(float) : 1);
  if (!copy) {
    fprintf(stderr, "comm_fault_shim: out of memory copying %d floats\n", count);
    exit(2);
  }
  memcpy(copy, buf, (size_t)count * sizeof(float));
  perturb(copy, count);
  return copy;
}

int MPI_Init(int* argc, char*** argv) {
  configure();
  const int rc = PMPI_Init(argc, argv);
  started();
  return rc;
}

int MPI_Init_thread(int* argc, char*** argv, int required, int* provided) {
  configure();
  const int rc = PMPI_Init_thread(argc, argv, required, provided);
  started();
  return rc;
}

int MPI_Finalize(void) {
  if (cfg.active && cfg.world_rank == cfg.rank)
    fprintf(stderr, "comm_fault_shim: rank %d: %ld matching %s calls, %ld changed\n", cfg.world_rank, cfg.matched,
            cfg.call_name, cfg.changed);
  return PMPI_Finalize();
}

int MPI_Allreduce(const void* send, void* recv, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm) {
  const int rc = PMPI_Allreduce(send, recv, count, type, op, comm);
  if (rc == MPI_SUCCESS && chosen("allreduce", type, comm)) perturb(recv, count);
  return rc;
}

int MPI_Allgather(const void* send, int send_count, MPI_Datatype send_type, void* recv, int recv_count,
                  MPI_Datatype recv_type, MPI_Comm comm) {
  const int rc = PMPI_Allgather(send, send_count, send_type, recv, recv_count, recv_type, comm);
  if (rc == MPI_SUCCESS && chosen("allgather", recv_type, comm)) {
    int size = 0;
    PMPI_Comm_size(comm, &size);
    perturb(recv, (long)recv_count * size);
  }
  return rc;
}

int MPI_Reduce_scatter_block(const void* send, void* recv, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm) {
  const int rc = PMPI_Reduce_scatter_block(send, recv, count, type, op, comm);
  if (rc == MPI_SUCCESS && chosen("reduce_scatter", type, comm)) perturb(recv, count);
  return rc;
}

int MPI_Alltoallv(const void* send, const int send_counts[], const int send_displs[], MPI_Datatype send_type,
                  void* recv, const int recv_counts[], const int recv_displs[], MPI_Datatype recv_type, MPI_Comm comm) {
  const int rc =
      PMPI_Alltoallv(send, send_counts, send_displs, send_type, recv, recv_counts, recv_displs, recv_type, comm);
  if (rc == MPI_SUCCESS && chosen("alltoallv", recv_type, comm)) {
    int size = 0;
    PMPI_Comm_size(comm, &size);
    for (int i = 0; i < size; ++i)
      if (recv_counts[i] > 0) {
        perturb((float*)recv + recv_displs[i], recv_counts[i]);
        break;
      }
  }
  return rc;
}

int MPI_Sendrecv(const void* send, int send_count, MPI_Datatype send_type, int dst, int send_tag, void* recv,
                 int recv_count, MPI_Datatype recv_type, int src, int recv_tag, MPI_Comm comm, MPI_Status* status) {
  const int rc = PMPI_Sendrecv(send, send_count, send_type, dst, send_tag, recv, recv_count, recv_type, src, recv_tag,
                               comm, status);
  if (rc == MPI_SUCCESS && chosen("sendrecv", recv_type, comm)) perturb(recv, recv_count);
  return rc;
}

int MPI_Send(const void* buf, int count, MPI_Datatype type, int dst, int tag, MPI_Comm comm) {
  if (!chosen("send", type, comm)) return PMPI_Send(buf, count, type, dst, tag, comm);
  const void* copy = changed_copy(buf, count);
  const int rc = PMPI_Send(copy, count, type, dst, tag, comm);
  free((void*)copy);
  return rc;
}

int MPI_Isend(const void* buf, int count, MPI_Datatype type, int dst, int tag, MPI_Comm comm, MPI_Request* request) {
  if (!chosen("isend", type, comm)) return PMPI_Isend(buf, count, type, dst, tag, comm, request);
  return PMPI_Isend(changed_copy(buf, count), count, type, dst, tag, comm, request);
}
