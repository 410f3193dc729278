// The recording fake HIP table; see fake_hip.h. Handles are small integers cast to pointers: a
// module is its index + 1, a function is (module << 8) | 1, an allocation 0x4a00000000 + 4 KiB * n.
#include "fake_hip.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>

namespace taot::testing {
namespace {

FakeHip* active_hip = nullptr;
thread_local int current_device = 0;
constexpr std::uint64_t kAllocationBase = 0x4a00000000;

}  // namespace

struct FakeHipEntryPoints {
  static FakeHip& fake() { return *active_hip; }

  static hip::hipError_t init(unsigned) { return hip::hipSuccess; }
  static const char* error_name(hip::hipError_t error) {
    switch (error) {
      case hip::hipSuccess: return "hipSuccess";
      case hip::hipErrorInvalidValue: return "hipErrorInvalidValue";
      case hip::hipErrorOutOfMemory: return "hipErrorOutOfMemory";
      case hip::hipErrorInvalidImage: return "hipErrorInvalidImage";
      case hip::hipErrorNotFound: return "hipErrorNotFound";
      case hip::hipErrorLaunchOutOfResources: return "hipErrorLaunchOutOfResources";
      default: return "hipErrorUnknown";
    }
  }
  static const char* error_string(hip::hipError_t) { return "fake HIP error"; }
  static hip::hipError_t get_device(int* device) {
    *device = current_device;
    return hip::hipSuccess;
  }
  static hip::hipError_t device_get_attribute(int* value, hip::hipDeviceAttribute_t attribute, int device) {
    std::lock_guard<std::mutex> lock(fake().mutex_);
    if (device < 0 || static_cast<std::size_t>(device) >= fake().devices_.size()) return hip::hipErrorInvalidValue;
    const FakeHip::Device& known = fake().devices_[static_cast<std::size_t>(device)];
    switch (attribute) {
      case hip::hipDeviceAttributeMultiprocessorCount: *value = known.compute_units; return hip::hipSuccess;
      case hip::hipDeviceAttributeMaxSharedMemoryPerBlock: *value = known.lds_limit; return hip::hipSuccess;
      default: return hip::hipErrorInvalidValue;
    }
  }
  static hip::hipError_t device_get_name(char* name, int length, hip::hipDevice_t device) {
    std::snprintf(name, static_cast<std::size_t>(length), "Fake AMD GPU %d", device);
    return hip::hipSuccess;
  }
  static hip::hipError_t device_properties(void* properties, int device) {
    std::lock_guard<std::mutex> lock(fake().mutex_);
    if (device < 0 || static_cast<std::size_t>(device) >= fake().devices_.size()) return hip::hipErrorInvalidValue;
    // Where HIP 6's hipDeviceProp_tR0600 has gcnArchName; the rest of the struct stays as given.
    char* name = static_cast<char*>(properties) + hip::kGcnArchNameOffset;
    std::memset(name, 0, hip::kGcnArchNameBytes);
    if (!fake().gcn_arch_name_missing) {
      const std::string& text = fake().devices_[static_cast<std::size_t>(device)].gcn_arch_name;
      std::memcpy(name, text.data(), std::min(text.size(), hip::kGcnArchNameBytes - 1));
    }
    return hip::hipSuccess;
  }
  static hip::hipError_t module_load_data(hip::hipModule_t* module, const void* image) {
    FakeHip& hip = fake();
    if (hip.load_delay_us > 0) std::this_thread::sleep_for(std::chrono::microseconds(hip.load_delay_us));
    if (hip.load_result != hip::hipSuccess) return hip.load_result;
    std::lock_guard<std::mutex> lock(hip.mutex_);
    ++hip.total_loads_;
    hip.modules_.push_back({current_device, image});
    *module = reinterpret_cast<hip::hipModule_t>(hip.modules_.size());
    return hip::hipSuccess;
  }
  static hip::hipError_t module_unload(hip::hipModule_t) {
    ++fake().unloads_;
    return hip::hipSuccess;
  }
  static hip::hipError_t module_get_function(hip::hipFunction_t* function, hip::hipModule_t module, const char*) {
    *function = reinterpret_cast<hip::hipFunction_t>((reinterpret_cast<std::uintptr_t>(module) << 8) | 1);
    return hip::hipSuccess;
  }
  static hip::hipError_t launch_kernel(hip::hipFunction_t function, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                                       unsigned by, unsigned bz, unsigned shared, hip::hipStream_t stream, void** params,
                                       void** extra) {
    FakeHip& hip = fake();
    if (extra != nullptr) return hip::hipErrorInvalidValue;
    RecordedHipLaunch launch{reinterpret_cast<std::uintptr_t>(function), nullptr, current_device, {gx, gy, gz},
                             {bx, by, bz}, shared, stream, {}};
    for (std::size_t p = 0; p < hip.params_per_launch; ++p) {
      std::uint64_t bytes = 0;
      std::memcpy(&bytes, params[p], sizeof(bytes));
      launch.params.push_back(bytes);
    }
    std::lock_guard<std::mutex> lock(hip.mutex_);
    const FakeHip::Module& module = hip.modules_.at((launch.function >> 8) - 1);
    if (module.device != current_device) return hip::hipErrorInvalidValue;  // a module of another device
    launch.image = module.image;
    if (hip.launch_result != hip::hipSuccess) return hip.launch_result;
    hip.launches_.push_back(std::move(launch));
    return hip::hipSuccess;
  }
  static hip::hipError_t malloc_async(void** pointer, std::size_t bytes, hip::hipStream_t stream) {
    std::lock_guard<std::mutex> lock(fake().mutex_);
    const std::uint64_t address = kAllocationBase + 4096 * fake().allocations_.size();
    fake().allocations_.push_back({address, bytes, stream});
    *pointer = reinterpret_cast<void*>(static_cast<std::uintptr_t>(address));
    return hip::hipSuccess;
  }
  static hip::hipError_t free_async(void* pointer, hip::hipStream_t stream) {
    std::lock_guard<std::mutex> lock(fake().mutex_);
    for (RecordedHipAllocation& allocation : fake().allocations_)
      if (allocation.address == reinterpret_cast<std::uintptr_t>(pointer) && !allocation.freed) {
        allocation.freed = true;
        allocation.freed_on = stream;
        allocation.launches_before_free = fake().launches_.size();
        return hip::hipSuccess;
      }
    return hip::hipErrorInvalidValue;
  }
};

FakeHip::FakeHip(std::size_t params) : params_per_launch(params) {
  api_.hipInit = &FakeHipEntryPoints::init;
  api_.hipGetErrorName = &FakeHipEntryPoints::error_name;
  api_.hipGetErrorString = &FakeHipEntryPoints::error_string;
  api_.hipGetDevice = &FakeHipEntryPoints::get_device;
  api_.hipDeviceGetAttribute = &FakeHipEntryPoints::device_get_attribute;
  api_.hipDeviceGetName = &FakeHipEntryPoints::device_get_name;
  api_.hipGetDevicePropertiesR0600 = &FakeHipEntryPoints::device_properties;
  api_.hipModuleLoadData = &FakeHipEntryPoints::module_load_data;
  api_.hipModuleUnload = &FakeHipEntryPoints::module_unload;
  api_.hipModuleGetFunction = &FakeHipEntryPoints::module_get_function;
  api_.hipModuleLaunchKernel = &FakeHipEntryPoints::launch_kernel;
  api_.hipMallocAsync = &FakeHipEntryPoints::malloc_async;
  api_.hipFreeAsync = &FakeHipEntryPoints::free_async;
  active_hip = this;
  current_device = 0;
  hip::install_for_testing(&api_);
}

FakeHip::~FakeHip() {
  hip::install_for_testing(nullptr);
  active_hip = nullptr;
}

FakeHip* FakeHip::active() { return active_hip; }

int FakeHip::add_device(std::string gcn_arch_name, int compute_units, int lds_limit) {
  std::lock_guard<std::mutex> lock(mutex_);
  devices_.push_back({std::move(gcn_arch_name), compute_units, lds_limit});
  return static_cast<int>(devices_.size()) - 1;
}

void FakeHip::make_current(int device) { current_device = device; }

int FakeHip::loads_of(const void* image) const {
  std::lock_guard<std::mutex> lock(mutex_);
  int loads = 0;
  for (const Module& module : modules_) loads += module.image == image;
  return loads;
}

const void* FakeHip::image_of(std::uintptr_t function) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const std::size_t module = (function >> 8) - 1;
  return module < modules_.size() ? modules_[module].image : nullptr;
}

std::vector<RecordedHipLaunch> FakeHip::launches() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return launches_;
}

std::vector<RecordedHipAllocation> FakeHip::allocations() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return allocations_;
}

}  // namespace taot::testing
