// metal_stub.cpp's table checked against plugin.h's slot list when this test
// is compiled: the stub names every slot by hand (it is the single file a
// third party copies, with plugin.h and status.h only), so nothing generates
// its table, and a slot appended to the list without an entry there would
// silently stay NULL in every backend copied from it. Here each REQUIRED
// slot must be filled, and each OPTIONAL one filled or named in kLeftOut,
// the stub's slots left NULL on purpose (the multicast group). The appended build
// (AXL_SLOT_APPEND_TEST, plugin.h's AXL_PLUGIN_SLOTS_EXTRA hook) must fail to
// compile, naming the slot: the ctest metal_stub_slots_append builds it and
// expects exactly that error.
#ifdef AXL_SLOT_APPEND_TEST
#define AXL_PLUGIN_SLOTS_EXTRA(X) \
  X(fake_appended_slot, OPTIONAL, AXL_PLUGIN_ABI_MINOR, axl_status, (axl_pdevice device, uint64_t* out_value))
#endif

#include <cstdio>
#include <string_view>

// The stub itself, so its table is a constant expression here.
#include "metal_stub.cpp"

namespace {

// Optional slots metal_stub leaves NULL on purpose (the core answers
// AXL_ERROR_UNSUPPORTED naming them): the multicast-group slots (ABI 1.4),
// which a backend fills all or none, and a new backend rarely starts with.
constexpr std::string_view kLeftOut[] = {"device_get_multicast_support", "multicast_create",
                                         "multicast_get_addresses", "multicast_destroy"};

constexpr bool left_out(std::string_view name) {
  for (std::string_view n : kLeftOut)
    if (n == name) return true;
  return false;
}

#define METAL_STUB_CHECK_SLOT_(name, req, minor, ret, params)                                       \
  static_assert(kTable.name != nullptr || (!AXL_PLUGIN_SLOT_IS_REQUIRED(req) && left_out(#name)), \
                "metal_stub.cpp's table does not fill slot " #name                                 \
                " (fill it, or for an OPTIONAL slot name it in kLeftOut)");                        \
  static_assert(!(kTable.name != nullptr && left_out(#name)),                                     \
                "slot " #name " is filled in metal_stub.cpp but named in kLeftOut");
AXL_PLUGIN_SLOTS(METAL_STUB_CHECK_SLOT_)
#undef METAL_STUB_CHECK_SLOT_

static_assert(kTable.struct_size == sizeof(axl_plugin_table));

}  // namespace


#define METAL_STUB_FILLED_(name, req, minor, ret, params) +(kTable.name != nullptr ? 1 : 0)
constexpr int kFilled = 0 AXL_PLUGIN_SLOTS(METAL_STUB_FILLED_);
#undef METAL_STUB_FILLED_

int main() {
  // What the asserts above established at compile time, for the test log.
  std::printf("metal_stub fills %d of the %d slots of plugin.h's list\n", kFilled,
              static_cast<int>(AXL_PLUGIN_SLOT_COUNT));
  return 0;
}
