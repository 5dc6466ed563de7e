#include "reports/store/csv_text.hpp"

#include <charconv>
#include <cmath>
#include <type_traits>
#include <variant>

namespace ibt::store {

std::string exact_number(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char text[32];
  const auto end = std::to_chars(text, text + sizeof text, v).ptr;
  return std::string(text, end);
}

std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\r\n") == std::string::npos) return text;
  std::string quoted = "\"";
  for (char c : text) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}

std::string csv_value(const Value& value) {
  return std::visit(
      [](const auto& x) -> std::string {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::string>)
          return csv_field(x);
        else if constexpr (std::is_same_v<T, double>)
          return exact_number(x);
        else
          return std::to_string(x);
      },
      value);
}

}  // namespace ibt::store
