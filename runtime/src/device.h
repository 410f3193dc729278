// What the runtime needs to know about the device of the current context (or, on HIP, the current
// device) for selection and grids (compute capability or gfx name, multiprocessor count, name),
// asked of the driver once per device and remembered per thread.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <string>

#include "taot/driver_api.h"
#include "taot/hip_api.h"
#include "taot/kernel_table.h"
#include "taot/status.h"

namespace taot::detail {

// On HIP (`vendor` amd) `device` is the HIP device number, `arch` 0, `multiprocessors` its compute
// units and `gfx` its gfx name without feature suffix ("gfx942"), which selects the images to run.
struct DeviceFacts {
  CUdevice device;
  int arch;                   // compute capability, major * 10 + minor
  int multiprocessors;        // CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT
  std::uint32_t ordinal;      // this record's number in the process, from 1: a key for caches per device
  std::string name;           // "NVIDIA H100 80GB HBM3"
  table::Vendor vendor;       // whose driver answered
  std::string gfx;            // AMD only: "gfx942"
};

// The facts of the device of `context` (the calling thread's current context). Thread-safe; the
// driver is asked once per device (per driver generation), and each thread remembers the last
// few contexts it asked about, so that a repeat costs no driver call and no lock. The result lives
// as long as the process. A context destroyed and re-created at the same address on another
// device is not told apart. Fails with the driver's error.
Expected<const DeviceFacts*> device_facts(const driver::Api& api, CUcontext context);

// The facts of HIP device `device`, asked of HIP once per device (per HIP generation); thread-safe
// (each thread remembers the device it asked about last, so that a repeat takes no lock), the
// result lives as long as the process. Fails with HIP's error.
Expected<const DeviceFacts*> hip_device_facts(const hip::Api& api, hip::hipDevice_t device);

// The contexts this thread asked device_facts() about last, with the answers (written only by
// device_facts()), so that the hot path finds a repeat without a call: remembered_facts_of.
struct RememberedDevice {
  std::uint64_t generation;
  CUcontext context;
  const DeviceFacts* facts;
};
inline constexpr int kRememberedDevices = 4;
inline thread_local RememberedDevice remembered_devices[kRememberedDevices] = {};

// What device_facts(api, `context`) returns when this thread remembers it, else null.
inline const DeviceFacts* remembered_facts_of(CUcontext context) noexcept {
  const std::uint64_t generation = driver::generation.load(std::memory_order_acquire);
  const DeviceFacts* found = nullptr;
  for (const RememberedDevice& entry : remembered_devices)  // a fixed count: unrolled, no loop to mispredict
    if (entry.context == context && entry.generation == generation && entry.facts != nullptr) found = entry.facts;
  return found;
}

}  // namespace taot::detail
