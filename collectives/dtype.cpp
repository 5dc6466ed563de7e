#include "collectives/dtype.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

#include "core/errors.hpp"

namespace ibt {
namespace {

struct DTypeInfo {
  DType type;
  std::string_view name;
  std::size_t bytes;
  bool floating;
  bool mpi;
};

constexpr std::array<DTypeInfo, 7> kDTypes{{
    {DType::float32, "float32", 4, true, true},
    {DType::float64, "float64", 8, true, true},
    {DType::int32, "int32", 4, false, true},
    {DType::bfloat16, "bfloat16", 2, true, true},
    {DType::float16, "float16", 2, true, true},
    {DType::fp8_e4m3, "fp8_e4m3", 1, true, false},
    {DType::fp8_e5m2, "fp8_e5m2", 1, true, false},
}};

const DTypeInfo& info(DType t) {
  for (const auto& i : kDTypes)
    if (i.type == t) return i;
  throw RuntimeError("unknown dtype value");
}

// Short aliases users of nccl-tests and PyTorch type.
struct Alias {
  std::string_view alias;
  DType type;
};
constexpr std::array<Alias, 11> kAliases{{{"float", DType::float32},
                                          {"fp32", DType::float32},
                                          {"double", DType::float64},
                                          {"fp64", DType::float64},
                                          {"int", DType::int32},
                                          {"bf16", DType::bfloat16},
                                          {"half", DType::float16},
                                          {"fp16", DType::float16},
                                          {"e4m3", DType::fp8_e4m3},
                                          {"f8e4m3", DType::fp8_e4m3},
                                          {"f8e5m2", DType::fp8_e5m2}}};

}  // namespace

std::string_view to_string(DType t) { return info(t).name; }

std::string_view to_string(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum: return "sum";
    case ReduceOp::max: return "max";
    case ReduceOp::min: return "min";
    case ReduceOp::prod: return "prod";
    case ReduceOp::avg: return "avg";
  }
  return "?";
}

DType parse_dtype(std::string_view name) {
  for (const auto& i : kDTypes)
    if (i.name == name) return i.type;
  for (const auto& a : kAliases)
    if (a.alias == name) return a.type;
  throw UsageError("unknown dtype '" + std::string(name) +
                   "' (expected float32, float64, int32, bfloat16, float16, fp8_e4m3, fp8_e5m2)");
}

ReduceOp parse_reduce_op(std::string_view name) {
  if (name == "sum") return ReduceOp::sum;
  if (name == "max") return ReduceOp::max;
  if (name == "min") return ReduceOp::min;
  if (name == "prod") return ReduceOp::prod;
  if (name == "avg") return ReduceOp::avg;
  throw UsageError("unknown reduce op '" + std::string(name) + "' (expected sum, prod, min, max or avg)");
}

std::vector<DType> parse_dtype_list(std::string_view csv) {
  std::vector<DType> out;
  std::size_t start = 0;
  while (start <= csv.size()) {
    auto end = csv.find(',', start);
    if (end == std::string_view::npos) end = csv.size();
    auto item = csv.substr(start, end - start);
    if (item.empty()) throw UsageError("empty entry in dtype list '" + std::string(csv) + "'");
    out.push_back(parse_dtype(item));
    start = end + 1;
  }
  return out;
}

std::size_t size_of(DType t) { return info(t).bytes; }
bool is_floating(DType t) { return info(t).floating; }
bool mpi_supports(DType t) { return info(t).mpi; }

std::uint16_t float_to_bf16(float f) {
  auto bits = std::bit_cast<std::uint32_t>(f);
  if (std::isnan(f)) return static_cast<std::uint16_t>((bits >> 16) | 0x40);
  const std::uint32_t rounding = 0x7FFF + ((bits >> 16) & 1);  // nearest, ties to even
  return static_cast<std::uint16_t>((bits + rounding) >> 16);
}

float bf16_to_float(std::uint16_t b) { return std::bit_cast<float>(std::uint32_t{b} << 16); }

std::uint16_t float_to_fp16(float f) {
  const auto bits = std::bit_cast<std::uint32_t>(f);
  const std::uint32_t sign = (bits >> 16) & 0x8000;
  std::uint32_t mant = bits & 0x7FFFFF;
  const int exp = static_cast<int>((bits >> 23) & 0xFF);
  if (exp == 0xFF) return static_cast<std::uint16_t>(sign | 0x7C00 | (mant ? 0x200 : 0));
  int e = exp - 127 + 15;
  if (e >= 0x1F) return static_cast<std::uint16_t>(sign | 0x7C00);  // overflow -> inf
  if (e <= 0) {                                                     // subnormal or zero
    if (e < -10) return static_cast<std::uint16_t>(sign);
    mant |= 0x800000;
    const int shift = 14 - e;
    std::uint32_t half = mant >> shift;
    const std::uint32_t rem = mant & ((1u << shift) - 1);
    const std::uint32_t midpoint = 1u << (shift - 1);
    if (rem > midpoint || (rem == midpoint && (half & 1))) ++half;
    return static_cast<std::uint16_t>(sign | half);
  }
  std::uint32_t half = (static_cast<std::uint32_t>(e) << 10) | (mant >> 13);
  const std::uint32_t rem = mant & 0x1FFF;
  if (rem > 0x1000 || (rem == 0x1000 && (half & 1))) ++half;  // may carry into exponent: correct
  return static_cast<std::uint16_t>(sign | half);
}

