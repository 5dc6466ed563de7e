#pragma once
// Which framework wrote a training log, for `ibt import-log` without --format. Each format
// is known by lines only it prints (its marks, kLogFormatMarks): Megatron-LM's arguments
// banner or its "elapsed time per iteration (ms)" lines, NeMo's "Experiment configuration"
// dump or its "train_step_timing in s" metric, torchtitan's "step: N  loss: X ... tps: N"
// metrics line. A log with the marks of exactly one format is that format; a log with none,
// or with the marks of two (a NeMo run's log pasted after a Megatron one), is refused
// naming what was found where, so the user says which with --format. NeMo's progress line
// reads "iteration 10/99 |" as Megatron's does: Megatron's marks are its banner and its
// elapsed-time field, which NeMo never prints.
#include <cstddef>
#include <string>
#include <vector>

namespace ibt::suites {

// The formats import-log reads, in the order messages list them.
inline constexpr const char* kLogFormatNames[] = {"megatron", "nemo", "torchtitan"};

// What each format is known by, as messages and help say it.
inline constexpr const char* kLogFormatMarks[] = {
    "the arguments banner '---- arguments ----' or 'iteration N/ M | ... elapsed time per iteration (ms)' lines",
    "'Experiment configuration' (the YAML dump) or 'train_step_timing in s' lines",
    "'step: N  loss: X ... tps: N' metrics lines"};

// A format's first mark in a log.
struct LogFormatMark {
  std::string format;    // one of kLogFormatNames
  std::size_t line = 0;  // 1-based line of the log
  std::string evidence;  // what was seen there, e.g. "the arguments banner"
};

// The first mark of every format the log carries, in kLogFormatNames order.
std::vector<LogFormatMark> find_log_format_marks(const std::string& text);

// The one format whose marks the log carries, and where. UsageError naming `file` when
// no format's mark is there (saying what each is known by) or when several formats' are
// (naming each with its line); both end by suggesting --format.
LogFormatMark detect_log_format(const std::string& text, const std::string& file);

}  // namespace ibt::suites
