// Scratch buffers for kernels that need global or profile scratch memory (Triton's two
// trailing pointer arguments): one buffer per (context, stream), grown stream-ordered outside
// CUDA graph capture and never allocated during it.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "module_cache.h"
#include "taot/driver_api.h"

namespace taot::detail {

// Bytes of scratch a launch needs, and where each part starts in the buffer.
struct ScratchLayout {
  std::uint64_t global_offset = 0;
  std::uint64_t profile_offset = 0;
  std::uint64_t total = 0;    // bytes from the buffer's start; 0 when the kernel needs none
  std::uint32_t align = 1;    // the larger of the two alignments
};

// The layout for `programs` programs (grid size times num_ctas) of per-program sizes; TAOT_OUT_OF_RESOURCES
// when a part reaches 2^31 bytes (Triton kernels index scratch with 32-bit offsets).
Expected<ScratchLayout> scratch_layout(std::uint64_t programs, std::uint64_t global_size, std::uint32_t global_align,
                                       std::uint64_t profile_size, std::uint32_t profile_align);

// Thread-safe. Launches on one stream run in order, so a stream's buffer is reused by each of its
// launches; different streams never share one. Outside capture a buffer too small is replaced:
// the new one allocated and the old one freed in stream order (cuMemAllocAsync/cuMemFreeAsync),
// with no synchronization. During capture nothing is allocated: the stream's buffer is used if it
// is large enough (and is then kept until release(), since the graph refers to it); otherwise the
// launch fails naming the bytes to reserve beforehand.
class ScratchPool {
 public:
  static ScratchPool& instance();

  // The device address of at least `bytes` bytes aligned to `align` for a launch on `stream` in
  // `context` (current on this thread). `who` names the kernel variant in errors.
  Expected<CUdeviceptr> acquire(const driver::Api& api, const ContextRef& context, CUstream stream,
                                std::uint64_t bytes, std::uint32_t align, const std::string& who);
  // Makes `stream`'s buffer at least `bytes` long now (not while `stream` is capturing).
  Status reserve(const driver::Api& api, const ContextRef& context, CUstream stream, std::uint64_t bytes);
  // Frees every buffer of `context` (current on this thread), waiting for the device first.
  Status release(const driver::Api& api, const ContextRef& context);

 private:
  struct Buffer {
    CUdeviceptr base = 0;      // as allocated
    CUdeviceptr aligned = 0;   // base rounded up to kBufferAlign
    std::uint64_t bytes = 0;   // usable from `aligned`
    bool captured = false;     // handed to a launch during capture: a graph refers to it
  };
  // (context id, stream handle, thread for the per-thread default stream).
  using Key = std::tuple<std::uint64_t, CUstream, std::thread::id>;

  Status grow(const driver::Api& api, const ContextRef& context, CUstream stream, Buffer& buffer, std::uint64_t bytes);

  std::mutex mutex_;
  std::map<Key, Buffer> buffers_;
  std::map<std::uint64_t, std::vector<CUdeviceptr>> retired_;  // captured buffers that were replaced, per context
};

}  // namespace taot::detail
