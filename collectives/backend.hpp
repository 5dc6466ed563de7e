#pragma once
// A backend bundles what the microbenchmark harness needs beyond the collectives
// themselves: where buffers live (host memory for MPI, device memory for NCCL), how
// group communicators are carved out of the world, and how iterations are timed (host
// clock for MPI, CUDA events on the communication stream for NCCL).
//
// The harness fills and checks buffers on the host and moves them with upload/download,
// so one correctness scheme serves every backend, outside the timed region.
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "collectives/communicator.hpp"

namespace ibt {

// Times the iterations of one measurement. begin(i)/end(i) bracket iteration i;
// durations() returns every iteration's duration in seconds once all have ended
// (it may synchronise the device).
class IterationTimer {
 public:
  virtual ~IterationTimer() = default;
  virtual void begin(int iteration) = 0;
  virtual void end(int iteration) = 0;
  virtual std::vector<double> durations() = 0;
  // Wall time from the first begin to the last end, in seconds.
  virtual double total() = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;
  // The communicator over every rank of the job.
  virtual Communicator& world() = 0;
  // Like MPI_Comm_split over world(): ranks with equal color form a group, ordered by key.
  // Collective over the whole job.
  virtual std::unique_ptr<Communicator> split(int color, int key) = 0;
  virtual void* allocate(std::size_t bytes) = 0;
  virtual void release(void* buffer) = 0;
  virtual void upload(void* buffer, const void* host, std::size_t bytes) = 0;
  virtual void download(void* host, const void* buffer, std::size_t bytes) = 0;
  virtual std::unique_ptr<IterationTimer> make_timer(Communicator& comm, int iterations) = 0;
  // Element types this backend can move and reduce.
  virtual bool supports(DType t) const = 0;
  // True when the backend ends stuck operations itself within the harness timeout (NCCL
  // aborts its communicators); the harness's watchdog then waits longer, as a last resort.
  virtual bool enforces_timeouts() const { return false; }
  // True when allocate() takes host memory (MPI); false when it takes device memory (NCCL).
  virtual bool buffers_on_host() const { return true; }
  // Key/value facts for the run's provenance (library versions, devices).
  virtual std::vector<std::pair<std::string, std::string>> provenance() const = 0;
};

}  // namespace ibt
