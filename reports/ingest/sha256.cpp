#include "reports/ingest/sha256.hpp"

#include <openssl/evp.h>

#include <array>
#include <cstdio>

#include "core/errors.hpp"

namespace ibt::suites {

std::string sha256_hex(const std::string& bytes) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int length = 0;
  // EVP_Digest fails only when libcrypto cannot allocate its context or the digest is
  // disabled (a FIPS build without SHA-256, which does not exist): a fault, not an input.
  if (EVP_Digest(bytes.data(), bytes.size(), digest.data(), &length, EVP_sha256(), nullptr) != 1 || length != 32)
    throw RuntimeError("libcrypto's SHA-256 failed (EVP_Digest)");
  std::string hex;
  hex.reserve(2 * length);
  char pair[3];
  for (unsigned int i = 0; i < length; ++i) {
    std::snprintf(pair, sizeof pair, "%02x", digest[i]);
    hex += pair;
  }
  return hex;
}

}  // namespace ibt::suites
