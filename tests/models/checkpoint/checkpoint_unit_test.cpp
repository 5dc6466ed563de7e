// shard_io and manifest without MPI: round trips, and that every way a checkpoint can be
// incomplete or damaged is detected and named.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "core/errors.hpp"
#include "models/checkpoint/manifest.hpp"
#include "models/checkpoint/shard_io.hpp"

namespace ibt::checkpoint {
namespace {

namespace fs = std::filesystem;

class CheckpointFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("ibt_ckpt_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  static models::TrainingState sample_state() {
    models::TrainingState s;
    s.steps_done = 7;
    s.optimizer_steps = 7;
    s.seed = 1234;
    s.arrays.push_back({"params/c0/embed.weight", {1.5f, -2.25f, 3.0f, 1e-30f}});
    s.arrays.push_back({"adam_m/c0/embed.weight", {0.1f, 0.2f, 0.3f, 0.4f}});
    s.arrays.push_back({"moe_bias/c0/layer0", {}});
    s.arrays.push_back({"zero1/bucket0/v", std::vector<float>(1000, 0.5f)});
    return s;
  }

  // A step directory with one shard per rank and its manifest.
  Manifest write_checkpoint(std::int64_t step, int ranks) {
    const fs::path step_dir = dir_ / step_dir_name(step);
    fs::create_directories(step_dir);
    Manifest m;
    m.step = step;
    m.identity = {"tiny-dense", "dp2 tp1 pp1", ranks, 1234, 3e-3, "synthetic"};
    for (int r = 0; r < ranks; ++r) {
      models::TrainingState s = sample_state();
      s.steps_done = step;
      const ShardWrite w = write_shard((step_dir / shard_file_name(r)).string(), s);
      m.shards.push_back({r, shard_file_name(r), w.bytes, w.checksum});
    }
    write_manifest(step_dir.string(), m);
    return m;
  }

  fs::path dir_;
};

TEST_F(CheckpointFiles, ShardRoundTripIsExact) {
  const models::TrainingState s = sample_state();
  const std::string path = (dir_ / "rank-00000.h5").string();
  const ShardWrite w = write_shard(path, s);
  EXPECT_EQ(w.bytes, fs::file_size(path));
  EXPECT_EQ(w.checksum, file_checksum(path));
  EXPECT_GE(w.write_seconds, 0.0);
  const models::TrainingState back = read_shard(path);
  EXPECT_EQ(back.steps_done, 7);
  EXPECT_EQ(back.optimizer_steps, 7);
  EXPECT_EQ(back.seed, 1234u);
  ASSERT_EQ(back.arrays.size(), s.arrays.size());
  for (size_t i = 0; i < s.arrays.size(); ++i) {
    EXPECT_EQ(back.arrays[i].name, s.arrays[i].name);
    EXPECT_EQ(back.arrays[i].data, s.arrays[i].data);  // bit-exact floats
  }
}

TEST_F(CheckpointFiles, EvictionReportsAResidentFractionAndKeepsTheData) {
  const models::TrainingState s = sample_state();
  const std::string path = (dir_ / "rank-00000.h5").string();
  const ShardWrite w = write_shard(path, s);
  const double resident = evict_from_page_cache(path);
  EXPECT_GE(resident, 0.0);
  EXPECT_LE(resident, 1.0);
  EXPECT_EQ(file_checksum(path), w.checksum);  // dropping cached pages never changes the file
  EXPECT_THROW(evict_from_page_cache((dir_ / "missing.h5").string()), RuntimeError);
}

TEST_F(CheckpointFiles, ReadShardRefusesMissingAndForeignFiles) {
  EXPECT_THROW(read_shard((dir_ / "nope.h5").string()), UsageError);
  std::ofstream((dir_ / "text.h5").string()) << "not hdf5";
  try {
    read_shard((dir_ / "text.h5").string());
    FAIL() << "a text file was read as a shard";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("not an HDF5 file"), std::string::npos) << e.what();
  }
}

TEST_F(CheckpointFiles, ChecksumChangesWithOneByte) {
  const std::string path = (dir_ / "a.bin").string();
  std::ofstream(path) << "abcdef";
  const std::string before = file_checksum(path);
  std::ofstream(path) << "abcdeg";
  EXPECT_NE(before, file_checksum(path));
  EXPECT_EQ(before.rfind("crc32:", 0), 0u);
}

TEST_F(CheckpointFiles, ManifestRoundTripAndNoTempLeft) {
  const Manifest m = write_checkpoint(4, 3);
  const Manifest back = read_manifest((dir_ / "step-000004").string());
  EXPECT_EQ(back.step, 4);
  EXPECT_TRUE(back.identity == m.identity);
  ASSERT_EQ(back.shards.size(), 3u);
  for (size_t r = 0; r < 3; ++r) {
    EXPECT_EQ(back.shards[r].file, m.shards[r].file);
    EXPECT_EQ(back.shards[r].bytes, m.shards[r].bytes);
    EXPECT_EQ(back.shards[r].checksum, m.shards[r].checksum);
  }
  EXPECT_FALSE(fs::exists(dir_ / "step-000004" / "manifest.json.tmp"));
}

