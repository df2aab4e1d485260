// The driver every replay test shares (replay_max_file.cpp,
// replay_grammar.cpp): runs a libFuzzer target without libFuzzer, so the
// normal and ASan+UBSan builds exercise it with any compiler. First every
// checked-in corpus file, whose name says what it must do (valid_* is
// accepted, bad_* refused), then deterministic mutations of them. Each
// input is an exact-size heap copy, so ASan sees a read past its end.
#pragma once

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

namespace axlfuzz {

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

// Feeds `b` to the fuzz target as an exact-size heap copy, then asks
// `verdict(data, size)` whether the input is accepted (AXL_SUCCESS) or not.
template <class Bytes, class Verdict>
axl_status run_one(const Bytes& b, Verdict&& verdict) {
  std::unique_ptr<uint8_t[]> copy(new uint8_t[b.size() ? b.size() : 1]);
  std::copy(b.begin(), b.end(), copy.get());
  LLVMFuzzerTestOneInput(copy.get(), b.size());
  return verdict(copy.get(), b.size());
}

// usage: <program> <corpus dir> [mutations]. `Bytes` is std::string or
// std::vector<uint8_t>; `verdict` as in run_one; `mutate(bytes, rng)`
// changes an input in place. Exit status 0 when every corpus file did what
// its name says and the mutations both kept and broke inputs.
template <class Bytes, class Verdict, class Mutate>
int replay_main(int argc, char** argv, Verdict verdict, Mutate mutate) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s <corpus dir> [mutations]\n", argv[0]);
    return 2;
  }
  const long mutations = argc > 2 ? std::strtol(argv[2], nullptr, 10) : 20000;
  struct Input {
    std::string name;
    Bytes bytes;
  };
  std::vector<Input> corpus;
  for (const auto& e : std::filesystem::directory_iterator(argv[1])) {
    if (!e.is_regular_file()) continue;
    std::ifstream f(e.path(), std::ios::binary);
    corpus.push_back({e.path().filename().string(), Bytes(std::istreambuf_iterator<char>(f), {})});
  }
  std::sort(corpus.begin(), corpus.end(), [](const Input& a, const Input& b) { return a.name < b.name; });
  int bad = 0, valid = 0, refused = 0;
  for (const Input& in : corpus) {
    const axl_status s = run_one(in.bytes, verdict);
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
    Bytes b = corpus[rng.below(corpus.size())].bytes;
    mutate(b, rng);
    ok += run_one(b, verdict) == AXL_SUCCESS;
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

}  // namespace axlfuzz
