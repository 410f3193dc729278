// Move-only owners of driver objects (events, device memory, streams, graphs): each destroys its
// handle through the driver table it was made with.
#pragma once

#include <cuda.h>

#include <utility>

#include "taot/driver_api.h"

namespace taot::detail {

// Owns one `Handle`, destroyed by the table's entry point `Destroy` (a member of driver::Api) when
// the owner goes or is reset. A destroy failure cannot be reported and is ignored. Not thread-safe.
template <class Handle, auto Destroy>
class DriverObject {
 public:
  DriverObject() noexcept = default;
  DriverObject(const driver::Api& api, Handle handle) noexcept : api_(&api), handle_(handle) {}
  ~DriverObject() { reset(); }
  DriverObject(DriverObject&& other) noexcept : api_(other.api_), handle_(other.release()) {}
  DriverObject& operator=(DriverObject&& other) noexcept {
    if (this != &other) {
      reset();
      api_ = other.api_;
      handle_ = other.release();
    }
    return *this;
  }
  DriverObject(const DriverObject&) = delete;
  DriverObject& operator=(const DriverObject&) = delete;

  Handle get() const noexcept { return handle_; }
  // Gives up ownership: the caller destroys the handle.
  Handle release() noexcept { return std::exchange(handle_, Handle{}); }
  void reset() noexcept {
    if (handle_ != Handle{}) (void)(api_->*Destroy)(handle_);
    handle_ = Handle{};
  }

 private:
  const driver::Api* api_ = nullptr;
  Handle handle_{};
};

using Event = DriverObject<CUevent, &driver::Api::cuEventDestroy>;
using DeviceMemory = DriverObject<CUdeviceptr, &driver::Api::cuMemFree>;
using Stream = DriverObject<CUstream, &driver::Api::cuStreamDestroy>;
using Graph = DriverObject<CUgraph, &driver::Api::cuGraphDestroy>;
using GraphExec = DriverObject<CUgraphExec, &driver::Api::cuGraphExecDestroy>;

}  // namespace taot::detail
