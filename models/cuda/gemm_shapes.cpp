#include "models/cuda/gemm_shapes.hpp"

#include <charconv>

#include "core/errors.hpp"

namespace ibt::gpu {
namespace {

std::int64_t parse_dim(std::string_view text, std::string_view entry) {
  std::int64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || v <= 0)
    throw UsageError("--shapes: '" + std::string(entry) + "' is not MxNxK with positive integers");
  return v;
}

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> parts;
  std::size_t start = 0;
  while (true) {
    const std::size_t at = s.find(sep, start);
    parts.push_back(s.substr(start, at - start));
    if (at == std::string_view::npos) break;
    start = at + 1;
  }
  return parts;
}

// One linear layer y = x W^T with x [tokens x in] and W [out x in]: the forward product,
// the input gradient dx = dy W and the weight gradient dW = dy^T x.
void add_linear(std::vector<GemmShape>& out, const std::string& name, std::int64_t tokens, std::int64_t in,
                std::int64_t out_features) {
  out.push_back({name + ".fwd", tokens, out_features, in});
  out.push_back({name + ".dgrad", tokens, in, out_features});
  out.push_back({name + ".wgrad", out_features, in, tokens});
}

}  // namespace

std::string_view to_string(GemmPrecision p) { return p == GemmPrecision::bf16 ? "bf16" : "fp8_e4m3"; }

GemmPrecision parse_gemm_precision(std::string_view name) {
  if (name == "bf16" || name == "bfloat16") return GemmPrecision::bf16;
  if (name == "fp8" || name == "fp8_e4m3" || name == "e4m3") return GemmPrecision::fp8_e4m3;
  throw UsageError("--dtype: '" + std::string(name) + "' is not a GEMM precision (bf16, fp8)");
}

std::vector<GemmPrecision> parse_gemm_precisions(std::string_view csv) {
  std::vector<GemmPrecision> out;
  for (std::string_view part : split(csv, ',')) out.push_back(parse_gemm_precision(part));
  return out;
}

std::vector<GemmShape> parse_shapes(std::string_view csv) {
  std::vector<GemmShape> shapes;
  for (std::string_view entry : split(csv, ',')) {
    const auto dims = split(entry, 'x');
    if (dims.size() != 3)
      throw UsageError("--shapes: '" + std::string(entry) + "' is not MxNxK with positive integers");
    shapes.push_back(
        {std::string(entry), parse_dim(dims[0], entry), parse_dim(dims[1], entry), parse_dim(dims[2], entry)});
  }
  return shapes;
}

std::vector<GemmShape> training_shapes(const TransformerDims& d) {
  if (d.tokens <= 0 || d.hidden <= 0 || d.ffn_hidden <= 0 || d.kv_hidden <= 0)
    throw UsageError("training shapes need positive --tokens, --hidden, --ffn and --kv-hidden");
  std::vector<GemmShape> shapes;
  add_linear(shapes, "qkv", d.tokens, d.hidden, d.hidden + 2 * d.kv_hidden);
  add_linear(shapes, "attn_out", d.tokens, d.hidden, d.hidden);
  add_linear(shapes, "mlp_up", d.tokens, d.hidden, (d.gated_mlp ? 2 : 1) * d.ffn_hidden);
  add_linear(shapes, "mlp_down", d.tokens, d.ffn_hidden, d.hidden);
  return shapes;
}

}  // namespace ibt::gpu
