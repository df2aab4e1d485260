// Host callbacks on a WorkQueue (plugin.h's queue_enqueue_host_fn).
#pragma once

#include "axl/common/work_queue.hpp"
#include "axl/plugin.h"

namespace axl::common {

// Enqueues fn(user_data) to run on `queue`'s worker after all earlier work.
// The callback is application code: it must not block on the same queue
// (WorkQueue::synchronize detects that case and refuses rather than hang).
axl_status enqueue_host_fn(WorkQueue& queue, axl_host_fn fn, void* user_data);

}  // namespace axl::common
