// Negotiation and the function table: what docs/abi.md requires of a plugin
// file before any device is touched. The probe child did the observing
// (probe.cpp); these cases judge its findings, and check that every NULL
// optional slot is answered by the core as AXL_ERROR_UNSUPPORTED naming it.
//
// The raw axl_* calls stay raw on purpose: each reaches one NULL slot
// through the C ABI and the case judges the exact status the core answers.
#include <catch2/catch.hpp>

#include <cstring>

#include "cts.hpp"

namespace cts {
namespace {

void probe_failures(Ctx& c, const char* case_name) {
  const ProbeResult& p = c.backend().probe;
  if (!p.crash.empty()) c.fatal(p.crash);
  for (const auto& [owner, text] : p.failures)
    if (owner == case_name) c.check(false, text);
}

struct SlotAnswer {
  Outcome outcome;
  std::string detail;
};

// The core's answer to a call that needs `slot`, which the table leaves NULL.
SlotAnswer judge(const std::string& slot, axl_status s) {
  const std::string message = s != AXL_SUCCESS ? axl::last_error(s).what() : "";
  if (s == AXL_ERROR_UNSUPPORTED && message.find(slot) != std::string::npos)
    return {Outcome::unsupported, cat("NULL slot; the core answers AXL_ERROR_UNSUPPORTED: ", message)};
  return {Outcome::fail,
          cat("NULL slot, but the call that needs it returned ", axl::status_name(s),
              s ? cat(" (", message, ")") : std::string(),
              " instead of AXL_ERROR_UNSUPPORTED naming ", slot)};
}

SlotAnswer unreachable(const std::string& why) {
  return {Outcome::unsupported, cat("NULL slot; not observable through axl.h: ", why)};
}

void noop_callback(void*) {}

// Makes the core need `slot` on the backend's first device and reports what
// it answered. Resources are released through the RAII wrappers.
SlotAnswer verify_null_slot(BackendUnderTest& b, const std::string& slot) {
  if (b.devices.empty())
    return {Outcome::unsupported, cat("NULL slot; the core's answer was not checked: ",
                                      b.unusable_reason())};
  const axl::Device& dev = b.devices[0].device;
  axl_device_t d = dev.get();
  axl::Queue q = dev.create_queue();
  static const unsigned char junk[32] = "not a module of any backend";

  if (slot == "device_get_memory_info") {
    uint64_t f = 0, t = 0;
    return judge(slot, axl_device_get_memory_info(d, &f, &t));
  }
  if (slot == "device_enable_peer_access") {
    if (b.devices.size() < 2) return unreachable("it needs two devices of this backend");
    return judge(slot, axl_device_enable_peer_access(d, b.devices[1].device.get()));
  }
  if (slot == "pinned_alloc") {
    axl_buffer_t buf = nullptr;
    const axl_status s = axl_buffer_create(d, 64, AXL_BUFFER_FLAG_PINNED, &buf);
    SlotAnswer a = judge(slot, s);
    if (buf) axl_buffer_release(buf);
    return a;
  }
  if (slot == "queue_fill") {
    axl::Buffer buf = dev.allocate(64);
    return judge(slot, axl_queue_fill(q.get(), buf.get(), 0, 64, 0, 1));
  }
  if (slot == "queue_enqueue_host_fn")
    return judge(slot, axl_queue_enqueue_host_func(q.get(), noop_callback, nullptr));
  if (slot == "flag_create" || slot == "flag_get_host_address") {
    if (slot == "flag_get_host_address" && !b.has_slot("flag_create"))
      return unreachable("flag_create is NULL too, and the core needs it first");
    axl_flag_t f = nullptr;
    SlotAnswer a = judge(slot, axl_flag_create(d, &f));
    if (f) axl_flag_release(f);
    return a;
  }
  if (slot == "queue_wait_flag" || slot == "queue_write_flag" || slot == "flag_get_device_address") {
    if (!b.has_slot("flag_create") || !b.has_slot("flag_get_host_address"))
      return unreachable("no completion flag can be created (flag_create or flag_get_host_address is NULL)");
    axl::Flag f = dev.create_flag();
    if (slot == "queue_wait_flag") return judge(slot, axl_queue_wait_flag(q.get(), f.get(), 0));
    if (slot == "queue_write_flag") return judge(slot, axl_queue_write_flag(q.get(), f.get(), 1));
    uint64_t addr = 0;
    return judge(slot, axl_flag_device_address(f.get(), &addr));
  }
  if (slot == "queue_launch") {
    if (!b.has_slot("device_get_test_kernel"))
      return unreachable("no kernel to launch: module_load and device_get_test_kernel give none here");
    axl::Kernel k = dev.test_kernel(AXL_TEST_KERNEL_INCREMENT_U32);
    axl::Buffer buf = dev.allocate(64);
    const uint32_t n = 0;
    axl_launch_arg args[2] = {};
    args[0].kind = AXL_KERNEL_ARG_BUFFER;
    args[0].buffer = buf.get();
    args[1].kind = AXL_KERNEL_ARG_SCALAR;
    args[1].size = sizeof n;
    args[1].value = &n;
    const uint32_t one[3] = {1, 1, 1};
    return judge(slot, axl_queue_launch(q.get(), k.get(), one, one, 0, args, 2));
  }
  if (slot == "event_elapsed_ms") {
    axl::Event a = dev.create_event(true), e = dev.create_event(true);
    q.record(a);
    q.record(e);
    q.synchronize();
    float ms = 0;
    return judge(slot, axl_event_elapsed_ms(a.get(), e.get(), &ms));
  }
  if (slot == "module_load") {
    axl_module_t m = nullptr;
    SlotAnswer a = judge(slot, axl_module_load_data(d, junk, sizeof junk, AXL_MODULE_FORMAT_AUTO, &m));
    if (m) axl_module_release(m);
    return a;
  }
  if (slot == "device_get_test_kernel") {
    axl_kernel_t k = nullptr;
    SlotAnswer a = judge(slot, axl_device_get_test_kernel(d, AXL_TEST_KERNEL_INCREMENT_U32, &k));
    if (k) axl_kernel_release(k);
    return a;
  }
  if (slot == "multicast_create") {
    if (b.devices.size() < 2) return unreachable("it needs two devices of this backend");
    axl_device_t two[2] = {d, b.devices[1].device.get()};
    axl_multicast_t g = nullptr;
    SlotAnswer a = judge(slot, axl_multicast_create(two, 2, 4096, &g));
    if (g) axl_multicast_release(g);
    return a;
  }
  if (slot == "device_get_multicast_support")
    return unreachable("the core answers 0 (no multicast support)");
  if (slot == "multicast_get_addresses" || slot == "multicast_destroy")
    return unreachable("the core reaches it only through a group multicast_create creates");
  if (slot == "backend_set_tracing")
    return unreachable("the core leaves the backend out of launch traces");
  if (slot == "backend_set_option")
    return unreachable("axl.h forwards options only in virtual-device mode");
  if (slot == "device_can_access_peer")
    return unreachable("the core answers 0 (no peer access)");
  if (slot == "queue_copy_peer")
    return unreachable("the core copies between devices through host memory instead");
  if (slot == "queue_get_native_handle")
    return unreachable("the core answers 0 (no native handle)");
  if (slot == "pinned_free" || slot == "flag_destroy" || slot == "module_unload" ||
      slot == "module_get_kernel")
    return unreachable("the core reaches it only through an object its partner slot creates");
  return unreachable("no axl.h call is mapped to this slot by axl-cts");
}

}  // namespace

TEST_CASE("cts.negotiate.table_shape", "[negotiate]") {
  for_each_backend("cts.negotiate.table_shape", [](Ctx& c) {
    BackendUnderTest& b = c.backend();
    const ProbeResult& p = b.probe;
    probe_failures(c, "cts.negotiate.table_shape");
    for (const auto& n : p.notes) c.note(n);
    if (b.record.state == AXL_PLUGIN_STATE_SKIPPED)
      c.check(false, cat("the core refused the plugin: ", b.record.reason));
    if (b.record.state != AXL_PLUGIN_STATE_SKIPPED && p.ran) {
      // Two negotiations, two answers: negotiate must be a pure function.
      c.check(p.name == b.name && p.api == b.record.api && p.version == b.record.version && p.flags == b.record.flags &&
                  p.abi_minor == b.record.abi_minor,
              cat("the probe and the core saw different answers (name ", p.name, "/", b.name,
                  ", api ", p.api, "/", b.record.api, ", version ", p.version, "/", b.record.version, ", flags ",
                  p.flags, "/", b.record.flags, ", minor ", p.abi_minor, "/", b.record.abi_minor, ")"));
    }
    // A slot that creates something without its partner slot leaks whatever
    // it created: the core has no other way to release it.
    const char* pairs[][2] = {{"pinned_alloc", "pinned_free"},
                              {"flag_create", "flag_destroy"},
                              {"module_load", "module_unload"},
                              {"multicast_create", "multicast_destroy"}};
    for (auto& pr : pairs)
      if (b.has_slot(pr[0]) && !b.has_slot(pr[1]))
        c.check(false, cat(pr[0], " is set but ", pr[1], " is NULL: what it creates can never be released"));
    if (b.has_slot("module_load") && !b.has_slot("module_get_kernel"))
      c.note("module_load is set but module_get_kernel is NULL: loaded modules are useless");
    // Each NULL optional slot is a result of its own: unsupported, or a
    // failure if the core does not say so.
    if (b.record.state == AXL_PLUGIN_STATE_SKIPPED || !p.ran) return;
    for (const SlotState& s : p.slots) {
      if (s.present || s.required) continue;
      SlotAnswer a;
      try {
        a = verify_null_slot(b, s.name);
      } catch (const axl::Error& e) {
        a = {Outcome::fail, cat("NULL slot; setting up the call that needs it failed: ",
                                e.status_name(), ": ", e.what())};
      }
      record(b, cat("cts.slot.", s.name), -1, a.outcome, a.detail);
    }
  });
}

TEST_CASE("cts.negotiate.version_mismatch", "[negotiate]") {
  for_each_backend("cts.negotiate.version_mismatch",
                   [](Ctx& c) { probe_failures(c, "cts.negotiate.version_mismatch"); });
}

TEST_CASE("cts.negotiate.no_side_effects", "[negotiate]") {
  for_each_backend("cts.negotiate.no_side_effects", [](Ctx& c) {
    probe_failures(c, "cts.negotiate.no_side_effects");
    const std::string& out = c.backend().probe.chatter;
    if (!out.empty())
      c.check(false, cat("the plugin printed while loading or negotiating (plugins log through "
                         "host->log only): '", out.substr(0, 300), out.size() > 300 ? "...'" : "'"));
  });
}

}  // namespace cts
