// Appending a slot is one entry in plugin.h's list (docs/abi.md, "How to
// append a slot"): everything that knows the slots is generated from it.
// This program is built twice, as it is and with AXL_SLOT_APPEND_TEST, which
// appends one slot through plugin.h's AXL_PLUGIN_SLOTS_EXTRA hook and gives
// the backend below a body for it. Each build prints what the table, the
// loader's required check (core/src/slot_table.hpp), the CTS probe
// (tools/axl-cts/slot_list.hpp), the CTS's slot-to-case table
// (tools/axl-cts/slot_cases.hpp, which also needs the new slot's case) and
// plugins/common's table fill (slots.hpp) know; slot_append_check.cmake requires the second to have exactly one slot
// more everywhere, the appended one, and nothing else changed. A consumer
// that went back to a hand-written list would not grow and fail there.
#ifdef AXL_SLOT_APPEND_TEST
#define AXL_PLUGIN_SLOTS_EXTRA(X) \
  X(fake_appended_slot, OPTIONAL, AXL_PLUGIN_ABI_MINOR, axl_status, (axl_pdevice device, uint64_t* out_value))
// The CTS case a real append writes, named in slot_cases.hpp's table. The
// slot_append_needs_cts_case test compiles this file without it
// (AXL_SLOT_APPEND_NO_CTS_CASE) and requires the build to fail.
#ifndef AXL_SLOT_APPEND_NO_CTS_CASE
#define CTS_SLOT_CASES_EXTRA {"fake_appended_slot", {"cts.fake.appended_slot"}},
#endif
#endif

#include <array>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <string_view>

#include "axl/common/slots.hpp"
#include "axl/plugin.h"
#include "slot_cases.hpp"  // tools/axl-cts
#include "slot_list.hpp"   // tools/axl-cts
#include "slot_table.hpp"  // core/src

namespace fake {

AXL_DECLARE_PLUGIN_SLOTS()

// The slots this backend implements; AXL_PLUGIN_TABLE leaves every other one
// NULL and needs no definition of it.
constexpr std::string_view kImplemented[] = {
    "backend_init",
#ifdef AXL_SLOT_APPEND_TEST
    "fake_appended_slot",
#endif
};

#define FAKE_SLOT_NAME_(name, req, minor, ret, params) std::string_view(#name),
constexpr std::string_view kAllSlots[] = {AXL_PLUGIN_SLOTS(FAKE_SLOT_NAME_)};
#undef FAKE_SLOT_NAME_

constexpr auto omitted() {
  std::array<std::string_view, std::size(kAllSlots) - std::size(kImplemented)> out{};
  size_t n = 0;
  for (std::string_view s : kAllSlots)
    if (!axl::common::slot_listed(s, kImplemented)) out[n++] = s;
  return out;
}
constexpr auto kOmitted = omitted();

axl_status backend_init() noexcept { return AXL_SUCCESS; }
#ifdef AXL_SLOT_APPEND_TEST
axl_status fake_appended_slot(axl_pdevice, uint64_t* out_value) noexcept {
  *out_value = 42;
  return AXL_SUCCESS;
}
#endif

constexpr axl_plugin_table kTable = AXL_PLUGIN_TABLE(kOmitted);

}  // namespace fake

int main() {
  std::printf("table_size %zu\n", sizeof(axl_plugin_table));
  std::printf("slot_count %d\n", static_cast<int>(AXL_PLUGIN_SLOT_COUNT));

  size_t loader_required = 0;
  for (const auto& s : axl::core::kSlots) loader_required += s.required;
  std::printf("loader_slots %zu\nloader_required %zu\n", std::size(axl::core::kSlots),
              loader_required);

  size_t cts_required = 0;
  for (const auto& s : cts::kSlots) cts_required += s.required;
  std::printf("cts_slots %zu\ncts_required %zu\ncts_table_size_1_0 %zu\n", std::size(cts::kSlots),
              cts_required, cts::kTableSize10);

  // The CTS's cases, one line per slot that has them.
  size_t cts_cases = 0;
  for (const auto& r : cts::kSlotCases)
    if (!r.cases[0].empty()) {
      std::printf("cts_case %.*s %.*s\n", int(r.slot.size()), r.slot.data(), int(r.cases[0].size()),
                  r.cases[0].data());
      ++cts_cases;
    }
  std::printf("cts_cases %zu\n", cts_cases);

  // The common table: its struct_size, and which slots it filled.
  std::printf("common_struct_size %zu\n", fake::kTable.struct_size);
  size_t filled = 0;
  for (const auto& s : axl::core::kSlots) {
    void (*fn)(void) = nullptr;
    std::memcpy(&fn, reinterpret_cast<const char*>(&fake::kTable) + s.offset, sizeof fn);
    if (fn) std::printf("common_filled %s\n", s.name);
    filled += fn != nullptr;
  }
  std::printf("common_filled_count %zu\n", filled);

  // One line per slot, as the loader and the CTS each see it; they must agree.
  int rc = 0;
  if (std::size(axl::core::kSlots) != std::size(cts::kSlots)) rc = 1;
  for (size_t i = 0; i < std::size(axl::core::kSlots) && i < std::size(cts::kSlots); ++i) {
    const auto& l = axl::core::kSlots[i];
    const auto& c = cts::kSlots[i];
    std::printf("slot %s %zu required=%d minor=%d\n", l.name, l.offset, l.required ? 1 : 0, l.minor);
    if (std::strcmp(l.name, c.name) != 0 || l.offset != c.offset || l.required != c.required ||
        l.minor != c.minor) {
      std::printf("MISMATCH loader %s / cts %s\n", l.name, c.name);
      rc = 1;
    }
  }

#ifdef AXL_SLOT_APPEND_TEST
  // The appended slot's body is reachable through the table, with plugin.h's
  // signature.
  // Read the pointer as the core does, from the table's bytes.
  decltype(axl_plugin_table::fake_appended_slot) fn = nullptr;
  std::memcpy(&fn, reinterpret_cast<const char*>(&fake::kTable) +
                       offsetof(axl_plugin_table, fake_appended_slot), sizeof fn);
  uint64_t value = 0;
  if (fn == nullptr || fn(nullptr, &value) != AXL_SUCCESS || value != 42) {
    std::printf("FAIL fake_appended_slot not callable through the table\n");
    rc = 1;
  }
#endif
  return rc;
}
