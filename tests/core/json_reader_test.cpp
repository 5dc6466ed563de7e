// core/json_reader: errors name the file and the field's path; unknown keys are refused
// with the closest known one, or the known ones listed when none is close.
#include "core/json_reader.hpp"

#include <gtest/gtest.h>

#include <functional>

#include "core/errors.hpp"

namespace ibt {
namespace {

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const UsageError& e) {
    return e.what();
  }
  return "no error";
}

TEST(JsonReader, ErrorsNameFileAndPath) {
  const auto j = nlohmann::json::parse(R"({"a": {"b": "x", "n": 2.5}, "k": 3})");
  const JsonReader top(j, "f.json");
  EXPECT_EQ(error_of([&] { top.child("a").number("c"); }), "f.json: field 'a.c': missing");
  EXPECT_EQ(error_of([&] { top.child("a").number("b"); }), "f.json: field 'a.b': must be a number");
  EXPECT_EQ(error_of([&] { top.child("a").integer("n", 1); }), "f.json: field 'a.n': must be a whole number >= 1");
  EXPECT_EQ(error_of([&] { top.child("k"); }), "f.json: field 'k': must be a JSON object");
  EXPECT_EQ(error_of([&] { JsonReader(nlohmann::json::array(), "f.json"); }), "f.json: must be a JSON object");
  EXPECT_EQ(top.integer("k", 1), 3);
  EXPECT_EQ(top.child("a").str("missing", false), "");
}

TEST(JsonReader, UnknownKeysGetTheClosestKnownOne) {
  const auto j = nlohmann::json::parse(R"({"uper": 1})");
  EXPECT_EQ(error_of([&] {
              JsonReader(j, "f.json").allow({"lower", "upper"});
            }),
            "f.json: field 'uper': unknown field (did you mean 'upper'?)");
  EXPECT_EQ(error_of([&] {
              JsonReader(j, "f.json").allow({"name", "note"});
            }),
            "f.json: field 'uper': unknown field (known: name, note)");
  EXPECT_EQ(closest_name("devcies", {"devices", "global_batch"}), "devices");
  EXPECT_EQ(closest_name("xyz", {"devices"}), "");
}

}  // namespace
}  // namespace ibt
