// Per-context state: the last launch (for device-assert errors) and the printf FIFO size; see
// context_state.h.
#include "context_state.h"

#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <set>

#include "c_api_errors.h"
#include "taot/c_api.h"
#include "taot/runtime.h"

namespace taot::detail {
namespace {

constexpr std::int64_t kNotSet = -1;
std::atomic<std::int64_t> fifo_bytes_set{kNotSet};  // set_printf_fifo_size()

// The states, by context id, and the interned launch names; never destroyed (launches may run
// during exit).
struct Registry {
  std::mutex mutex;
  std::map<std::uint64_t, std::unique_ptr<ContextState>> contexts;
  std::set<std::string> names;
};

Registry& registry() {
  static Registry* instance = new Registry();
  return *instance;
}

ContextState* state_of(std::uint64_t context_id, bool create) {
  Registry& known = registry();
  std::lock_guard<std::mutex> lock(known.mutex);
  auto found = known.contexts.find(context_id);
  if (found != known.contexts.end()) return found->second.get();
  if (!create) return nullptr;
  auto made = std::make_unique<ContextState>();
  made->context_id = context_id;
  return known.contexts.emplace(context_id, std::move(made)).first->second.get();
}

// $TAOT_PRINTF_FIFO_BYTES as a byte count (a plain number, or with a K, M or G suffix); 0 when unset
// or unreadable.
std::size_t environment_fifo_bytes() {
  const char* text = std::getenv("TAOT_PRINTF_FIFO_BYTES");
  if (text == nullptr || *text == '\0') return 0;
  char* end = nullptr;
  const unsigned long long value = std::strtoull(text, &end, 10);
  std::size_t scale = 1;
  if (end != nullptr && *end != '\0') {
    switch (*end) {
      case 'k': case 'K': scale = std::size_t{1} << 10; break;
      case 'm': case 'M': scale = std::size_t{1} << 20; break;
      case 'g': case 'G': scale = std::size_t{1} << 30; break;
      default: return 0;
    }
    if (end[1] != '\0') return 0;
  }
  return static_cast<std::size_t>(value) * scale;
}

}  // namespace

std::size_t requested_printf_fifo_bytes() {
  const std::int64_t set = fifo_bytes_set.load(std::memory_order_acquire);
  if (set != kNotSet) return static_cast<std::size_t>(set);
  static const std::size_t from_environment = environment_fifo_bytes();
  return from_environment;
}

Expected<ContextState*> prepared_context(const driver::Api& api, const ContextRef& context) {
  ContextState* state = state_of(context.id, true);
  if (state->prepared) return state;
  if (const std::size_t bytes = requested_printf_fifo_bytes(); bytes > 0) {
    const std::string call = "cuCtxSetLimit(CU_LIMIT_PRINTF_FIFO_SIZE, " + std::to_string(bytes) + ")";
    if (api.cuCtxSetLimit == nullptr)
      return Status::error(TAOT_NOT_SUPPORTED, "a printf FIFO size was requested but the CUDA driver has no cuCtxSetLimit");
    const CUresult result = api.cuCtxSetLimit(CU_LIMIT_PRINTF_FIFO_SIZE, bytes);
    if (result != CUDA_SUCCESS) return driver::call_error(api, call.c_str(), result);
  }
  state->prepared = true;
  return state;
}

const std::string* interned_name(const std::string& name) {
  Registry& known = registry();
  std::lock_guard<std::mutex> lock(known.mutex);
  return &*known.names.insert(name).first;
}

std::string device_assert_note(const driver::Api& api) {
  const std::string* last = nullptr;
  CUcontext handle = nullptr;
  if (api.cuCtxGetCurrent != nullptr && api.cuCtxGetCurrent(&handle) == CUDA_SUCCESS && handle != nullptr) {
    std::uint64_t id = reinterpret_cast<std::uintptr_t>(handle);
    unsigned long long context_id = 0;
    if (api.cuCtxGetId != nullptr && api.cuCtxGetId(handle, &context_id) == CUDA_SUCCESS) id = context_id;
    if (const ContextState* state = state_of(id, false)) last = state->last_launch.load(std::memory_order_relaxed);
  }
  std::string note = last != nullptr ? "a device assert fired in " + *last + ", the last kernel taot launched in this context"
                                     : std::string("a device assert fired in a kernel of this context (taot launched none here)");
  return note + "; the CUDA context is unusable: destroy and re-create it (or restart the process)";
}

}  // namespace taot::detail

namespace taot {

Status set_printf_fifo_size(std::size_t bytes) {
  if (bytes > static_cast<std::size_t>(INT64_MAX))
    return Status::error(TAOT_INVALID_ARGUMENT, "set_printf_fifo_size: " + std::to_string(bytes) + " bytes is too many");
  detail::fifo_bytes_set.store(static_cast<std::int64_t>(bytes), std::memory_order_release);
  return Status();
}

}  // namespace taot

extern "C" taot_status taot_set_printf_fifo_size(size_t bytes) {
  return taot::detail::guarded([&] { return taot::set_printf_fifo_size(bytes); });
}
