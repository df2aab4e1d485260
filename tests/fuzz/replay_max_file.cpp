// Runs the libFuzzer target (fuzz_max_file.cpp) without libFuzzer, so the
// normal and ASan+UBSan builds exercise it with any compiler: first every
// checked-in corpus file (valid_* must parse, bad_* must be refused), then
// deterministic random mutations of them. Each input is an exact-size heap
// copy, so ASan sees a read past its end.
//
// usage: axl_fuzz_max_file_replay <corpus dir> [mutations]
#include <cstdint>
#include <string>
#include <vector>

#include "replay_harness.hpp"

namespace {

void put_le(std::vector<uint8_t>& b, size_t at, uint64_t v, int n) {
  for (int i = 0; i < n && at + i < b.size(); ++i) b[at + i] = static_cast<uint8_t>(v >> (8 * i));
}

void mutate(std::vector<uint8_t>& b, axlfuzz::Rng& r) {
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
  return axlfuzz::replay_main<std::vector<uint8_t>>(
      argc, argv,
      [](const uint8_t* data, size_t size) {
        axl_max_file_header h{};
        h.struct_size = sizeof h;
        return axl_max_file_parse(data, size, size, &h);
      },
      mutate);
}
