#pragma once
// The cell and column types of every table ibt stores: what a suite declares when it
// defines a table (through core/row_schema.hpp: reports/tables/, the train and projection tables) and
// what a reader gets back. Plain values, no HDF5: the store (reports/store/store.hpp) maps
// them to compound datasets, and a part that only defines or reads rows needs no more.
#include <cstddef>
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

namespace ibt::store {

enum class ColumnType { i64, u64, f64, str };
struct Column {
  std::string name;
  ColumnType type;
  std::string unit = {};  // "" when dimensionless
  // A str column's width: 0 (the default, and what every table ibt writes uses) is a
  // variable-length string, so no label is ever too long for its column; a positive
  // width is a fixed-length, NUL-padded string, as files from ibt before 0.1.0's
  // variable-length columns hold them (read back as stored).
  std::size_t str_bytes = 0;
};
using Value = std::variant<std::int64_t, std::uint64_t, double, std::string>;
using Row = std::vector<Value>;
// A numeric cell as a double (0 for a text cell).
double as_number(const Value& v);
using AttrValue = std::variant<std::int64_t, double, std::string>;

}  // namespace ibt::store
