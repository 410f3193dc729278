// The one seam between taot and the CUDA driver: every entry point the runtime uses, listed once,
// resolved from a dlopen'ed libcuda into one table. Tests install a recording fake table instead.
// AMD's HIP, the second driver, has its own table (taot/hip_api.h).
#pragma once

#include <cuda.h>

#include <atomic>
#include <cstdint>

#include "taot/status.h"

namespace taot::driver {

// X(member, symbol): `member` names the cuda.h function whose type the pointer has; `symbol` is
// the versioned name exported by libcuda (cuda.h maps some names to _v2 symbols with macros).
// The two every launch calls come first, so that they share a cache line of the table.
#define TAOT_DRIVER_REQUIRED(X)                          \
  X(cuCtxGetCurrent, "cuCtxGetCurrent")                  \
  X(cuLaunchKernel, "cuLaunchKernel")                    \
  X(cuInit, "cuInit")                                    \
  X(cuGetErrorName, "cuGetErrorName")                    \
  X(cuGetErrorString, "cuGetErrorString")                \
  X(cuCtxGetDevice, "cuCtxGetDevice")                    \
  X(cuDeviceGetAttribute, "cuDeviceGetAttribute")        \
  X(cuDeviceGetName, "cuDeviceGetName")                  \
  X(cuModuleLoadData, "cuModuleLoadData")                \
  X(cuModuleUnload, "cuModuleUnload")                    \
  X(cuModuleGetFunction, "cuModuleGetFunction")          \
  X(cuFuncSetAttribute, "cuFuncSetAttribute")            \
  X(cuFuncGetAttribute, "cuFuncGetAttribute")            \
  X(cuStreamIsCapturing, "cuStreamIsCapturing")          \
  X(cuCtxSynchronize, "cuCtxSynchronize")

// Entry points newer drivers have; null when absent.
//  cuCtxGetId (CUDA 12.0) tells a new context from a destroyed one at the same address;
//  cuLaunchKernelEx (12.0) launches clusters, cooperative grids and PDL kernels;
//  cuMemAllocAsync/cuMemFreeAsync (11.2) hold scratch buffers, stream-ordered;
//  cuTensorMapEncodeTiled (12.0) builds the TMA maps of host-side tensor descriptors;
//  cuCtxSetLimit sizes the printf FIFO of tl.device_print (asked for only when a size is requested);
//  the rest time launches (taot/timing.h): events, the L2 flush buffer and its memset, a private
//  stream and CUDA graphs. cuEventElapsedTime_v2 is CUDA 12.8's (drivers before it cannot time);
//  cuda.h's cuGraphInstantiate is cuGraphInstantiateWithFlags (11.4), whose signature it declares.
//  cuMemGetAddressRange and cuMemcpyDtoH copy a recorded launch's buffers ($TAOT_RECORD, recorder.h);
//  cuMemcpyDtoDAsync restores the buffers first-call autotuning's timed runs change (autotune.h);
//  cuThreadExchangeStreamCaptureMode lets its allocations run beside another thread's capture.
#define TAOT_DRIVER_OPTIONAL(X)                          \
  X(cuCtxGetId, "cuCtxGetId")                            \
  X(cuLaunchKernelEx, "cuLaunchKernelEx")                \
  X(cuMemAllocAsync, "cuMemAllocAsync")                  \
  X(cuMemFreeAsync, "cuMemFreeAsync")                    \
  X(cuTensorMapEncodeTiled, "cuTensorMapEncodeTiled")    \
  X(cuCtxSetLimit, "cuCtxSetLimit")                      \
  X(cuEventCreate, "cuEventCreate")                      \
  X(cuEventRecord, "cuEventRecord")                      \
  X(cuEventSynchronize, "cuEventSynchronize")            \
  X(cuEventElapsedTime, "cuEventElapsedTime_v2")         \
  X(cuEventDestroy, "cuEventDestroy_v2")                 \
  X(cuMemAlloc, "cuMemAlloc_v2")                         \
  X(cuMemFree, "cuMemFree_v2")                           \
  X(cuMemsetD8Async, "cuMemsetD8Async")                  \
  X(cuStreamCreate, "cuStreamCreate")                    \
  X(cuStreamDestroy, "cuStreamDestroy_v2")               \
  X(cuStreamSynchronize, "cuStreamSynchronize")          \
  X(cuStreamBeginCapture, "cuStreamBeginCapture_v2")     \
  X(cuStreamEndCapture, "cuStreamEndCapture")            \
  X(cuGraphInstantiate, "cuGraphInstantiateWithFlags")   \
  X(cuGraphLaunch, "cuGraphLaunch")                      \
  X(cuGraphExecDestroy, "cuGraphExecDestroy")            \
  X(cuGraphDestroy, "cuGraphDestroy")                    \
  X(cuMemGetAddressRange, "cuMemGetAddressRange_v2")     \
  X(cuMemcpyDtoH, "cuMemcpyDtoH_v2")                     \
  X(cuMemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2")           \
  X(cuThreadExchangeStreamCaptureMode, "cuThreadExchangeStreamCaptureMode")

// Function pointers of the driver. Every required member is non-null in a table returned by get().
struct alignas(64) Api {
#define TAOT_DRIVER_MEMBER(name, symbol) decltype(&::name) name = nullptr;
  TAOT_DRIVER_REQUIRED(TAOT_DRIVER_MEMBER)
  TAOT_DRIVER_OPTIONAL(TAOT_DRIVER_MEMBER)
#undef TAOT_DRIVER_MEMBER
};

// The process's driver table: loads libcuda.so.1 and calls cuInit(0) on first use (thread-safe,
// once). Fails with TAOT_NO_DRIVER when libcuda or a required entry point is missing, and with
// TAOT_CUDA_ERROR when cuInit fails (no GPU, say); a failure is remembered and returned again.
// While a HIP table is installed for testing (and no CUDA one), fails with TAOT_NO_DRIVER without
// loading libcuda: HIP is then the driver in use (hip::in_use, taot/hip_api.h).
Expected<const Api*> get();

// Replaces the table get() returns (nullptr restores the real driver, loaded on next use).
// For tests; not thread-safe with concurrent launches. The table must outlive its use.
void install_for_testing(const Api* api);
// The table installed for testing, else null.
const Api* installed_for_testing() noexcept;

// The table get() returns once it is known, else null: a lock-free check for hot paths.
inline std::atomic<const Api*> active_api{nullptr};
// Counts install_for_testing() calls: caches of what a driver said (device facts) belong to one
// generation, so that a fake driver installed later is asked again.
inline std::atomic<std::uint64_t> generation{0};
inline const Api* loaded() noexcept { return active_api.load(std::memory_order_acquire); }

// "cuModuleLoadData failed: CUDA_ERROR_INVALID_IMAGE (device kernel image is invalid)". The one
// place driver errors become Status: CUDA_ERROR_ASSERT (a device assert fired, and the context is
// poisoned) also names the kernel variant taot launched last in the current context and says that
// the context must be re-created.
Status call_error(const Api& api, const char* call, CUresult result);

}  // namespace taot::driver