TEST_F(CheckpointFiles, LatestCompleteSkipsDirectoriesWithoutManifest) {
  write_checkpoint(2, 2);
  write_checkpoint(4, 2);
  fs::create_directories(dir_ / "step-000006");  // a writer died before the manifest
  std::ofstream((dir_ / "step-000006" / "manifest.json.tmp").string()) << "{";
  const LatestCheckpoint latest = find_latest_complete(dir_.string());
  EXPECT_EQ(fs::path(latest.step_dir).filename(), "step-000004");
  ASSERT_EQ(latest.skipped.size(), 1u);
  EXPECT_EQ(fs::path(latest.skipped[0]).filename(), "step-000006");
}

TEST_F(CheckpointFiles, NoCompleteCheckpointNamesWhatIsMissing) {
  fs::create_directories(dir_ / "step-000002");
  try {
    find_latest_complete(dir_.string());
    FAIL() << "a directory without manifests was accepted";
  } catch (const UsageError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("no complete checkpoint"), std::string::npos) << what;
    EXPECT_NE(what.find("step-000002"), std::string::npos) << what;
    EXPECT_NE(what.find("manifest.json"), std::string::npos) << what;
  }
  EXPECT_THROW(find_latest_complete((dir_ / "missing").string()), UsageError);
}

TEST_F(CheckpointFiles, VerifyShardNamesTruncationAndDamage) {
  const Manifest m = write_checkpoint(2, 2);
  const std::string step_dir = (dir_ / "step-000002").string();
  EXPECT_EQ(verify_shard(step_dir, m.shards[0]), "");
  EXPECT_EQ(verify_shard(step_dir, m.shards[1]), "");
  const fs::path shard1 = dir_ / "step-000002" / "rank-00001.h5";
  // Damage: flip one byte in the middle, same size.
  {
    std::fstream f(shard1, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(static_cast<std::streamoff>(m.shards[1].bytes / 2));
    char c = 0;
    f.read(&c, 1);
    c = static_cast<char>(c ^ 0x5a);
    f.seekp(static_cast<std::streamoff>(m.shards[1].bytes / 2));
    f.write(&c, 1);
  }
  std::string why = verify_shard(step_dir, m.shards[1]);
  EXPECT_NE(why.find("rank-00001.h5"), std::string::npos) << why;
  EXPECT_NE(why.find("checksum"), std::string::npos) << why;
  // Truncation.
  fs::resize_file(shard1, m.shards[1].bytes - 100);
  why = verify_shard(step_dir, m.shards[1]);
  EXPECT_NE(why.find("bytes, the manifest says"), std::string::npos) << why;
  fs::remove(shard1);
  EXPECT_NE(verify_shard(step_dir, m.shards[1]).find("missing"), std::string::npos);
}

TEST_F(CheckpointFiles, ManifestRefusesBrokenJsonAndWrongShardCount) {
  write_checkpoint(2, 2);
  const fs::path manifest = dir_ / "step-000002" / "manifest.json";
  std::ofstream(manifest.string()) << "{\"format\": \"ibt-checkpoint\", \"vers";
  EXPECT_THROW(read_manifest((dir_ / "step-000002").string()), UsageError);
  std::ofstream(manifest.string())
      << R"({"format":"ibt-checkpoint","version":1,"step":2,"identity":{"model":"m","split":"s","world_size":2,)"
      << R"("seed":1,"lr":0.1,"data":"d"},"shards":[{"rank":0,"file":"rank-00000.h5","bytes":1,"checksum":"x"}]})";
  try {
    read_manifest((dir_ / "step-000002").string());
    FAIL() << "a manifest with 1 shard for 2 ranks was accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("lists 1 shards for a world of 2 ranks"), std::string::npos) << e.what();
  }
}

TEST(CheckpointIdentity, MismatchNamesFieldAndBothValues) {
  const RunIdentity a{"tiny-dense", "dp4 tp1 pp1", 4, 1234, 3e-3, "synthetic"};
  RunIdentity b = a;
  EXPECT_EQ(identity_mismatch(a, b), "");
  b.split = "dp2 tp1 pp2";
  EXPECT_EQ(identity_mismatch(a, b), "split: the checkpoint has 'dp4 tp1 pp1', this run has 'dp2 tp1 pp2'");
  b = a;
  b.world_size = 2;
  EXPECT_EQ(identity_mismatch(a, b), "world size: the checkpoint has 4 ranks, this run has 2 ranks");
  b = a;
  b.lr = 1e-3;
  EXPECT_NE(identity_mismatch(a, b).find("lr: the checkpoint has 0.003"), std::string::npos);
  b = a;
  b.seed = 7;
  EXPECT_EQ(identity_mismatch(a, b), "seed: the checkpoint has 1234, this run has 7");
}

}  // namespace
}  // namespace ibt::checkpoint
