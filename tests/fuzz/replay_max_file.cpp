// Runs the libFuzzer target (fuzz_max_file.cpp) without libFuzzer, so the
// normal and ASan+UBSan builds exercise it with any compiler: first every
// checked-in corpus file (valid_* must parse, bad_* must be refused), then
// deterministic random mutations of them. Each input is an exact-size heap
// copy, so ASan sees a read past its end.
//
// usage: axl_fuzz_max_file_replay <corpus dir> [mutations]
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "axl/axl.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

struct Input {
  std::string name;
  std::vector<uint8_t> bytes;
};

axl_status run_one(const std::vector<uint8_t>& b) {
  std::unique_ptr<uint8_t[]> copy(new uint8_t[b.size() ? b.size() : 1]);
  std::copy(b.begin(), b.end(), copy.get());
  LLVMFuzzerTestOneInput(copy.get(), b.size());
  axl_max_file_header h{};
  h.struct_size = sizeof h;
  return axl_max_file_parse(copy.get(), b.size(), b.size(), &h);
}

// xorshift64*: the same mutations on every run and machine.
struct Rng {
  uint64_t s = 0x9E3779B97F4A7C15ull;
  uint64_t next() {
    s ^= s >> 12;
    s ^= s << 25;
    s ^= s >> 27;
    return s * 0x2545F4914F6CDD1Dull;
  }
  uint64_t below(uint64_t n) { return n ? next() % n : 0; }
};

void put_le(std::vector<uint8_t>& b, size_t at, uint64_t v, int n) {
  for (int i = 0; i < n && at + i < b.size(); ++i) b[at + i] = static_cast<uint8_t>(v >> (8 * i));
}

void mutate(std::vector<uint8_t>& b, Rng& r) {
  static const uint64_t kInteresting[] = {0, 1, 2, 7, 8, 23, 47, 0x7F, 0x80, 0xFF, 0xFFFF,
                                          0x7FFFFFFF, 0xFFFFFFFF, 0x100000000ull, 0x7FFFFFFFFFFFFFFFull,
                                          UINT64_MAX};
  // Header fields sit at fixed offsets for short keys: aim there often.
  static const size_t kFields[] = {8, 12, 16, 24, 28, 29, 30, 34, 38, 42, 46};
  const int steps = 1 + static_cast<int>(r.below(4));
  for (int k = 0; k < steps; ++k) {
    const size_t at = r.below(3) == 0 ? kFields[r.below(std::size(kFields))] : r.below(b.size() + 1);
    switch (r.below(7)) {
      case 0:
        if (at < b.size()) b[at] ^= static_cast<uint8_t>(1u << r.below(8));
        break;
      case 1:
        if (at < b.size()) b[at] = static_cast<uint8_t>(r.next());
        break;
      case 2:
        put_le(b, at, kInteresting[r.below(std::size(kInteresting))], 4);
        break;
      case 3:
        put_le(b, at, kInteresting[r.below(std::size(kInteresting))] + r.below(3) - 1, 8);
        break;
      case 4:
        b.resize(r.below(b.size() + 1));
        break;
      case 5:
        for (uint64_t n = r.below(64); n > 0; --n) b.push_back(static_cast<uint8_t>(r.next()));
        break;
      case 6:
        if (at < b.size()) b.insert(b.begin() + at, b.begin() + at, b.begin() + std::min(b.size(), at + r.below(16)));
        break;
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s <corpus dir> [mutations]\n", argv[0]);
    return 2;
  }
  const long mutations = argc > 2 ? std::strtol(argv[2], nullptr, 10) : 20000;
  std::vector<Input> corpus;
  for (const auto& e : std::filesystem::directory_iterator(argv[1])) {
    if (!e.is_regular_file()) continue;
    std::ifstream f(e.path(), std::ios::binary);
    corpus.push_back({e.path().filename().string(),
                      std::vector<uint8_t>(std::istreambuf_iterator<char>(f), {})});
  }
  std::sort(corpus.begin(), corpus.end(), [](const Input& a, const Input& b) { return a.name < b.name; });
  int bad = 0, valid = 0, refused = 0;
  for (const Input& in : corpus) {
    const axl_status s = run_one(in.bytes);
    const bool want_ok = in.name.rfind("valid_", 0) == 0, want_bad = in.name.rfind("bad_", 0) == 0;
    if ((want_ok && s != AXL_SUCCESS) || (want_bad && s == AXL_SUCCESS) || (!want_ok && !want_bad)) {
      std::fprintf(stderr, "corpus %s: %s (%s); names say valid_* parses, bad_* is refused\n", in.name.c_str(),
                   axl_status_name(s), s ? axl_last_error_message() : "parsed");
      ++bad;
    }
    valid += want_ok;
    refused += want_bad;
  }
  if (valid == 0 || refused == 0) {
    std::fprintf(stderr, "corpus %s: expected valid_* and bad_* files\n", argv[1]);
    return 1;
  }
  Rng rng;
  long ok = 0;
  for (long i = 0; i < mutations; ++i) {
    std::vector<uint8_t> b = corpus[rng.below(corpus.size())].bytes;
    mutate(b, rng);
    ok += run_one(b) == AXL_SUCCESS;
  }
  std::printf("corpus: %zu files (%d valid, %d malformed); mutations: %ld, %ld parsed, %ld refused\n",
              corpus.size(), valid, refused, mutations, ok, mutations - ok);
  // Mutations that keep a file valid and ones that break it must both occur,
  // or the replay tests less than it claims.
  if (mutations > 1000 && (ok == 0 || ok == mutations)) {
    std::fprintf(stderr, "mutations all ended alike\n");
    return 1;
  }
  return bad ? 1 : 0;
}
