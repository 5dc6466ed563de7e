#pragma once
// Which kernels run the cuda executor's attention core (`ibt train --cuda-attention`):
// threads, one thread per output (train_kernels.hpp, checked on an H200), or gemm, cuBLAS
// batched GEMMs (attention_gemm.hpp). No CUDA here, so a build without CUDA parses the
// flag the same way before it refuses the executor.
#include <string>

#include "core/errors.hpp"

namespace ibt::gpu {

enum class AttentionKernels { threads, gemm };

inline AttentionKernels parse_attention_kernels(const std::string& s) {
  if (s == "threads") return AttentionKernels::threads;
  if (s == "gemm") return AttentionKernels::gemm;
  throw UsageError("--cuda-attention '" + s + "': expected threads or gemm");
}

}  // namespace ibt::gpu
