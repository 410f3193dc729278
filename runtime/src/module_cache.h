// The process-wide cache of loaded modules, one per (CUDA context, cubin) or, on HIP, per (device,
// code object), reference-counted.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <utility>

#include "taot/driver_api.h"
#include "taot/hip_api.h"

namespace taot::detail {

// A context as the cache knows it: the handle, and an id that tells a new context from a destroyed
// one at the same address (cuCtxGetId where the driver has it, else the address).
struct ContextRef {
  CUcontext handle;
  std::uint64_t id;
};

// The current context of the calling thread, with its id; TAOT_NO_CONTEXT when there is none.
Expected<ContextRef> current_context(const driver::Api& api);

// Thread-safe. All loading in the process happens under its one lock, so a (context, cubin) is
// loaded exactly once however many threads ask at the same time.
class ModuleCache {
 public:
  static ModuleCache& instance();

  std::mutex& mutex() { return mutex_; }

  // With mutex() held: the module of `cubin` in the current context `context`, loading it on
  // first use; each call adds a reference.
  Expected<CUmodule> acquire(const driver::Api& api, const ContextRef& context, const void* cubin);
  // With mutex() held: drops a reference; the last one unloads the module (context must be current).
  Status release(const driver::Api& api, const ContextRef& context, const void* cubin);
  // The same on HIP, where a module belongs to a device: `place` is the device's place id
  // (hip_place_id in hip_launch.h), whose top bit keeps it apart from CUDA context ids.
  Expected<hip::hipModule_t> acquire(const hip::Api& api, std::uint64_t place, const void* image);
  Status release(const hip::Api& api, std::uint64_t place, const void* image);

 private:
  struct Entry {
    void* module;  // a CUmodule, or a hipModule_t
    int references;
  };
  std::mutex mutex_;
  std::map<std::pair<std::uint64_t, const void*>, Entry> modules_;
};

}  // namespace taot::detail
