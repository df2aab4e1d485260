// Intrusive reference counting for plugin objects that queued operations may
// still reference after the application released its handle (an event whose
// record marker has not run yet, a flag a queue is still polling).
#pragma once

#include <atomic>
#include <cstdint>
#include <utility>

namespace axl::common {

// Base for objects shared between a handle and in-flight queue operations.
// Starts with one reference, owned by whoever called new.
template <class T>
class RefCounted {
 public:
  RefCounted() = default;
  RefCounted(const RefCounted&) = delete;
  RefCounted& operator=(const RefCounted&) = delete;

  // Adds a reference. Relaxed: a new reference is always made from an
  // existing one, which already orders the object's construction.
  void retain() const noexcept { refs_.fetch_add(1, std::memory_order_relaxed); }

  // Drops a reference and deletes the object with the last one. Acq_rel so
  // that every write made through other references happens before delete.
  void release() const noexcept {
    if (refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      delete static_cast<const T*>(this);
    }
  }

 protected:
  ~RefCounted() = default;

 private:
  mutable std::atomic<uint32_t> refs_{1};
};

// Owning smart pointer over a RefCounted object.
template <class T>
class Ref {
 public:
  Ref() noexcept = default;
  // Takes a new reference to `p` (does not adopt the caller's).
  explicit Ref(T* p) noexcept : p_(p) {
    if (p_ != nullptr) p_->retain();
  }
  Ref(const Ref& o) noexcept : Ref(o.p_) {}
  Ref(Ref&& o) noexcept : p_(std::exchange(o.p_, nullptr)) {}
  Ref& operator=(Ref o) noexcept {
    std::swap(p_, o.p_);
    return *this;
  }
  ~Ref() {
    if (p_ != nullptr) p_->release();
  }

  // Takes over a reference the caller owns (e.g. the initial one from new).
  static Ref adopt(T* p) noexcept {
    Ref r;
    r.p_ = p;
    return r;
  }

  T* get() const noexcept { return p_; }
  T* operator->() const noexcept { return p_; }
  T& operator*() const noexcept { return *p_; }
  explicit operator bool() const noexcept { return p_ != nullptr; }

 private:
  T* p_ = nullptr;
};

// Creates a T and returns the only reference to it.
template <class T, class... Args>
Ref<T> make_ref(Args&&... args) {
  return Ref<T>::adopt(new T(std::forward<Args>(args)...));
}

}  // namespace axl::common
