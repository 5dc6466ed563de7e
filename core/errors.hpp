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

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitTimeout = 3;

}  // namespace ibt
