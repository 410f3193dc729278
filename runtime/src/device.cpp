// Device facts, cached per device and per thread; see device.h.
#include "device.h"

#include <map>
#include <memory>
#include <mutex>
#include <utility>

namespace taot::detail {
namespace {

Expected<DeviceFacts> query(const driver::Api& api, CUdevice device) {
  DeviceFacts facts{device, 0, 0, 0, {}, table::Vendor::nvidia, {}};
  int major = 0, minor = 0;
  CUresult result = api.cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device);
  if (result == CUDA_SUCCESS)
    result = api.cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device);
  if (result == CUDA_SUCCESS)
    result = api.cuDeviceGetAttribute(&facts.multiprocessors, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, device);
  if (result != CUDA_SUCCESS) return driver::call_error(api, "cuDeviceGetAttribute", result);
  facts.arch = major * 10 + minor;
  char name[256] = {};
  if (api.cuDeviceGetName(name, sizeof(name) - 1, device) == CUDA_SUCCESS) facts.name = name;
  return facts;
}

Expected<DeviceFacts> query_hip(const hip::Api& api, hip::hipDevice_t device) {
  DeviceFacts facts{device, 0, 0, 0, {}, table::Vendor::amd, {}};
  const hip::hipError_t result =
      api.hipDeviceGetAttribute(&facts.multiprocessors, hip::hipDeviceAttributeMultiprocessorCount, device);
  if (result != hip::hipSuccess) return hip::call_error(api, "hipDeviceGetAttribute", result);
  Expected<std::string> gfx = hip::device_gfx_name(api, device);
  if (!gfx.ok()) return std::move(gfx).take_status();
  facts.gfx = std::move(gfx).value();
  char name[256] = {};
  if (api.hipDeviceGetName(name, sizeof(name) - 1, device) == hip::hipSuccess) facts.name = name;
  return facts;
}

// Facts per (driver generation, device), kept for the life of the process; HIP devices apart.
struct Registry {
  std::mutex mutex;
  std::map<std::pair<std::uint64_t, CUdevice>, std::unique_ptr<DeviceFacts>> devices;
  std::map<std::pair<std::uint64_t, hip::hipDevice_t>, std::unique_ptr<DeviceFacts>> hip_devices;
  std::uint32_t made = 0;  // records made so far (their ordinals)
};

Registry& registry() {
  static Registry* instance = new Registry();  // never destroyed: launches may run during exit
  return *instance;
}

}  // namespace

Expected<const DeviceFacts*> device_facts(const driver::Api& api, CUcontext context) {
  thread_local int next_slot = 0;
  if (const DeviceFacts* remembered = remembered_facts_of(context)) return remembered;
  const std::uint64_t generation = driver::generation.load(std::memory_order_acquire);

  CUdevice device = 0;
  const CUresult result = api.cuCtxGetDevice(&device);
  if (result != CUDA_SUCCESS) return driver::call_error(api, "cuCtxGetDevice", result);
  const DeviceFacts* facts = nullptr;
  {
    Registry& known = registry();
    std::lock_guard<std::mutex> lock(known.mutex);
    std::unique_ptr<DeviceFacts>& slot = known.devices[{generation, device}];
    if (slot == nullptr) {
      Expected<DeviceFacts> queried = query(api, device);
      if (!queried.ok()) {
        known.devices.erase({generation, device});
        return std::move(queried).take_status();
      }
      slot = std::make_unique<DeviceFacts>(std::move(queried).value());
      slot->ordinal = ++known.made;
    }
    facts = slot.get();
  }
  remembered_devices[next_slot] = RememberedDevice{generation, context, facts};
  next_slot = (next_slot + 1) % kRememberedDevices;
  return facts;
}

Expected<const DeviceFacts*> hip_device_facts(const hip::Api& api, hip::hipDevice_t device) {
  const std::uint64_t generation = hip::generation.load(std::memory_order_acquire);
  // The device this thread asked about last, so that a repeat takes no lock.
  thread_local std::uint64_t last_generation = ~std::uint64_t{0};
  thread_local hip::hipDevice_t last_device = -1;
  thread_local const DeviceFacts* last_facts = nullptr;
  if (last_facts != nullptr && last_generation == generation && last_device == device) return last_facts;
  Registry& known = registry();
  std::lock_guard<std::mutex> lock(known.mutex);
  std::unique_ptr<DeviceFacts>& slot = known.hip_devices[{generation, device}];
  if (slot == nullptr) {
    Expected<DeviceFacts> queried = query_hip(api, device);
    if (!queried.ok()) {
      known.hip_devices.erase({generation, device});
      return std::move(queried).take_status();
    }
    slot = std::make_unique<DeviceFacts>(std::move(queried).value());
    slot->ordinal = ++known.made;
  }
  last_generation = generation;
  last_device = device;
  last_facts = slot.get();
  return slot.get();
}

}  // namespace taot::detail
