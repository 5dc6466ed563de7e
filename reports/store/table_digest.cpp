#include "reports/store/table_digest.hpp"

#include <zlib.h>

#include <cstring>
#include <type_traits>
#include <variant>

namespace ibt::store {

namespace {

// Little-endian whatever the host, so a file's digest checks on any machine.
void put_le64(unsigned char* out, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) out[i] = static_cast<unsigned char>(v >> (8 * i));
}

}  // namespace

void RowDigest::add(const Row& row) {
  uLong crc = crc_;
  for (const Value& value : row) {
    unsigned char head[9];
    head[0] = static_cast<unsigned char>(value.index());
    std::visit(
        [&](const auto& x) {
          using T = std::decay_t<decltype(x)>;
          std::uint64_t bits = 0;
          if constexpr (std::is_same_v<T, std::string>) {
            bits = x.size();
          } else {
            static_assert(sizeof(T) == 8);
            std::memcpy(&bits, &x, 8);
          }
          put_le64(head + 1, bits);
          crc = crc32(crc, head, sizeof head);
          if constexpr (std::is_same_v<T, std::string>)
            crc = crc32(crc, reinterpret_cast<const Bytef*>(x.data()), static_cast<uInt>(x.size()));
        },
        value);
  }
  crc_ = static_cast<std::uint32_t>(crc);
  ++rows_;
}

}  // namespace ibt::store
