// The handle table: what an application holds is a (slot, generation) value,
// never an object's address, so a released handle stays recognisable as
// released for the life of the process, even after its memory is reused, and
// a double release cannot reach the object that now lives at that address.
//
// Lookups (handle_object, inline in internal.hpp) take no lock: chunks are
// allocated once and never move or go away. Registration and unregistration
// are serialised by one mutex; they happen once per object, never per
// enqueue.
#include <cinttypes>
#include <cstdio>
#include <new>

#include "internal.hpp"

namespace axl::core {

// Zero-initialised at load time (constinit), destroyed never (trivial
// destructors): lookups stay valid in atexit handlers and static destructors
// of any library, whatever the order they run in.
constinit HandleSlot g_handle_chunk0[kHandleChunkSize];
constinit std::atomic<HandleSlot*> g_handle_chunks[kHandleChunks] = {g_handle_chunk0};

namespace {

constexpr uint32_t kNoSlot = UINT32_MAX;

struct Table {
  std::mutex mu;
  uint32_t used = 0;             // slots handed out so far, ever (the next fresh one)
  uint32_t free_head = kNoSlot;  // released slots, last released first
};
constinit Table g_table;

// A slot handed out before (index < used): its chunk exists.
HandleSlot& slot_at(uint32_t index) { return *handle_slot(uint64_t(index) + 1); }

}  // namespace

void handle_register(Object* o) {
  std::lock_guard<std::mutex> lk(g_table.mu);
  uint32_t index;
  if (g_table.free_head != kNoSlot) {
    index = g_table.free_head;
    g_table.free_head = slot_at(index).next_free;
  } else {
    if (g_table.used >= kHandleChunks * kHandleChunkSize) throw std::bad_alloc();  // 2^28 live objects
    index = g_table.used;
    const uint32_t chunk = index >> kHandleChunkBits;
    if (!g_handle_chunks[chunk].load(std::memory_order_relaxed))
      // Release: a lookup that finds the chunk sees its zeroed slots.
      g_handle_chunks[chunk].store(new HandleSlot[kHandleChunkSize], std::memory_order_release);
    ++g_table.used;
  }
  HandleSlot& s = slot_at(index);
  const uint32_t gen = s.generation.load(std::memory_order_relaxed);
  // The generation is already the one this occupant gets (bumped when the
  // previous occupant left), so the handle below is fresh.
  s.object.store(o, std::memory_order_release);
  o->handle = (uint64_t(gen) << 32) | (uint64_t(index) + 1);
  o->registered = true;
}

void handle_unregister(Object* o) {
  std::lock_guard<std::mutex> lk(g_table.mu);
  if (!o->registered) return;
  o->registered = false;
  const uint32_t index = uint32_t(o->handle) - 1;
  HandleSlot& s = slot_at(index);
  s.object.store(nullptr, std::memory_order_relaxed);
  // Every handle of this slot issued so far now reads as released. A lookup
  // that saw the old generation and then an object stored by a later
  // registration sees this store too (that store is a release after it), so
  // it never returns the later occupant for the old handle.
  const uint32_t next = uint32_t(o->handle >> 32) + 1;
  s.generation.store(next, std::memory_order_release);
  // Generation wrap: after 2^32 - 1 occupants the next generation would
  // repeat the first one, and a handle released that long ago would name a
  // live object again. Such a slot is retired instead (never reused, its
  // generation left at UINT32_MAX, which no handle carries, so every handle
  // it issued still reads as released): 16 bytes per 2^32 - 1 releases of
  // one slot, and a handle value is never issued twice.
  if (next == UINT32_MAX) return;
  s.next_free = g_table.free_head;
  g_table.free_head = index;
}

axl_status handle_fail(const void* handle, Kind k, const char* what) {
  if (!handle) return fail(AXL_ERROR_INVALID_HANDLE, "%s handle is NULL", what);
  const uint64_t v = reinterpret_cast<uintptr_t>(handle);
  const uint32_t gen = uint32_t(v >> 32);
  if (HandleSlot* slot = handle_slot(v)) {
    HandleSlot& s = *slot;
    const uint32_t now = s.generation.load(std::memory_order_acquire);
    // An older generation of a used slot: this handle was issued and its
    // object has gone (a generation past the slot's was never issued).
    if (gen < now) return fail(AXL_ERROR_INVALID_HANDLE, "%s handle 0x%" PRIx64 " was already released", what, v);
    if (gen == now) {
      // A live object of another kind, or one whose last reference is going.
      if (Object* o = s.object.load(std::memory_order_acquire); o && o->kind != k)
        return fail(AXL_ERROR_INVALID_HANDLE, "%s handle 0x%" PRIx64 " is not a live %s (it is a %s handle)",
                    what, v, what, kind_name(o->kind));
    }
  }
  return fail(AXL_ERROR_INVALID_HANDLE, "%s handle 0x%" PRIx64 " is not a live %s", what, v, what);
}

const char* kind_name(Kind k) {
  switch (k) {
    case Kind::device: return "device";
    case Kind::queue: return "queue";
    case Kind::event: return "event";
    case Kind::buffer: return "buffer";
    case Kind::module: return "module";
    case Kind::kernel: return "kernel";
    case Kind::flag: return "flag";
    case Kind::trace: return "launch trace";
    case Kind::completion: return "completion";
    case Kind::profile_events: return "profile events";
  }
  return "unknown";
}

}  // namespace axl::core
