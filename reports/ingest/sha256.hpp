#pragma once
// SHA-256 (FIPS 180-4) of a byte string, as lowercase hex: the provenance fingerprint of a
// training log `ibt import-log` stores, so a stored run names exactly the file it came from.
// Computed by OpenSSL's libcrypto (EVP), the implementation every distribution maintains
// and tests, rather than one of ibt's own.
#include <string>

namespace ibt::suites {

std::string sha256_hex(const std::string& bytes);

}  // namespace ibt::suites
