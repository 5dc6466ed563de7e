#pragma once
// Helpers shared by the store and export tests: scratch directories and file digests.
#include <cstdint>
#include <string>

namespace ibt::test {

// A fresh directory under $TMPDIR (or /tmp), removed with everything in it at scope exit.
class ScratchDir {
 public:
  ScratchDir();
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  std::string path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// Size and FNV-1a hash of a file's bytes, to prove a refused file was not changed.
struct Digest {
  std::uint64_t size = 0;
  std::uint64_t fnv1a = 0;
  bool operator==(const Digest&) const = default;
};
Digest digest_of(const std::string& path);

std::string read_bytes(const std::string& path);
void write_bytes(const std::string& path, const std::string& bytes);

}  // namespace ibt::test
