#include "gpu_test_support.hpp"

namespace {
// GoogleTest owns the environment; registering at static-initialisation time works with
// gtest_main, which runs RUN_ALL_TESTS later.
[[maybe_unused]] ::testing::Environment* const kMpi =
    ::testing::AddGlobalTestEnvironment(new ibt::testing_gpu::MpiEnvironment);
}  // namespace
