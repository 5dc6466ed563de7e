#include "collectives/runtime/job_signals.hpp"

#include <pthread.h>
#include <unistd.h>

#include <fcntl.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <thread>

#include "collectives/runtime/run_recorder.hpp"

namespace ibt::suites::job_signals {

namespace {

constexpr int kStopSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGXCPU};

std::mutex watched_mutex;
RunRecorder* watched = nullptr;  // guarded by watched_mutex
std::atomic<int> rank{-1};
std::string suite;  // written once by install(), before the thread starts
int wake_pipe[2] = {-1, -1};

// The signal handler: async-signal-safe, it only wakes the watcher thread.
void pass_on(int sig) {
  const int saved = errno;
  const unsigned char byte = static_cast<unsigned char>(sig);
  (void)!write(wake_pipe[1], &byte, 1);
  errno = saved;
}

std::string host_name() {
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  return host;
}

[[noreturn]] void on_signal(int sig) {
  const int r = rank.load();
  std::string who =
      r >= 0 ? "rank " + std::to_string(r) + " (host " + host_name() + ", pid " + std::to_string(getpid()) + ")"
             : "pid " + std::to_string(getpid()) + " on host " + host_name();
  const std::string reason = "interrupted by " + signal_name(sig) + " received by " + who;
  {
    std::lock_guard lock(watched_mutex);
    // The recorder's own lock waits for a row being written to be complete.
    if (watched) {
      try {
        watched->finish(store::RunStatus::partial, reason);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "%s: could not record the interruption: %s\n", suite.c_str(), e.what());
      }
    }
  }
  std::fprintf(stderr, "%s: %s; rows measured so far are kept\n", suite.c_str(), reason.c_str());
  std::fflush(nullptr);
  // The launcher signals every rank at once. A rank that vanished at once could make
  // rank 0's transport fail inside an operation (UCX aborts when a peer's memory
  // disappears mid-copy) before rank 0 records the interruption: the others linger.
  if (r != 0) std::this_thread::sleep_for(std::chrono::seconds(2));
  _exit(128 + sig);
}

}  // namespace

std::string signal_name(int sig) {
  switch (sig) {
    case SIGINT: return "SIGINT";
    case SIGTERM: return "SIGTERM";
    case SIGHUP: return "SIGHUP";
    case SIGQUIT: return "SIGQUIT";
    case SIGUSR1: return "SIGUSR1";
    case SIGUSR2: return "SIGUSR2";
    case SIGXCPU: return "SIGXCPU (CPU time limit)";
    case SIGKILL: return "SIGKILL";
    default: return "signal " + std::to_string(sig);
  }
}

void install(const std::string& suite_name) {
  static std::once_flag once;
  std::call_once(once, [&] {
    suite = suite_name;
    std::signal(SIGXFSZ, SIG_IGN);
    if (pipe2(wake_pipe, O_CLOEXEC) != 0) return;
    // Threads that started before main (OpenBLAS's pool) do not block the signals, so
    // the kernel may deliver one to them: the handler only passes it on to the watcher.
    struct sigaction action {};
    action.sa_handler = pass_on;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;
    sigset_t set;
    sigemptyset(&set);
    for (int s : kStopSignals) {
      sigaddset(&set, s);
      sigaction(s, &action, nullptr);
    }
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
    std::thread([set] {
      pthread_sigmask(SIG_UNBLOCK, &set, nullptr);  // the watcher itself may take them
      unsigned char sig = 0;
      while (read(wake_pipe[0], &sig, 1) != 1) {
      }
      on_signal(sig);
    }).detach();
  });
}

void set_rank(int world_rank) { rank.store(world_rank); }

void watch(RunRecorder* recorder) {
  std::lock_guard lock(watched_mutex);
  watched = recorder;
}

}  // namespace ibt::suites::job_signals
