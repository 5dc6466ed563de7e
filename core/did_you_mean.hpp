#pragma once
// "Did you mean": the one rule for naming the known word a mistyped one was meant to be,
// used for JSON keys, command-line flags, commands, model and topology names.
#include <string>
#include <vector>

namespace ibt {

// The known name closest to `word` by edit distance when it is close enough to be a typo
// (at most 1 edit for names up to 4 characters, else up to a third of the length), "" if none.
std::string closest_name(const std::string& word, const std::vector<std::string>& known);

// " (did you mean 'x'?)" for a close known name, else " (known: a, b, c)"; "" when `known` is empty.
std::string unknown_name_hint(const std::string& word, const std::vector<std::string>& known);

}  // namespace ibt
