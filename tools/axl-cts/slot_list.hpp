// The slots the negotiation probe checks, generated from plugin.h's slot list
// (AXL_PLUGIN_SLOTS), so the CTS knows every slot of the header it was built
// with and which of them are REQUIRED. A header of its own so that
// tests/plugins/slot_append_test.cpp can compile it with an appended slot.
#pragma once

#include <cstddef>
#include <iterator>

#include "axl/plugin.h"

namespace cts {

using SlotDef = axl_plugin_slot_info;
inline constexpr SlotDef kSlots[] = {AXL_PLUGIN_SLOT_INFOS};

// The table size of ABI 1.0 (its slots are the list's minor-0 prefix), the
// smallest a 1.x plugin declares.
constexpr size_t table_size_at_minor(int minor) {
  size_t size = offsetof(axl_plugin_table, backend_init);
  for (const SlotDef& s : kSlots)
    if (s.minor <= minor) size = s.offset + sizeof(void*);
  return size;
}
inline constexpr size_t kTableSize10 = table_size_at_minor(0);
static_assert(std::size(kSlots) == AXL_PLUGIN_SLOT_COUNT);

}  // namespace cts
