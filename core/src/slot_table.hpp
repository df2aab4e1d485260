// The loader's view of the plugin table, generated from plugin.h's slot list
// (AXL_PLUGIN_SLOTS): each slot's name, offset and whether the core refuses
// a plugin that leaves it NULL. A header of its own so that
// tests/plugins/slot_append_test.cpp can compile it with an appended slot.
#pragma once

#include <cstddef>
#include <iterator>

#include "axl/plugin.h"

namespace axl::core {

using SlotInfo = axl_plugin_slot_info;
inline constexpr SlotInfo kSlots[] = {AXL_PLUGIN_SLOT_INFOS};

static_assert(std::size(kSlots) == AXL_PLUGIN_SLOT_COUNT);

// docs/abi.md: slots are appended in minor order, and a slot appended in a
// minor is optional (making it required would refuse every older plugin).
constexpr bool slots_appended_in_order() {
  for (size_t i = 1; i < std::size(kSlots); ++i)
    if (kSlots[i].minor < kSlots[i - 1].minor) return false;
  return true;
}
constexpr bool appended_slots_optional() {
  for (const SlotInfo& s : kSlots)
    if (s.minor > 0 && s.required) return false;
  return true;
}
static_assert(slots_appended_in_order(), "a slot's minor is below the one before it");
static_assert(appended_slots_optional(), "a slot appended after 1.0 must be OPTIONAL");

}  // namespace axl::core
