// What the runtime needs to know about the device of the current context for selection and
// grids (compute capability, multiprocessor count, name), asked of the driver once per device and
// remembered per thread per context.
#pragma once

#include <cuda.h>

#include <string>

#include "taot/driver_api.h"
#include "taot/status.h"

namespace taot::detail {

struct DeviceFacts {
  CUdevice device;
  int arch;             // compute capability, major * 10 + minor
  int multiprocessors;  // CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT
  std::string name;     // "NVIDIA H100 80GB HBM3"
};

// The facts of the device of `context` (the calling thread's current context). Thread-safe; the
// driver is asked once per device (per driver generation), and each thread remembers the last
// few contexts it asked about, so that a repeat costs no driver call and no lock. The result lives
// as long as the process. A context destroyed and re-created at the same address on another
// device is not told apart. Fails with the driver's error.
Expected<const DeviceFacts*> device_facts(const driver::Api& api, CUcontext context);

}  // namespace taot::detail
