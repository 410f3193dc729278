// The seam between taot and AMD's HIP runtime, the second driver: every HIP entry point the
// runtime uses, listed once, resolved from a dlopen'ed libamdhip64 into one table. Tests install a
// recording fake table instead (tests/unit/runtime/fake_hip.h). No HIP header is needed to build:
// the few HIP types and values used are declared here.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

#include "taot/status.h"

namespace taot::hip {

// HIP's types and values, declared from the documented API of HIP 6.x (ROCm 6; not checked against
// ROCm 7's headers): hipError_t is a C enum (an int), handles are pointers to opaque structs, a
// device is an int. The error numbers besides hipSuccess are the ones the tests' fake returns.
using hipError_t = int;
using hipDevice_t = int;
using hipModule_t = struct ihipModule_t*;
using hipFunction_t = struct ihipModuleSymbol_t*;
using hipStream_t = struct ihipStream_t*;
using hipEvent_t = struct ihipEvent_t*;
using hipDeviceptr_t = void*;

inline constexpr hipError_t hipSuccess = 0;
inline constexpr hipError_t hipErrorInvalidValue = 1;
inline constexpr hipError_t hipErrorOutOfMemory = 2;
inline constexpr hipError_t hipErrorInvalidImage = 200;
inline constexpr hipError_t hipErrorNotFound = 500;
inline constexpr hipError_t hipErrorLaunchOutOfResources = 701;

// hipDeviceAttribute_t values (HIP 6.x's numbering, which differs from CUDA's).
using hipDeviceAttribute_t = int;
inline constexpr hipDeviceAttribute_t hipDeviceAttributeMultiprocessorCount = 63;
inline constexpr hipDeviceAttribute_t hipDeviceAttributeMaxSharedMemoryPerBlock = 74;

// hipGetDevicePropertiesR0600 fills a hipDeviceProp_tR0600 (HIP 6.0's layout, kept by 7.x), of
// which taot reads one member: gcnArchName, char[256] at byte offset 1160 on LP64 (after name[256],
// the CUDA-compatible members, reserved[63] and hipReserved[32]), the device's gfx name with its
// feature suffix, "gfx942:sramecc+:xnack-". The struct is 1472 bytes; taot hands the call a larger
// zeroed buffer and refuses a name that does not start with "gfx" (a layout it does not know).
inline constexpr std::size_t kDevicePropertiesBytes = 4096;
inline constexpr std::size_t kGcnArchNameOffset = 1160;
inline constexpr std::size_t kGcnArchNameBytes = 256;

// The C signatures of the entry points, as HIP 6.x documents them.
using hipInit_t = hipError_t (*)(unsigned int flags);
using hipGetErrorName_t = const char* (*)(hipError_t error);
using hipGetErrorString_t = const char* (*)(hipError_t error);
using hipGetDevice_t = hipError_t (*)(int* device);
using hipDeviceGetAttribute_t = hipError_t (*)(int* value, hipDeviceAttribute_t attribute, int device);
using hipDeviceGetName_t = hipError_t (*)(char* name, int length, hipDevice_t device);
using hipGetDevicePropertiesR0600_t = hipError_t (*)(void* properties, int device);
using hipModuleLoadData_t = hipError_t (*)(hipModule_t* module, const void* image);
using hipModuleUnload_t = hipError_t (*)(hipModule_t module);
using hipModuleGetFunction_t = hipError_t (*)(hipFunction_t* function, hipModule_t module, const char* name);
using hipModuleLaunchKernel_t = hipError_t (*)(hipFunction_t function, unsigned grid_x, unsigned grid_y,
                                               unsigned grid_z, unsigned block_x, unsigned block_y, unsigned block_z,
                                               unsigned shared_bytes, hipStream_t stream, void** params, void** extra);
using hipMallocAsync_t = hipError_t (*)(void** pointer, std::size_t bytes, hipStream_t stream);
using hipFreeAsync_t = hipError_t (*)(void* pointer, hipStream_t stream);
using hipEventCreate_t = hipError_t (*)(hipEvent_t* event);
using hipEventRecord_t = hipError_t (*)(hipEvent_t event, hipStream_t stream);
using hipEventSynchronize_t = hipError_t (*)(hipEvent_t event);
using hipEventElapsedTime_t = hipError_t (*)(float* milliseconds, hipEvent_t start, hipEvent_t stop);
using hipEventDestroy_t = hipError_t (*)(hipEvent_t event);

// X(member): `member` is the exported symbol and names its signature, member##_t above.
// Required: what a launch needs (module load, device queries, the launch, error names).
#define TAOT_HIP_REQUIRED(X)         \
  X(hipModuleLaunchKernel)           \
  X(hipGetDevice)                    \
  X(hipInit)                         \
  X(hipGetErrorName)                 \
  X(hipGetErrorString)               \
  X(hipDeviceGetAttribute)           \
  X(hipDeviceGetName)                \
  X(hipGetDevicePropertiesR0600)     \
  X(hipModuleLoadData)               \
  X(hipModuleUnload)                 \
  X(hipModuleGetFunction)

// Null when absent: stream-ordered scratch buffers (HIP 5.2+), and events to time launches.
#define TAOT_HIP_OPTIONAL(X) \
  X(hipMallocAsync)          \
  X(hipFreeAsync)            \
  X(hipEventCreate)          \
  X(hipEventRecord)          \
  X(hipEventSynchronize)     \
  X(hipEventElapsedTime)     \
  X(hipEventDestroy)

// Function pointers of the HIP runtime. Every required member is non-null in a table get() returns.
struct Api {
#define TAOT_HIP_MEMBER(name) name##_t name = nullptr;
  TAOT_HIP_REQUIRED(TAOT_HIP_MEMBER)
  TAOT_HIP_OPTIONAL(TAOT_HIP_MEMBER)
#undef TAOT_HIP_MEMBER
};

// The process's HIP table: loads libamdhip64.so (else .so.7, .so.6) and calls hipInit(0) on first
// use (thread-safe, once). Fails with TAOT_NO_DRIVER when the library or a required entry point is
// missing, with TAOT_CUDA_ERROR (the driver-error code, carrying the HIP error) when hipInit fails;
// a failure is remembered and returned again.
Expected<const Api*> get();

// Replaces the table get() returns (nullptr restores the real one, loaded on next use) and, while
// one is installed, makes HIP the driver launches use (in_use()). For tests; not thread-safe with
// concurrent launches. The table must outlive its use.
void install_for_testing(const Api* api);
// The table installed for testing, else null.
const Api* installed_for_testing() noexcept;

// The HIP table when HIP is the driver launches use, else null (the CUDA driver is, or none).
// docs/runtime.md, "Two drivers": a table installed for testing (either driver's: CUDA's first)
// stands for its library loading; else CUDA's libcuda when it loads, else HIP's libamdhip64.
const Api* in_use();

// Why the real HIP runtime cannot be used although libamdhip64 was found (an entry point missing,
// hipInit failing), else ok: what a process with neither usable driver is told besides CUDA's error.
Status unusable_runtime();

// Counts install_for_testing() calls: caches of what HIP said (device facts, modules per device)
// belong to one generation, so that a fake installed later is asked again.
inline std::atomic<std::uint64_t> generation{0};

// "hipModuleLoadData failed: hipErrorInvalidImage (invalid kernel file)". The one place HIP errors
// become Status, with code TAOT_CUDA_ERROR (the driver-error code of either driver) and the HIP
// error number as its cuda_result().
Status call_error(const Api& api, const char* call, hipError_t result);

// The gfx name of `device` without its feature suffix ("gfx942" for "gfx942:sramecc+:xnack-"),
// from hipGetDevicePropertiesR0600's gcnArchName; fails with the HIP error, or TAOT_INTERNAL when
// the properties hold no gfx name where HIP 6's layout has it.
Expected<std::string> device_gfx_name(const Api& api, hipDevice_t device);

}  // namespace taot::hip
