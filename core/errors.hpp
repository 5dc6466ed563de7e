#pragma once
// Errors that cross module boundaries. Each carries a message meant for the user:
// it names the problem (the flag, the file, the field) in one line.
#include <stdexcept>
#include <string>

namespace ibt {

// Bad input: arguments, model/topology files, result files. The CLI prints the
// message and exits with status 2, before anything is measured or written.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A failure while running (MPI error, I/O error, wrong results): exit status 1.
struct RuntimeError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Results could not be written (disk full, a file-size limit, an I/O error). The store
// has undone the failed append, so every earlier run is intact: exit status 4.
struct StorageError : RuntimeError {
  using RuntimeError::RuntimeError;
};

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitTimeout = 3;
inline constexpr int kExitStorage = 4;
// Ended by signal N (SIGINT, SIGTERM, ...): 128 + N, as shells report it; the run is
// marked partial.
inline constexpr int kExitSignalBase = 128;

// The one table of exit statuses every command follows (ibt --help, README).
inline constexpr const char* kExitStatusTable =
    "Exit status (every command):\n"
    "  0        success\n"
    "  1        failure while running: wrong results, a failed --check, a NaN/inf loss, an MPI error\n"
    "  2        bad input, refused before any work: options, model/topology/reference files, results\n"
    "           files (not ibt's, damaged, locked by another process, no room), memory-sized requests\n"
    "  3        timeout: a rank stopped progressing (the message names the rank, op and group)\n"
    "  4        results could not be stored (disk full, file-size limit, I/O error); earlier runs intact\n"
    "  128+N    ended by signal N (130 SIGINT, 143 SIGTERM, 129 SIGHUP); the run is marked partial\n"
    "  (under mpiexec the launcher may report another code when it ends the other ranks itself)\n";

}  // namespace ibt