float fp16_to_float(std::uint16_t h) {
  const std::uint32_t sign = (std::uint32_t{h} & 0x8000) << 16;
  const std::uint32_t exp = (h >> 10) & 0x1F;
  std::uint32_t mant = h & 0x3FF;
  if (exp == 0) {
    if (mant == 0) return std::bit_cast<float>(sign);
    float v = std::ldexp(static_cast<float>(mant), -24);
    return sign ? -v : v;
  }
  if (exp == 0x1F) return std::bit_cast<float>(sign | 0x7F800000 | (mant << 13));
  return std::bit_cast<float>(sign | ((exp - 15 + 127) << 23) | (mant << 13));
}

namespace {
// OCP fp8 formats, decoded through a small generic routine (checks only, not a hot path).
float fp8_to_float(std::uint8_t v, int exp_bits, int bias, bool e4m3) {
  const int mant_bits = 7 - exp_bits;
  const int sign = v >> 7;
  const int exp = (v >> mant_bits) & ((1 << exp_bits) - 1);
  const int mant = v & ((1 << mant_bits) - 1);
  float out;
  if (e4m3 && exp == 0xF && mant == 0x7) return std::numeric_limits<float>::quiet_NaN();
  if (!e4m3 && exp == 0x1F) return mant ? std::numeric_limits<float>::quiet_NaN() : (sign ? -INFINITY : INFINITY);
  if (exp == 0)
    out = std::ldexp(static_cast<float>(mant), 1 - bias - mant_bits);
  else
    out = std::ldexp(1.0f + static_cast<float>(mant) / (1 << mant_bits), exp - bias);
  return sign ? -out : out;
}
// Nearest fp8 code to f (ties to the even code), by binary search over the finite
// codes sorted by value: checks of large fp8 buffers convert millions of elements.
std::uint8_t float_to_fp8(float f, bool e4m3) {
  if (std::isnan(f)) return e4m3 ? 0x7F : 0x7E;
  struct Code {
    float value;
    std::uint8_t code;
  };
  static const auto tables = [] {
    std::array<std::vector<Code>, 2> t;
    for (int variant = 0; variant < 2; ++variant) {
      const bool is_e4m3 = variant == 0;
      for (int c = 0; c < 256; ++c) {
        const float v = fp8_to_float(static_cast<std::uint8_t>(c), is_e4m3 ? 4 : 5, is_e4m3 ? 7 : 15, is_e4m3);
        if (std::isnan(v) || std::isinf(v) || (v == 0 && (c & 0x80))) continue;  // one zero, no -0
        t[variant].push_back({v, static_cast<std::uint8_t>(c)});
      }
      std::sort(t[variant].begin(), t[variant].end(), [](const Code& a, const Code& b) { return a.value < b.value; });
    }
    return t;
  }();
  const auto& table = tables[e4m3 ? 0 : 1];
  auto hi = std::lower_bound(table.begin(), table.end(), f, [](const Code& c, float v) { return c.value < v; });
  if (hi == table.begin()) return hi->code;         // below the most negative value: saturate
  if (hi == table.end()) return table.back().code;  // above the largest: saturate
  auto lo = hi - 1;
  const float down = f - lo->value, up = hi->value - f;
  if (down < up) return lo->code;
  if (up < down) return hi->code;
  return (lo->code & 1) == 0 ? lo->code : hi->code;
}
}  // namespace

double load_element(const void* buf, std::size_t i, DType t) {
  switch (t) {
    case DType::float32: return static_cast<const float*>(buf)[i];
    case DType::float64: return static_cast<const double*>(buf)[i];
    case DType::int32: return static_cast<const std::int32_t*>(buf)[i];
    case DType::bfloat16: return bf16_to_float(static_cast<const std::uint16_t*>(buf)[i]);
    case DType::float16: return fp16_to_float(static_cast<const std::uint16_t*>(buf)[i]);
    case DType::fp8_e4m3: return fp8_to_float(static_cast<const std::uint8_t*>(buf)[i], 4, 7, true);
    case DType::fp8_e5m2: return fp8_to_float(static_cast<const std::uint8_t*>(buf)[i], 5, 15, false);
  }
  return 0;
}

void store_element(void* buf, std::size_t i, DType t, double v) {
  switch (t) {
    case DType::float32: static_cast<float*>(buf)[i] = static_cast<float>(v); break;
    case DType::float64: static_cast<double*>(buf)[i] = v; break;
    case DType::int32: static_cast<std::int32_t*>(buf)[i] = static_cast<std::int32_t>(std::lround(v)); break;
    case DType::bfloat16: static_cast<std::uint16_t*>(buf)[i] = float_to_bf16(static_cast<float>(v)); break;
    case DType::float16: static_cast<std::uint16_t*>(buf)[i] = float_to_fp16(static_cast<float>(v)); break;
    case DType::fp8_e4m3: static_cast<std::uint8_t*>(buf)[i] = float_to_fp8(static_cast<float>(v), true); break;
    case DType::fp8_e5m2: static_cast<std::uint8_t*>(buf)[i] = float_to_fp8(static_cast<float>(v), false); break;
  }
}

double ulp_of(double v, DType t) {
  if (!is_floating(t)) return 1.0;
  int mantissa_bits = 0;  // explicit fraction bits
  switch (t) {
    case DType::float32: mantissa_bits = 23; break;
    case DType::float64: mantissa_bits = 52; break;
    case DType::bfloat16: mantissa_bits = 7; break;
    case DType::float16: mantissa_bits = 10; break;
    case DType::fp8_e4m3: mantissa_bits = 3; break;
    case DType::fp8_e5m2: mantissa_bits = 2; break;
    default: break;
  }
  const double mag = std::max(std::fabs(v), 1.0);  // values are small integers: no subnormals
  return std::ldexp(1.0, std::ilogb(mag) - mantissa_bits);
}

}  // namespace ibt
