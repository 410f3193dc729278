// A recording fake of the HIP table (taot/hip_api.h), as fake_driver.h is of CUDA's: devices with
// a gfx name, module loads counted per (device, code object), launches recorded with their
// parameter bytes, stream-ordered allocations, and the errors a test scripts.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "taot/hip_api.h"

namespace taot::testing {

struct RecordedHipLaunch {
  std::uintptr_t function;
  const void* image;   // the code object its module was loaded from
  int device;          // the device current at the launch
  unsigned grid[3];
  unsigned block[3];
  unsigned shared_bytes;
  hip::hipStream_t stream;
  std::vector<std::uint64_t> params;  // the first 8 bytes behind each parameter pointer
};

struct RecordedHipAllocation {
  std::uint64_t address;
  std::size_t bytes;
  hip::hipStream_t stream;
  bool freed = false;
  hip::hipStream_t freed_on = nullptr;
  std::size_t launches_before_free = 0;  // launches recorded (all devices) when it was freed
};

// Installs itself as the HIP table on construction (so that HIP is the driver in use, unless a
// CUDA fake is installed too) and removes itself on destruction. One at a time. Devices are
// numbered from 0 in the order added; device 0 is current on every thread until make_current.
class FakeHip {
 public:
  explicit FakeHip(std::size_t params_per_launch = 6);
  ~FakeHip();
  FakeHip(const FakeHip&) = delete;
  FakeHip& operator=(const FakeHip&) = delete;

  // Adds a device whose gcnArchName is `gcn_arch_name` ("gfx950:sramecc+:xnack-"); its number.
  int add_device(std::string gcn_arch_name, int compute_units = 304, int lds_limit = 64 * 1024);
  void make_current(int device);  // for the calling thread

  int loads_of(const void* image) const;  // hipModuleLoadData calls with this code object, all devices
  int total_loads() const { return total_loads_.load(); }
  int unloads() const { return unloads_.load(); }
  const void* image_of(std::uintptr_t function) const;  // the code object a function was got from
  std::vector<RecordedHipLaunch> launches() const;
  std::vector<RecordedHipAllocation> allocations() const;

  hip::hipError_t launch_result = hip::hipSuccess;  // what hipModuleLaunchKernel returns
  hip::hipError_t load_result = hip::hipSuccess;    // what hipModuleLoadData returns
  bool gcn_arch_name_missing = false;  // hipGetDevicePropertiesR0600 leaves gcnArchName empty
  int load_delay_us = 0;               // widens race windows in concurrency tests
  std::size_t params_per_launch;       // how many parameters to record

  static FakeHip* active();
  hip::Api& edit_api() { return api_; }

 private:
  friend struct FakeHipEntryPoints;
  struct Device {
    std::string gcn_arch_name;
    int compute_units;
    int lds_limit;
  };
  struct Module {
    int device;
    const void* image;
  };
  hip::Api api_;
  mutable std::mutex mutex_;
  std::vector<Device> devices_;
  std::vector<Module> modules_;  // module handle - 1 -> what was loaded
  std::vector<RecordedHipLaunch> launches_;
  std::vector<RecordedHipAllocation> allocations_;
  std::atomic<int> total_loads_{0};
  std::atomic<int> unloads_{0};
};

}  // namespace taot::testing
