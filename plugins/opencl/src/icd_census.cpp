#include "icd_census.hpp"

#include <dirent.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <fstream>
#include <iterator>
#include <string_view>

namespace axl::opencl {

namespace {

constexpr const char* kDefaultVendorsDir = "/etc/OpenCL/vendors";

// Library file-name prefixes of drivers whose only devices are CPU devices.
// PoCL can be built with GPU drivers (its cuda and level0 devices); such a
// build is skipped by default too, and AXL_OPENCL_DEVICE_TYPES with cpu (or
// all) loads it (docs/backends.md).
constexpr std::array<std::string_view, 2> kCpuOnlyPrefixes{"libpocl", "libintelocl"};

bool ends_with(const std::string& s, std::string_view tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

std::string trimmed(std::string s) {
  const auto blank = [](unsigned char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; };
  while (!s.empty() && blank(s.back())) s.pop_back();
  size_t i = 0;
  while (i < s.size() && blank(s[i])) ++i;
  return s.substr(i);
}

// An ICD file holds one driver library name; false if it cannot be read.
bool read_icd_file(const std::string& path, IcdCensus& c) {
  std::ifstream in(path);
  if (!in) return false;
  std::string line;
  std::getline(in, line);
  line = trimmed(line);
  if (!line.empty()) c.drivers.push_back({line, path});
  return true;
}

void read_vendors_dir(const std::string& dir, IcdCensus& c) {
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return;  // no folder: the loader finds no driver there either
  std::vector<std::string> files;
  while (const dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (ends_with(name, ".icd")) files.push_back(dir + "/" + name);
  }
  closedir(d);
  std::sort(files.begin(), files.end());
  for (const std::string& f : files)
    if (!read_icd_file(f, c)) c.known = false;
}

}  // namespace

IcdCensus read_icd_census() {
  IcdCensus c;
  const char* vendors = secure_getenv("OCL_ICD_VENDORS");
  const std::string where = vendors != nullptr && vendors[0] != '\0' ? vendors : kDefaultVendorsDir;
  c.where = where;
  struct stat st{};
  if (stat(where.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    read_vendors_dir(where, c);
  } else if (vendors != nullptr && vendors[0] != '\0') {
    // ocl-icd takes a value that is not a folder as one driver: an ICD file,
    // or a library name.
    if (ends_with(where, ".icd")) {
      if (!read_icd_file(where, c)) c.known = false;
    } else {
      c.drivers.push_back({where, "OCL_ICD_VENDORS"});
    }
  }
  if (const char* names = secure_getenv("OCL_ICD_FILENAMES")) {
    std::string_view rest = names;
    while (!rest.empty()) {
      const size_t colon = rest.find(':');
      const std::string name = trimmed(std::string(rest.substr(0, colon)));
      if (!name.empty()) c.drivers.push_back({name, "OCL_ICD_FILENAMES"});
      rest = colon == std::string_view::npos ? std::string_view{} : rest.substr(colon + 1);
    }
  }
  return c;
}

bool cpu_only_driver(const std::string& library) {
  const size_t slash = library.find_last_of('/');
  const std::string_view file =
      std::string_view(library).substr(slash == std::string::npos ? 0 : slash + 1);
  return std::any_of(kCpuOnlyPrefixes.begin(), kCpuOnlyPrefixes.end(),
                     [&](std::string_view p) { return file.substr(0, p.size()) == p; });
}

}  // namespace axl::opencl
