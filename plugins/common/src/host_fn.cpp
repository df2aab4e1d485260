#include "axl/common/host_fn.hpp"

namespace axl::common {

axl_status enqueue_host_fn(WorkQueue& queue, axl_host_fn fn, void* user_data) {
  return queue.enqueue(OpInfo{OpKind::kHostFn, 0}, [fn, user_data] { fn(user_data); });
}

}  // namespace axl::common
