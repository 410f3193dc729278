// Loads and unloads modules per (context, cubin); see module_cache.h.
#include "module_cache.h"

namespace taot::detail {

Expected<ContextRef> current_context(const driver::Api& api) {
  CUcontext context = nullptr;
  const CUresult result = api.cuCtxGetCurrent(&context);
  if (result != CUDA_SUCCESS) return driver::call_error(api, "cuCtxGetCurrent", result);
  if (context == nullptr)
    return Status::error(TAOT_NO_CONTEXT,
                         "no CUDA context is current on this thread; make one current first "
                         "(cuCtxSetCurrent, cuDevicePrimaryCtxRetain, or cudaSetDevice with the runtime API)");
  std::uint64_t id = reinterpret_cast<std::uintptr_t>(context);
  if (api.cuCtxGetId != nullptr) {
    unsigned long long context_id = 0;
    if (api.cuCtxGetId(context, &context_id) == CUDA_SUCCESS) id = context_id;
  }
  return ContextRef{context, id};
}

ModuleCache& ModuleCache::instance() {
  static ModuleCache* cache = new ModuleCache();  // never destroyed: launches may run during exit
  return *cache;
}

Expected<CUmodule> ModuleCache::acquire(const driver::Api& api, const ContextRef& context, const void* cubin) {
  const auto key = std::make_pair(context.id, cubin);
  auto found = modules_.find(key);
  if (found != modules_.end()) {
    ++found->second.references;
    return static_cast<CUmodule>(found->second.module);
  }
  CUmodule module = nullptr;
  const CUresult result = api.cuModuleLoadData(&module, cubin);
  if (result != CUDA_SUCCESS) return driver::call_error(api, "cuModuleLoadData", result);
  modules_.emplace(key, Entry{module, 1});
  return module;
}

Status ModuleCache::release(const driver::Api& api, const ContextRef& context, const void* cubin) {
  auto found = modules_.find(std::make_pair(context.id, cubin));
  if (found == modules_.end()) return Status();
  if (--found->second.references > 0) return Status();
  const auto module = static_cast<CUmodule>(found->second.module);
  modules_.erase(found);
  const CUresult result = api.cuModuleUnload(module);
  if (result != CUDA_SUCCESS) return driver::call_error(api, "cuModuleUnload", result);
  return Status();
}

Expected<hip::hipModule_t> ModuleCache::acquire(const hip::Api& api, std::uint64_t place, const void* image) {
  const auto key = std::make_pair(place, image);
  auto found = modules_.find(key);
  if (found != modules_.end()) {
    ++found->second.references;
    return static_cast<hip::hipModule_t>(found->second.module);
  }
  hip::hipModule_t module = nullptr;
  const hip::hipError_t result = api.hipModuleLoadData(&module, image);
  if (result != hip::hipSuccess) return hip::call_error(api, "hipModuleLoadData", result);
  modules_.emplace(key, Entry{module, 1});
  return module;
}

Status ModuleCache::release(const hip::Api& api, std::uint64_t place, const void* image) {
  auto found = modules_.find(std::make_pair(place, image));
  if (found == modules_.end()) return Status();
  if (--found->second.references > 0) return Status();
  const auto module = static_cast<hip::hipModule_t>(found->second.module);
  modules_.erase(found);
  const hip::hipError_t result = api.hipModuleUnload(module);
  if (result != hip::hipSuccess) return hip::call_error(api, "hipModuleUnload", result);
  return Status();
}

}  // namespace taot::detail
