// A file of given bytes under the temporary folder ($TMPDIR, else /tmp) that
// is removed when it goes out of scope, on a failed check's exception too (a
// Catch2 REQUIRE throws), so neither the CTS nor a test that loads a module
// from a file leaves it behind. path() is "" when it could not be written.
#pragma once

#include <stdlib.h>
#include <unistd.h>

#include <cstdint>
#include <string>
#include <vector>

namespace cts {

class TempFile {
 public:
  explicit TempFile(const std::vector<uint8_t>& bytes) {
    const char* dir = getenv("TMPDIR");
    std::string name = std::string(dir && *dir ? dir : "/tmp") + "/axl-temp-XXXXXX";
    const int fd = mkstemp(name.data());
    if (fd < 0) return;
    path_ = name;
    const bool written = ::write(fd, bytes.data(), bytes.size()) == static_cast<ssize_t>(bytes.size());
    ::close(fd);
    if (!written) {
      ::unlink(name.c_str());
      path_.clear();
    }
  }
  ~TempFile() {
    if (!path_.empty()) ::unlink(path_.c_str());
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace cts
