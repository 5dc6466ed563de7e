/* Yield shim for oversubscribed MPICH runs (more ranks than cores).
 *
 * MPICH's ch4:ucx device polls ucp_worker_progress() in a tight loop while it waits and
 * never gives up the core, so on a 2-core machine with 4-8 ranks a waiting rank starves
 * the rank it waits for: an 8-byte all-reduce takes milliseconds instead of microseconds
 * (measured in ../shared/platform.md). Preloaded with LD_PRELOAD, this wraps
 * ucp_worker_progress and yields the core whenever a poll found nothing to do.
 *
 * It changes scheduling only, never what MPI sends or computes. Use it for tests and
 * demonstrations on oversubscribed machines, never for measurements you publish on a
 * machine with a core per rank (a yield costs a system call on an idle poll).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>

typedef unsigned (*progress_fn)(void* worker);

unsigned ucp_worker_progress(void* worker) {
  static progress_fn real = NULL;
  if (!real) {
    real = (progress_fn)dlsym(RTLD_NEXT, "ucp_worker_progress");
    if (!real) {
      fprintf(stderr, "ucx_yield: ucp_worker_progress not found: is this an MPICH/UCX process?\n");
      abort();
    }
  }
  unsigned events = real(worker);
  if (events == 0) sched_yield();
  return events;
}
