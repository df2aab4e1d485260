#include "axl/common/census.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>

namespace axl::common {

std::string census_path(const std::string& system_path) {
  const char* root = secure_getenv("AXL_CENSUS_ROOT");
  if (root == nullptr || *root == '\0') return system_path;
  return std::string(root) + system_path;
}

std::vector<std::string> list_folder(const std::string& dir, bool* exists) {
  std::vector<std::string> names;
  DIR* d = opendir(dir.c_str());
  if (exists != nullptr) *exists = d != nullptr;
  if (d == nullptr) return names;
  while (const dirent* e = readdir(d)) {
    const std::string n = e->d_name;
    if (n != "." && n != "..") names.push_back(n);
  }
  closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

std::string read_small_file(const std::string& path) {
  // Non-blocking: a FIFO planted in a census root must not hang counting
  // (open() of a FIFO without a writer blocks otherwise).
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return {};
  // sysfs files are a page at most.
  char buf[4096];
  const ssize_t n = ::read(fd, buf, sizeof buf);
  ::close(fd);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
}

namespace {

std::string trimmed(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

std::vector<std::string> split_commas(const char* list) {
  std::vector<std::string> out;
  std::string cur;
  for (const char* p = list; *p; ++p) {
    if (*p == ',') {
      out.push_back(trimmed(cur));
      cur.clear();
    } else {
      cur += *p;
    }
  }
  out.push_back(trimmed(cur));
  return out;
}

// The ordinal an entry starts with ("1", "+1", "1abc" -> 1), or -1 when it
// starts with none (empty, "-1", "x"). Capped: no machine has 2^31 devices.
int64_t leading_ordinal(const std::string& e) {
  size_t i = 0;
  if (i < e.size() && e[i] == '+') ++i;
  const size_t digits = i;
  int64_t v = 0;
  while (i < e.size() && std::isdigit(static_cast<unsigned char>(e[i]))) {
    v = std::min<int64_t>(v * 10 + (e[i] - '0'), int64_t{1} << 31);
    ++i;
  }
  return i == digits ? -1 : v;
}

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

}  // namespace

uint32_t visible_devices(const char* list, uint32_t physical, const std::vector<std::string>& ids) {
  if (list == nullptr) return physical;
  const std::vector<std::string> entries = split_commas(list);
  const bool by_id = !entries.empty() && (starts_with(entries[0], "GPU-") || starts_with(entries[0], "MIG-"));
  // `ids` name whole GPUs: a MIG instance's id is none of them, so a MIG
  // list is counted as one whose ids are unknown.
  const std::vector<std::string> no_ids;
  const std::vector<std::string>& known = by_id && starts_with(entries[0], "MIG-") ? no_ids : ids;
  std::vector<int64_t> seen;  // ordinals, or indexes into ids
  std::vector<std::string> seen_names;
  uint32_t n = 0;
  for (const std::string& e : entries) {
    // Once every device is named, a further valid entry can only be a
    // repeat (which hides everything, below) or out of range (the end);
    // only entries that cannot be told apart need the cap.
    if (n >= physical && by_id && known.empty()) break;
    if (by_id) {
      if (!starts_with(e, entries[0].substr(0, 4).c_str())) break;
      if (std::find(seen_names.begin(), seen_names.end(), e) != seen_names.end()) return 0;
      seen_names.push_back(e);
      if (!known.empty()) {
        // A prefix must name exactly one device.
        int64_t match = -1;
        for (size_t i = 0; i < known.size(); ++i)
          if (starts_with(known[i], e.c_str())) {
            if (match >= 0) return 0;
            match = static_cast<int64_t>(i);
          }
        if (match < 0) break;
        if (std::find(seen.begin(), seen.end(), match) != seen.end()) return 0;
        seen.push_back(match);
      }
    } else {
      const int64_t v = leading_ordinal(e);
      if (v < 0) break;
      if (std::find(seen.begin(), seen.end(), v) != seen.end()) return 0;
      seen.push_back(v);
      if (v >= physical) break;
    }
    ++n;
  }
  return n;
}

}  // namespace axl::common
