// The log parsers of `ibt import-log` on logs written here: a 2 MB line of one character
// (what overflowed std::regex's recursion) read in linear time, layouts and batches
// outside their meaning refused with the argument named, step numbers beyond int64, YAML
// and TOML errors with a line, and SHA-256 on the FIPS 180-2 example.
#include <gtest/gtest.h>

#include <string>

#include "core/errors.hpp"
#include "reports/ingest/sha256.hpp"
#include "reports/ingest/training_log.hpp"

namespace ibt::suites {
namespace {

// A Megatron log with the arguments given (name, value) and two iteration lines.
std::string megatron_log(const std::vector<std::pair<std::string, std::string>>& overrides = {},
                         const std::string& extra_line = "") {
  std::map<std::string, std::string> args = {{"tensor_model_parallel_size", "2"},
                                             {"pipeline_model_parallel_size", "2"},
                                             {"data_parallel_size", "4"},
                                             {"world_size", "16"},
                                             {"micro_batch_size", "1"},
                                             {"global_batch_size", "64"},
                                             {"num_layers", "32"},
                                             {"hidden_size", "4096"},
                                             {"seq_length", "8192"}};
  for (const auto& [k, v] : overrides) args[k] = v;
  std::string text = "------------------------ arguments ------------------------\n";
  for (const auto& [k, v] : args) text += "  " + k + " ......... " + v + "\n";
  text += "-------------------- end of arguments ---------------------\n";
  text += extra_line + "\n";
  text += " [t] iteration       10/     100 | elapsed time per iteration (ms): 7000.0 | global batch size:    64 |\n";
  text += " [t] iteration       20/     100 | elapsed time per iteration (ms): 7100.0 | global batch size:    64 |\n";
  return text;
}

TrainingLog megatron(const std::string& text) { return parse_megatron_log({text, "m.log", "", "", 0}); }

// The UsageError message of `f`, or "" when it throws none.
template <class F>
std::string usage_error(F f) {
  try {
    f();
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

TEST(Ingest, LongLinesOfOneCharacterAreReadInLinearTime) {
  // Each line once in every format: std::regex recursed per character and died (SIGSEGV).
  const std::string lines[] = {std::string(2u << 20, ' '), std::string(1u << 20, '.'), std::string(300000, '7'),
                               "iteration " + std::string(300000, ' ') + "|"};
  for (const std::string& line : lines) {
    const TrainingLog m = megatron(megatron_log({}, line));
    EXPECT_EQ(m.iterations.size(), 2u);
    const std::string yaml =
        "trainer:\n  devices: 8\n  num_nodes: 2\nmodel:\n  tensor_model_parallel_size: 2\n"
        "  pipeline_model_parallel_size: 2\n";
    const std::string nemo_text = line + "\nglobal_step: 5 | train_step_timing in s: 7.0 | " + line + "\n";
    const TrainingLog n = parse_nemo_log({nemo_text, "n.log", yaml, "n.yaml", 0});
    ASSERT_EQ(n.iterations.size(), 1u);
    EXPECT_EQ(n.iterations[0].iteration, 5);
    const std::string toml =
        "[model]\nname = \"llama3\"\nflavor = \"8B\"\n[training]\nlocal_batch_size = 16\nseq_len = 8192\n"
        "[parallelism]\ndata_parallel_shard_degree = 4\ntensor_parallel_degree = 2\npipeline_parallel_degree = 2\n";
    const std::string titan = line + "\nstep: 3  loss: 7.0  tps: 4,096  tflops: 200.0 " + line + "\n";
    const TrainingLog t = parse_torchtitan_log({titan, "t.log", toml, "t.toml", 0});
    ASSERT_EQ(t.iterations.size(), 1u);
    EXPECT_EQ(t.iterations[0].iteration, 3);
  }
}

TEST(Ingest, ALineLongerThanTheBoundIsRefusedWithItsNumber) {
  const std::string msg = usage_error([] { megatron(megatron_log({}, std::string(kMaxLogLineBytes + 1, '.'))); });
  EXPECT_NE(msg.find("m.log:12: a line of 4194305 bytes, more than the 4194304"), std::string::npos) << msg;
}

TEST(Ingest, LayoutsOutsideTheirMeaningAreRefused) {
  const struct {
    const char* name;
    const char* value;
    const char* expected;
  } cases[] = {
      {"tensor_model_parallel_size", "4294967298",
       "'tensor_model_parallel_size' is 4294967298, out of range (it must be 1 .. 2147483647)"},
      {"tensor_model_parallel_size", "0", "'tensor_model_parallel_size' is 0, out of range"},
      {"global_batch_size", "0", "'global_batch_size' is 0, out of range"},
      {"global_batch_size", "-64", "'global_batch_size' is -64, out of range"},
      {"global_batch_size", "9e18", "'global_batch_size' is '9e18', out of range"},
      {"global_batch_size", "99999999999999999999", "beyond a 64-bit integer"},
      {"global_batch_size", "64.5", "'global_batch_size' is '64.5', not a whole number"},
      {"virtual_pipeline_model_parallel_size", "-3", "'virtual_pipeline_model_parallel_size' is -3, out of range"},
      {"pipeline_model_parallel_size", "65536", "tensor x pipeline parallel size is beyond 2147483647"},
      {"global_batch_size", "50", "global_batch_size 50 is not a whole number (1 or more) of micro-batches"},
      {"world_size", "8", "world_size 8 is not data x tensor x pipeline x context parallel sizes (16)"},
  };
  for (const auto& c : cases) {
    auto overrides = std::vector<std::pair<std::string, std::string>>{{c.name, c.value}};
    if (std::string(c.name) == "pipeline_model_parallel_size")
      overrides.push_back({"tensor_model_parallel_size", "65536"});
    const std::string msg = usage_error([&] { read_log_layout(megatron(megatron_log(overrides))); });
    EXPECT_NE(msg.find(c.expected), std::string::npos) << c.name << "=" << c.value << ": " << msg;
    EXPECT_EQ(msg.rfind("m.log", 0), 0u) << msg;
  }
  const LogLayout fine = read_log_layout(megatron(megatron_log()));
  EXPECT_EQ(fine.dp * fine.tp * fine.pp, 16);
  EXPECT_EQ(fine.microbatches, 16);
}

TEST(Ingest, AStepNumberBeyondInt64IsRefusedNamingTheLine) {
  std::string text = megatron_log();
  text += " [t] iteration 99999999999999999999/ 100 | elapsed time per iteration (ms): 7000.0 |\n";
  const std::string msg = usage_error([&] { megatron(text); });
  EXPECT_NE(msg.find("m.log:15: the iteration number is '99999999999999999999', beyond a 64-bit integer"),
            std::string::npos)
      << msg;
  const std::string nemo = usage_error([] {
    parse_nemo_log({"global_step: 99999999999999999999 | train_step_timing in s: 7.0\n", "n.log",
                    "trainer:\n  devices: 8\n", "n.yaml", 0});
  });
  EXPECT_NE(nemo.find("n.log:1: the step number"), std::string::npos) << nemo;
}

TEST(Ingest, TorchtitanBatchesAndDegreesOutsideTheirMeaningAreRefused) {
  const std::string base = "[model]\nname = \"llama3\"\nflavor = \"8B\"\n[training]\nseq_len = 8192\n";
  const std::string log = "step: 3  loss: 7.0  tps: 4,096  tflops: 200.0\n";
  const struct {
    std::string toml, expected;
  } cases[] = {
      {base + "local_batch_size = 0\n[parallelism]\ndata_parallel_shard_degree = 4\n",
       "t.toml: training.local_batch_size (or batch_size) must be 1 or more sequences"},
      {base + "local_batch_size = 2\nglobal_batch_size = 0\n[parallelism]\ndata_parallel_shard_degree = 4\n",
       "training.global_batch_size must be 1 or more"},
      {base +
           "local_batch_size = 2\n[parallelism]\ndata_parallel_shard_degree = 4\ntensor_parallel_degree = 4294967298\n",
       "'parallelism.tensor_parallel_degree' is 4294967298, out of range"},
      {base + "local_batch_size = 2\n[parallelism]\ndata_parallel_shard_degree = 4\ntensor_parallel_degree = -1\n"
              "pipeline_parallel_degree = -1\n",
       "parallelism.tensor_parallel_degree is -1: a degree is 1 or more"},
      {base + "local_batch_size = 2\n[parallelism]\ndata_parallel_shard_degree = 4\ntensor_parallel_degree = 2.0\n",
       "'parallelism.tensor_parallel_degree' is not a whole number"},
      {base + "local_batch_size = 2\n[parallelism\n", "t.toml:7: not TOML"},
  };
  for (const auto& c : cases) {
    const std::string msg = usage_error([&] { parse_torchtitan_log({log, "t.log", c.toml, "t.toml", 0}); });
    EXPECT_NE(msg.find(c.expected), std::string::npos) << c.toml << "\n -> " << msg;
  }
}

TEST(Ingest, NemoYamlIsReadByYamlCpp) {
  // Flow style and quoting, which the line reader before yaml-cpp never read.
  const std::string yaml =
      "trainer: {devices: 8, num_nodes: 2}\nmodel:\n  tensor_model_parallel_size: \"2\"\n"
      "  virtual_pipeline_model_parallel_size: ~\n  sequence_parallel: true\n";
  const TrainingLog n = parse_nemo_log({"global_step: 5 | train_step_timing in s: 7.0\n", "n.log", yaml, "n.yaml", 0});
  EXPECT_EQ(n.arguments.at("world_size"), "16");
  EXPECT_EQ(n.arguments.at("tensor_model_parallel_size"), "2");
  EXPECT_EQ(n.arguments.at("virtual_pipeline_model_parallel_size"), "None");
  EXPECT_EQ(n.arguments.at("sequence_parallel"), "True");
  const std::string msg = usage_error([] {
    parse_nemo_log(
        {"global_step: 5 | train_step_timing in s: 7.0\n", "n.log", "trainer:\n  devices: [8\n", "n.yaml", 0});
  });
  EXPECT_NE(msg.find("n.yaml:"), std::string::npos) << msg;
  EXPECT_NE(msg.find("not YAML"), std::string::npos) << msg;
}

TEST(Ingest, Sha256IsFips180Example) {
  // FIPS 180-2, appendix B.1: SHA-256("abc").
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

}  // namespace
}  // namespace ibt::suites
