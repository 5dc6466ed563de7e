#pragma once
// A table's rows carry a CRC-32 of their values, written beside them as the dataset's
// attributes ibt_crc32 / ibt_crc32_rows and updated with every appended row, because
// HDF5 checksums none of a table's data (nor the heap that holds its strings): a flipped
// byte in a row would otherwise read back as a plausible value. Readers recompute it
// (read_table; check_tables for a whole file, as `ibt report` does before its renderer,
// whose reader reports/html/ibt_h5.py computes the same CRC in Python) and an append first
// checks every table of the file (check_append_target),
// so a damaged table is named instead of read or extended. Tables written before the
// digest existed have none and are read unchecked.
#include <cstdint>
#include <string>

#include "core/columns.hpp"

namespace ibt::store {

inline constexpr const char* kDigestAttribute = "ibt_crc32";
inline constexpr const char* kDigestRowsAttribute = "ibt_crc32_rows";

class RowDigest {
 public:
  // Folds one row's values (type, then 8 little-endian bytes, or a string's length and
  // bytes) into the running CRC-32.
  void add(const Row& row);
  std::uint32_t crc() const { return crc_; }
  std::int64_t rows() const { return rows_; }

 private:
  std::uint32_t crc_ = 0;
  std::int64_t rows_ = 0;
};

}  // namespace ibt::store
