#pragma once
// One schema per stored table: a row type whose fields are listed once, each with its
// column name, unit and meaning, so the columns a writer declares, the cells it appends,
// what a reader finds and the report's column names all come from the same list. A cell
// is matched to a field by column NAME, never by position: a file written before a
// column was added (or after one was dropped) still reads, the missing fields keeping
// their defaults.
//
// A table type T provides
//   static constexpr std::string_view kTable;            // the dataset's name in a run
//   static constexpr std::array<store::Field<T>, N> kFields;  // in the stored order
// and a writer that fills only some fields (the `steps` rows of an imported log) stores
// a Layout<T> of those fields' names, in the order its files have always had.
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

#include "core/columns.hpp"

namespace ibt::store {

// The member types a field may have, in ColumnType's order (Field::type relies on it).
template <class T>
using FieldMember = std::variant<std::int64_t T::*, std::uint64_t T::*, double T::*, std::string T::*>;
static_assert(static_cast<int>(ColumnType::i64) == 0 && static_cast<int>(ColumnType::u64) == 1 &&
              static_cast<int>(ColumnType::f64) == 2 && static_cast<int>(ColumnType::str) == 3);

// One column of table T: its name, the member it is stored from (which gives its type),
// its unit ("" when dimensionless) and what it means, in a sentence for people.
template <class T>
struct Field {
  std::string_view name;
  FieldMember<T> member;
  std::string_view unit;
  std::string_view meaning;

  constexpr ColumnType type() const {
    // The variant's alternatives are in ColumnType's order (i64, u64, f64, str).
    return static_cast<ColumnType>(member.index());
  }
  Column column() const { return {std::string(name), type(), std::string(unit)}; }
  Value get(const T& row) const {
    return std::visit([&row](auto m) -> Value { return row.*m; }, member);
  }
  // A stored cell into the field, converting between the numeric types (a column whose
  // type changed between versions still reads); a text cell into a number, or a number
  // into a text field, leaves the field as it was.
  void set(T& row, const Value& v) const {
    std::visit(
        [&row, &v](auto m) {
          using M = std::remove_reference_t<decltype(row.*m)>;
          if constexpr (std::is_same_v<M, std::string>) {
            if (const auto* s = std::get_if<std::string>(&v)) row.*m = *s;
          } else if (const auto* d = std::get_if<double>(&v)) {
            // A NaN or infinite cell into an integer field would be undefined: left as is.
            if (std::is_floating_point_v<M> || std::isfinite(*d)) row.*m = static_cast<M>(*d);
          } else if (const auto* i = std::get_if<std::int64_t>(&v)) {
            row.*m = static_cast<M>(*i);
          } else if (const auto* u = std::get_if<std::uint64_t>(&v)) {
            row.*m = static_cast<M>(*u);
          }
        },
        member);
  }
};

// The field of T stored from `member`; throws std::logic_error when no field is (a
// schema that does not list a member its code names is a bug, not an input error).
template <class T, class M>
const Field<T>& field_of(M T::*member) {
  for (const Field<T>& f : T::kFields)
    if (const auto* m = std::get_if<M T::*>(&f.member); m && *m == member) return f;
  throw std::logic_error(std::string(T::kTable) + ": a member without a field in its schema");
}
// The column name of `member`: what a reader looks up in a stored table.
template <class T, class M>
std::string column_name(M T::*member) {
  return std::string(field_of(member).name);
}

template <class T>
const Field<T>& field_named(std::string_view name) {
  for (const Field<T>& f : T::kFields)
    if (f.name == name) return f;
  throw std::logic_error(std::string(T::kTable) + ": no field '" + std::string(name) + "' in its schema");
}

// Every field of T as the store's columns, in the schema's order.
template <class T>
std::vector<Column> columns_of() {
  std::vector<Column> out;
  out.reserve(T::kFields.size());
  for (const Field<T>& f : T::kFields) out.push_back(f.column());
  return out;
}

// A row of T as the cells of every column, in the schema's order.
template <class T>
Row to_row(const T& row) {
  Row out;
  out.reserve(T::kFields.size());
  for (const Field<T>& f : T::kFields) out.push_back(f.get(row));
  return out;
}

// Some fields of T, in an order of their own: the columns of a writer that fills only
// these (the names are checked against the schema when the layout is made).
template <class T>
class Layout {
 public:
  Layout(std::initializer_list<std::string_view> names) {
    for (std::string_view n : names) {
      fields_.push_back(&field_named<T>(n));
      columns_.push_back(fields_.back()->column());
    }
  }
  const std::vector<Column>& columns() const { return columns_; }
  Row row(const T& r) const {
    Row out;
    out.reserve(fields_.size());
    for (const Field<T>* f : fields_) out.push_back(f->get(r));
    return out;
  }

 private:
  std::vector<const Field<T>*> fields_;
  std::vector<Column> columns_;
};

// Reads rows of T from a stored table's columns by name: built once per table, each
// field found by its column name; fields the table lacks keep T's defaults.
template <class T>
class RowReader {
 public:
  explicit RowReader(const std::vector<Column>& columns) {
    for (std::size_t c = 0; c < columns.size(); ++c)
      for (const Field<T>& f : T::kFields)
        if (f.name == columns[c].name) cells_.push_back({c, &f});
  }
  T read(const Row& row) const {
    T out{};
    for (const Cell& cell : cells_)
      if (cell.column < row.size()) cell.field->set(out, row[cell.column]);
    return out;
  }
  // Whether the table has the column of `member`.
  template <class M>
  bool has(M T::*member) const {
    const Field<T>* want = &field_of(member);
    for (const Cell& cell : cells_)
      if (cell.field == want) return true;
    return false;
  }
  // The first of these members' columns the table lacks, "" when it has them all: what
  // a reader that needs them names in its refusal.
  template <class... M>
  std::string missing(M T::*... members) const {
    std::string out;
    ((out.empty() && !has(members) ? (out = column_name(members), 0) : 0), ...);
    return out;
  }

 private:
  struct Cell {
    std::size_t column;
    const Field<T>* field;
  };
  std::vector<Cell> cells_;
};

}  // namespace ibt::store
