// Runs a grammar fuzz target (fuzz_device_spec.cpp or fuzz_cli_count.cpp)
// without libFuzzer, so the normal and ASan+UBSan builds exercise it with
// any compiler: first every checked-in corpus file (valid_* must be
// accepted, bad_* refused; the target says how through
// axl_fuzz_grammar_status), then deterministic mutations of them aimed at
// the grammar's edges (digits, separators, signs, '_', long digit runs,
// non-ASCII digits, NUL). Each input is an exact-size heap copy, so ASan
// sees a read past its end.
//
// usage: axl_fuzz_<target>_replay <corpus dir> [mutations]
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
axl_status axl_fuzz_grammar_status(const uint8_t* data, size_t size);

namespace {

struct Input {
  std::string name;
  std::string bytes;
};

axl_status run_one(const std::string& b) {
  std::unique_ptr<uint8_t[]> copy(new uint8_t[b.size() ? b.size() : 1]);
  std::copy(b.begin(), b.end(), copy.get());
  LLVMFuzzerTestOneInput(copy.get(), b.size());
  return axl_fuzz_grammar_status(copy.get(), b.size());
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

void mutate(std::string& b, Rng& r) {
  static const char* const kTokens[] = {
      "0", "1", "7", "9", ",", " ", "\t", ":", "gpu", "GPU:", "cpu", "all", "-", "+", "_", "\n", "\v",
      "2147483647", "2147483648", "-2147483648", "4294967295", "4294967296", "18446744073709551616",
      "0000000000", "\xd9\xa3", "\xef\xbc\x93", "\xc2\xb2", ""};
  const int steps = 1 + static_cast<int>(r.below(4));
  for (int k = 0; k < steps; ++k) {
    const size_t at = r.below(b.size() + 1);
    switch (r.below(5)) {
      case 0:
        if (at < b.size()) b[at] = static_cast<char>(r.next());
        break;
      case 1:
        if (at < b.size()) b.erase(at, 1 + r.below(4));
        break;
      case 2: {
        const size_t t = r.below(std::size(kTokens));
        // kTokens' empty last entry stands for a NUL byte (the CLI target's
        // separator), which a C string cannot hold.
        b.insert(at, t + 1 == std::size(kTokens) ? std::string(1, '\0') : std::string(kTokens[t]));
        break;
      }
      case 3:
        b.insert(at, std::string(1 + r.below(r.below(8) == 0 ? 3000 : 12), static_cast<char>('0' + r.below(10))));
        break;
      case 4:
        if (at < b.size()) b.insert(at, b.substr(at, r.below(8)));
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
    corpus.push_back({e.path().filename().string(), std::string(std::istreambuf_iterator<char>(f), {})});
  }
  std::sort(corpus.begin(), corpus.end(), [](const Input& a, const Input& b) { return a.name < b.name; });
  int bad = 0, valid = 0, refused = 0;
  for (const Input& in : corpus) {
    const axl_status s = run_one(in.bytes);
    const bool want_ok = in.name.rfind("valid_", 0) == 0, want_bad = in.name.rfind("bad_", 0) == 0;
    if ((want_ok && s != AXL_SUCCESS) || (want_bad && s == AXL_SUCCESS) || (!want_ok && !want_bad)) {
      std::fprintf(stderr, "corpus %s: %s (%s); names say valid_* is accepted, bad_* is refused\n",
                   in.name.c_str(), axl_status_name(s), s ? axl_last_error_message() : "accepted");
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
    std::string b = corpus[rng.below(corpus.size())].bytes;
    mutate(b, rng);
    ok += run_one(b) == AXL_SUCCESS;
  }
  std::printf("corpus: %zu files (%d valid, %d malformed); mutations: %ld, %ld accepted, %ld refused\n",
              corpus.size(), valid, refused, mutations, ok, mutations - ok);
  // Mutations that keep an input valid and ones that break it must both
  // occur, or the replay tests less than it claims.
  if (mutations > 1000 && (ok == 0 || ok == mutations)) {
    std::fprintf(stderr, "mutations all ended alike\n");
    return 1;
  }
  return bad ? 1 : 0;
}
