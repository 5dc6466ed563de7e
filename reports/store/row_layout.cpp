#include "reports/store/row_layout.hpp"

#include <cstring>
#include <type_traits>
#include <variant>

#include "core/errors.hpp"

namespace ibt::store {

const char* type_name(ColumnType type) {
  switch (type) {
    case ColumnType::i64: return "i64";
    case ColumnType::u64: return "u64";
    case ColumnType::f64: return "f64";
    case ColumnType::str: return "str";
  }
  return "?";
}

namespace {

constexpr std::size_t kNumberBytes = 8;

bool variable_length(const Column& c) { return c.type == ColumnType::str && c.str_bytes == 0; }

std::size_t column_bytes(const Column& c) {
  if (c.type != ColumnType::str) return kNumberBytes;
  return variable_length(c) ? sizeof(const char*) : c.str_bytes;
}

// The variant alternative each column type accepts.
std::size_t value_index(ColumnType type) {
  switch (type) {
    case ColumnType::i64: return 0;
    case ColumnType::u64: return 1;
    case ColumnType::f64: return 2;
    case ColumnType::str: return 3;
  }
  return 0;
}

const char* value_type_name(const Value& v) {
  static const char* names[] = {"i64", "u64", "f64", "str"};
  return names[v.index()];
}

}  // namespace

RowLayout::RowLayout(std::vector<Column> columns) : columns_(std::move(columns)) {
  if (columns_.empty()) throw RuntimeError("a table needs at least one column");
  for (const auto& c : columns_) {
    if (c.name.empty()) throw RuntimeError("a table column has an empty name");
    for (const auto& other : columns_)
      if (&other != &c && other.name == c.name) throw RuntimeError("column '" + c.name + "' appears twice");
    offsets_.push_back(row_bytes_);
    row_bytes_ += column_bytes(c);
  }
}

h5::Handle RowLayout::compound(bool for_file) const {
  const std::string what = "building the compound type of a table";
  h5::Handle type = h5::checked_type(H5Tcreate(H5T_COMPOUND, row_bytes_), what);
  for (std::size_t i = 0; i < columns_.size(); ++i) {
    const Column& c = columns_[i];
    h5::Handle owned;
    hid_t member = H5I_INVALID_HID;
    switch (c.type) {
      case ColumnType::i64: member = for_file ? H5T_STD_I64LE : H5T_NATIVE_INT64; break;
      case ColumnType::u64: member = for_file ? H5T_STD_U64LE : H5T_NATIVE_UINT64; break;
      case ColumnType::f64: member = for_file ? H5T_IEEE_F64LE : H5T_NATIVE_DOUBLE; break;
      case ColumnType::str:
        owned = h5::checked_type(H5Tcopy(H5T_C_S1), what);
        if (variable_length(c)) {
          h5::check(H5Tset_size(owned.get(), H5T_VARIABLE), what);
          h5::check(H5Tset_strpad(owned.get(), H5T_STR_NULLTERM), what);
        } else {
          h5::check(H5Tset_size(owned.get(), c.str_bytes), what);
          h5::check(H5Tset_strpad(owned.get(), H5T_STR_NULLPAD), what);
        }
        h5::check(H5Tset_cset(owned.get(), H5T_CSET_UTF8), what);
        member = owned.get();
        break;
    }
    h5::check(H5Tinsert(type.get(), c.name.c_str(), offsets_[i], member), what + " (column " + c.name + ")");
  }
  return type;
}

void RowLayout::pack(const Row& row, unsigned char* out, const std::string& table) const {
  if (row.size() != columns_.size())
    throw RuntimeError("table '" + table + "': row has " + std::to_string(row.size()) + " values for " +
                       std::to_string(columns_.size()) + " columns");
  std::memset(out, 0, row_bytes_);  // NUL padding for strings
  for (std::size_t i = 0; i < columns_.size(); ++i) {
    const Column& c = columns_[i];
    const Value& v = row[i];
    if (v.index() != value_index(c.type))
      throw RuntimeError("table '" + table + "', column '" + c.name + "': expected " + type_name(c.type) + ", got " +
                         value_type_name(v));
    unsigned char* dst = out + offsets_[i];
    std::visit(
        [&](const auto& x) {
          using T = std::decay_t<decltype(x)>;
          if constexpr (std::is_same_v<T, std::string>) {
            if (x.find('\0') != std::string::npos)
              throw RuntimeError("table '" + table + "', column '" + c.name + "': the text holds a NUL byte");
            if (variable_length(c)) {
              const char* text = x.c_str();
              std::memcpy(dst, &text, sizeof text);
              return;
            }
            if (x.size() > c.str_bytes)
              throw RuntimeError("table '" + table + "', column '" + c.name + "': \"" + x + "\" is " +
                                 std::to_string(x.size()) + " bytes, the column holds " + std::to_string(c.str_bytes));
            std::memcpy(dst, x.data(), x.size());
          } else {
            std::memcpy(dst, &x, sizeof x);
          }
        },
        v);
  }
}

Row RowLayout::unpack(const unsigned char* in) const {
  Row row;
  row.reserve(columns_.size());
  for (std::size_t i = 0; i < columns_.size(); ++i) {
    const unsigned char* src = in + offsets_[i];
    switch (columns_[i].type) {
      case ColumnType::i64: {
        std::int64_t v;
        std::memcpy(&v, src, sizeof v);
        row.emplace_back(v);
        break;
      }
      case ColumnType::u64: {
        std::uint64_t v;
        std::memcpy(&v, src, sizeof v);
        row.emplace_back(v);
        break;
      }
      case ColumnType::f64: {
        double v;
        std::memcpy(&v, src, sizeof v);
        row.emplace_back(v);
        break;
      }
      case ColumnType::str: {
        if (variable_length(columns_[i])) {
          const char* text = nullptr;
          std::memcpy(&text, src, sizeof text);
          row.emplace_back(std::string(text ? text : ""));
        } else {
          const char* text = reinterpret_cast<const char*>(src);
          row.emplace_back(std::string(text, strnlen(text, columns_[i].str_bytes)));
        }
        break;
      }
    }
  }
  return row;
}

bool RowLayout::has_variable_strings() const {
  for (const auto& c : columns_)
    if (variable_length(c)) return true;
  return false;
}

void RowLayout::reclaim(unsigned char* buffer, hsize_t rows) const {
  if (!has_variable_strings() || rows == 0) return;
  const std::string what = "freeing the strings read from a table";
  h5::Handle type = memory_type();
  h5::Handle space = h5::checked_space(H5Screate_simple(1, &rows, nullptr), what);
  h5::check(H5Dvlen_reclaim(type.get(), space.get(), H5P_DEFAULT, buffer), what);
}

std::vector<Column> columns_of_compound(hid_t compound_type, const std::string& what) {
  if (H5Tget_class(compound_type) != H5T_COMPOUND) throw UsageError(what + " is not a table (not a compound dataset)");
  const int members = H5Tget_nmembers(compound_type);
  h5::check(members, what);
  std::vector<Column> columns;
  for (int i = 0; i < members; ++i) {
    char* raw_name = H5Tget_member_name(compound_type, static_cast<unsigned>(i));
    if (!raw_name) h5::fail<RuntimeError>(what + ": reading a column name");
    Column c{raw_name, ColumnType::f64, ""};
    H5free_memory(raw_name);
    h5::Handle member = h5::checked_type(H5Tget_member_type(compound_type, static_cast<unsigned>(i)), what);
    switch (H5Tget_class(member.get())) {
      case H5T_INTEGER: c.type = H5Tget_sign(member.get()) == H5T_SGN_NONE ? ColumnType::u64 : ColumnType::i64; break;
      case H5T_FLOAT: c.type = ColumnType::f64; break;
      case H5T_STRING:
        c.type = ColumnType::str;
        c.str_bytes = H5Tis_variable_str(member.get()) > 0 ? 0 : H5Tget_size(member.get());
        break;
      default: throw UsageError(what + ", column '" + c.name + "': unsupported column type");
    }
    columns.push_back(std::move(c));
  }
  return columns;
}

}  // namespace ibt::store
