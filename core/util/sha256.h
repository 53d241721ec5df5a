// SHA-256 (FIPS 180-4) of a file, for the record of where an imported checkpoint came from.
#pragma once

#include <string>

namespace relpos {

// Lower-case hex digest of the bytes of `path`, read in blocks. Throws DataError naming the file
// when it cannot be read.
std::string sha256_file(const std::string& path);

// Lower-case hex digest of `bytes`.
std::string sha256_hex(const std::string& bytes);

}  // namespace relpos
