#pragma once
// Stored values as CSV text: what `ibt export --csv` prints and what a failed append
// rescues (rescued_rows.hpp), so both read back the same way.
#include <string>

#include "core/columns.hpp"

namespace ibt::store {

// The shortest text that reads back as the same double; "nan", "inf", "-inf".
std::string exact_number(double v);
// `text`, quoted (and its quotes doubled) when it holds a comma, quote or line break.
std::string csv_field(const std::string& text);
// One cell: strings by csv_field, doubles by exact_number, integers in decimal.
std::string csv_value(const Value& value);

}  // namespace ibt::store
