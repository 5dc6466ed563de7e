#pragma once
// How a table's columns map to an HDF5 compound type and to the bytes of one row.
// Rows are packed (no padding): i64, u64 and f64 take 8 bytes, a variable-length str
// column one char pointer, a fixed-length one exactly its str_bytes, NUL-padded. The
// file type is little-endian whatever the host; the memory type is native, and HDF5
// converts between them.
#include <cstddef>
#include <string>
#include <vector>

#include "core/hdf5.hpp"
#include "reports/store/store.hpp"

namespace ibt::store {

const char* type_name(ColumnType type);  // "i64", "u64", "f64", "str"

class RowLayout {
 public:
  explicit RowLayout(std::vector<Column> columns);

  const std::vector<Column>& columns() const { return columns_; }
  std::size_t row_bytes() const { return row_bytes_; }

  // Compound types for this layout: the one stored in the file, or the native one.
  h5::Handle file_type() const { return compound(true); }
  h5::Handle memory_type() const { return compound(false); }

  // Writes `row` into `out` (row_bytes() long) in memory-type layout. A variable-length
  // string is packed as a pointer into `row`, so `row` must outlive the write of `out`.
  // Throws RuntimeError naming `table` and the column when a value has the wrong type, a
  // string holds a NUL byte (HDF5's strings end at one), or a string is longer than its
  // fixed-length column.
  void pack(const Row& row, unsigned char* out, const std::string& table) const;
  // Reads one row of memory-type layout. Variable-length strings are copied; the caller
  // frees HDF5's copies with reclaim() once every row is unpacked.
  Row unpack(const unsigned char* in) const;
  // Frees the variable-length strings H5Dread allocated in `buffer` (`rows` rows).
  void reclaim(unsigned char* buffer, hsize_t rows) const;
  bool has_variable_strings() const;

 private:
  h5::Handle compound(bool for_file) const;

  std::vector<Column> columns_;
  std::vector<std::size_t> offsets_;
  std::size_t row_bytes_ = 0;
};

// The columns of a compound dataset type as stored (units left empty). Throws
// UsageError, naming `what`, for a member type ibt's tables never hold.
std::vector<Column> columns_of_compound(hid_t compound_type, const std::string& what);

}  // namespace ibt::store
