// import-log's format detection (reports/ingest/log_format.hpp) on logs written here: each
// format known by its own lines, NeMo's "iteration N/M |" progress not taken for Megatron's,
// torchtitan's validation line not taken for a training step, and a log with no format's
// lines or with two formats' refused naming what it found on which line.
#include "reports/ingest/log_format.hpp"

#include <gtest/gtest.h>

#include <string>

#include "core/errors.hpp"

namespace ibt::suites {
namespace {

std::string refusal(const std::string& text) {
  try {
    detect_log_format(text, "x.log");
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

const char* kBanner = "------------------------ arguments ------------------------\n";
const char* kMegatronStep =
    " [2026-11-28 06:00:10] iteration       10/     100 | consumed samples: 640 | elapsed time per iteration (ms): "
    "7000.0 | global batch size:    64 |\n";
const char* kNemoStep =
    "Training epoch 0, iteration 10/99 | lr: 3e-05 | global_step: 10 | train_step_timing in s: 9.1 | "
    "consumed_samples: 704\n";
const char* kTitanStep =
    "[titan] 2026-11-28 06:01:00,000 - root - INFO - \x1b[31mstep: 10  \x1b[32mloss:  9.1000  \x1b[34mtps: 5,120  "
    "\x1b[36mtflops: 258.00\n";

TEST(LogFormat, EachFormatByItsOwnLines) {
  const LogFormatMark banner = detect_log_format(std::string("using world size: 16\n") + kBanner, "m.log");
  EXPECT_EQ(banner.format, "megatron");
  EXPECT_EQ(banner.line, 2u);
  EXPECT_EQ(banner.evidence, "the arguments banner");
  // A log cut before its banner (or one whose banner scrolled away) by its step lines.
  const LogFormatMark steps = detect_log_format(kMegatronStep, "m.log");
  EXPECT_EQ(steps.format, "megatron");
  EXPECT_NE(steps.evidence.find("elapsed time per iteration"), std::string::npos);
  EXPECT_EQ(detect_log_format("[NeMo I] x\n\n************** Experiment configuration ***********\n", "n.log").format,
            "nemo");
  // NeMo 2.0: no dump, its progress line says "iteration 10/99 |" as Megatron's does.
  const LogFormatMark nemo2 = detect_log_format(std::string("[NeMo I] start\n") + kNemoStep, "n.log");
  EXPECT_EQ(nemo2.format, "nemo");
  EXPECT_EQ(nemo2.line, 2u);
  // The tqdm bar's key=value form, redrawn with '\r'.
  EXPECT_EQ(detect_log_format("Epoch 0: 10%|#| 10/99 [global_step=9.00, train_step_timing in s=7.0]\r", "n.log").format,
            "nemo");
  const LogFormatMark titan = detect_log_format(std::string("[titan] Starting job\r\n") + kTitanStep, "t.log");
  EXPECT_EQ(titan.format, "torchtitan");
  EXPECT_EQ(titan.line, 2u);
}

TEST(LogFormat, LookalikesAreNoMark) {
  // torchtitan's validation metrics have the shape of a step line but are not one.
  EXPECT_NE(refusal("\x1b[33mvalidate step: 30  \x1b[32mloss:  7.5000  \x1b[34mtps: 9,000\n"), "");
  // Megatron's banner only as a line of its own; an iteration line needs the elapsed time.
  EXPECT_NE(refusal("see the ---- arguments ---- block\niteration 10/100 | lr: 3e-05 |\n"), "");
  // "step:" inside a word, as NeMo's "global_step: 10" is, is not torchtitan's.
  EXPECT_NE(refusal("global_step: 10 | loss: 2 | tps: 5\n"), "");
}

TEST(LogFormat, NoMarkIsRefusedSayingWhatEachFormatShows) {
  const std::string message = refusal("hello\nworld\n");
  EXPECT_NE(message.find("x.log: no line shows which framework wrote this log"), std::string::npos) << message;
  for (const char* f : kLogFormatNames) EXPECT_NE(message.find(f), std::string::npos) << f << ": " << message;
  EXPECT_NE(message.find("elapsed time per iteration (ms)"), std::string::npos) << message;
  EXPECT_NE(message.find("say which with --format megatron|nemo|torchtitan"), std::string::npos) << message;
  EXPECT_NE(refusal(""), "");
}

TEST(LogFormat, TwoFormatsAreRefusedNamingEachWithItsLine) {
  const std::string text = std::string(kBanner) + kMegatronStep + "next run\n" + kNemoStep;
  const std::string message = refusal(text);
  EXPECT_NE(message.find("x.log: the log has the marks of 2 formats, megatron (line 1: the arguments banner) and "
                         "nemo (line 4: a 'train_step_timing in s' metric)"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("with --format megatron or --format nemo"), std::string::npos) << message;
  const std::string three = refusal(text + kTitanStep);
  EXPECT_NE(three.find("marks of 3 formats, megatron (line 1"), std::string::npos) << three;
  EXPECT_NE(three.find("--format megatron, --format nemo or --format torchtitan"), std::string::npos) << three;
  ASSERT_EQ(find_log_format_marks(text + kTitanStep).size(), 3u);
  EXPECT_EQ(find_log_format_marks(text + kTitanStep)[2].line, 5u);
}

}  // namespace
}  // namespace ibt::suites
