// What taot keeps per CUDA context: the kernel variant it launched there last (named when a device
// assert poisons the context) and whether the context was prepared for its first launch (the
// printf FIFO size of tl.device_print, when one is requested).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

#include "module_cache.h"
#include "taot/driver_api.h"

namespace taot::detail {

// One context as taot has seen it. Never freed (a few dozen bytes per context in the process's
// life), so functions loaded in it may point at it without a lock.
struct ContextState {
  std::uint64_t context_id;
  // "library::kernel variant id" of the last launch the driver accepted in this context, or null.
  // Written with one relaxed store per launch; the names are interned and live as long as the process.
  std::atomic<const std::string*> last_launch{nullptr};
  bool prepared = false;  // guarded by the module cache's lock
};

// With the module cache's lock held, `context` current: the state of `context`, prepared on first
// use (before taot's first launch in it): the printf FIFO set to the requested size, if any, with
// cuCtxSetLimit. Fails naming the call when the driver refuses the size or lacks cuCtxSetLimit.
Expected<ContextState*> prepared_context(const driver::Api& api, const ContextRef& context);

// `name` kept for the life of the process; the same pointer for the same text. Thread-safe.
const std::string* interned_name(const std::string& name);

// What call_error adds to CUDA_ERROR_ASSERT: which kernel variant fired (the last one taot launched
// in the current context) and that the context must be re-created.
std::string device_assert_note(const driver::Api& api);

// The printf FIFO size contexts are prepared with: set_printf_fifo_size()'s, else
// $TAOT_PRINTF_FIFO_BYTES (read once), else 0 (the driver's default, 1 MiB).
std::size_t requested_printf_fifo_bytes();

}  // namespace taot::detail
