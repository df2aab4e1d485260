// The handle table: what an application holds is a (slot, generation) value,
// never an object's address, so a released handle stays recognisable as
// released for the life of the process, even after its memory is reused, and
// a double release cannot reach the object that now lives at that address.
//
// Lookups (handle_object, inline in internal.hpp) take no lock: chunks are
// allocated once and never move or go away. Registration and unregistration
// are serialised by one mutex; they happen once per object, never per
// enqueue.
#include <pthread.h>

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

struct Table {
  std::mutex mu;
  uint32_t used = 0;       // slots handed out so far, ever (the next fresh one)
  uint32_t free_head = 0;  // index + 1 of the last slot released, 0 for none
};
constinit Table g_table;

// fork(): a child must not inherit the mutex held by a thread that does not
// exist there, or its first create or release would hang. The table's lock
// is taken alone (nothing is called while it is held), so it needs no place
// in the order of the core's other fork-time locks.
const int g_fork_hooks = pthread_atfork([] { g_table.mu.lock(); }, [] { g_table.mu.unlock(); },
                                        [] { g_table.mu.unlock(); });

// A slot handed out before (index < used): its chunk exists.
HandleSlot& slot_at(uint32_t index) { return *handle_slot(uint64_t(index) + 1); }

uint32_t generation_of(uint64_t tag) { return uint32_t(tag >> 32); }

}  // namespace

void handle_register(Object* o) {
  std::lock_guard<std::mutex> lk(g_table.mu);
  uint32_t index;
  if (g_table.free_head != 0) {
    index = g_table.free_head - 1;
    g_table.free_head = uint32_t(slot_at(index).tag.load(std::memory_order_relaxed));
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
  // The generation was bumped when the previous occupant left (a fresh slot
  // starts at 0), so this value was never issued before.
  const uint64_t h = (uint64_t(generation_of(s.tag.load(std::memory_order_relaxed))) << 32) | (uint64_t(index) + 1);
  // Release: a lookup that reads this object for a handle of an earlier
  // occupant then sees the freed tag (or this one) when it checks again.
  s.object.store(o, std::memory_order_release);
  s.tag.store(h, std::memory_order_release);
  o->handle = h;
  o->registered = true;
}

void handle_unregister(Object* o) {
  std::lock_guard<std::mutex> lk(g_table.mu);
  if (!o->registered) return;
  o->registered = false;
  const uint32_t index = uint32_t(o->handle) - 1;
  HandleSlot& s = slot_at(index);
  // Every handle of this slot issued so far now reads as released.
  const uint32_t next = generation_of(o->handle) + 1;
  // Generation wrap: after 2^32 - 1 occupants the next generation would
  // repeat the first one, and a handle released that long ago would name a
  // live object again. Such a slot is retired instead: never reused, its
  // generation left at UINT32_MAX, which no handle carries, so every handle
  // it issued still reads as released. It costs 16 bytes per 2^32 - 1
  // releases of one slot, and a handle value is never issued twice.
  const bool retire = next == UINT32_MAX;
  s.tag.store((uint64_t(next) << 32) | (retire ? 0 : g_table.free_head), std::memory_order_release);
  if (!retire) g_table.free_head = index + 1;
}

axl_status handle_fail(const void* handle, Kind k, const char* what) {
  if (!handle) return fail(AXL_ERROR_INVALID_HANDLE, "%s handle is NULL", what);
  const uint64_t v = reinterpret_cast<uintptr_t>(handle);
  if (HandleSlot* s = handle_slot(v)) {
    const uint64_t tag = s->tag.load(std::memory_order_acquire);
    // An older generation than the slot's (its occupant's, or the next one
    // while free): this handle was issued and its object has gone. A later
    // generation, or the next one of a free slot, was never issued.
    if (generation_of(v) < generation_of(tag))
      return fail(AXL_ERROR_INVALID_HANDLE, "%s handle 0x%" PRIx64 " was already released", what, v);
    if (tag == v) {
      // A live object of another kind.
      Object* o = s->object.load(std::memory_order_acquire);
      if (o->kind != k)
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
    case Kind::multicast: return "multicast group";
  }
  return "unknown";
}

}  // namespace axl::core
