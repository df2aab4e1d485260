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
#include <cstdint>
#include <string>
#include <vector>

#include "replay_harness.hpp"

axl_status axl_fuzz_grammar_status(const uint8_t* data, size_t size);

namespace {

void mutate(std::string& b, axlfuzz::Rng& r) {
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
  return axlfuzz::replay_main<std::string>(
      argc, argv,
      [](const uint8_t* data, size_t size) { return axl_fuzz_grammar_status(data, size); },
      mutate);
}
