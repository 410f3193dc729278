// ScratchPool: per-(context, stream) scratch buffers, stream-ordered, capture-safe.
#include "scratch.h"

#include "taot/runtime.h"

#include <algorithm>
#include <cstdio>
#include <limits>

namespace taot::detail {
namespace {

constexpr std::uint64_t kBufferAlign = 256;        // every buffer starts this aligned
constexpr std::uint64_t kGrowthQuantum = 1 << 16;  // buffers grow in 64 KiB steps at least
constexpr std::uint64_t kMaxPart = std::numeric_limits<std::int32_t>::max();

std::uint64_t round_up(std::uint64_t value, std::uint64_t multiple) { return (value + multiple - 1) / multiple * multiple; }

// The per-thread default stream is one handle for many streams: tell them apart by thread.
std::thread::id stream_owner(CUstream stream) {
  return stream == CU_STREAM_PER_THREAD ? std::this_thread::get_id() : std::thread::id();
}

std::string stream_text(CUstream stream) {
  if (stream == nullptr) return "the null stream";
  char text[40];
  std::snprintf(text, sizeof(text), "stream %p", static_cast<void*>(stream));
  return text;
}

}  // namespace

Expected<ScratchLayout> scratch_layout(std::uint64_t programs, std::uint64_t global_size, std::uint32_t global_align,
                                       std::uint64_t profile_size, std::uint32_t profile_align) {
  ScratchLayout layout;
  if (global_size == 0 && profile_size == 0) return layout;
  const auto part = [&](std::uint64_t size, const char* what) -> Expected<std::uint64_t> {
    if (size != 0 && programs > kMaxPart / size)
      return Status::error(TAOT_OUT_OF_RESOURCES, std::string("the launch needs ") + std::to_string(programs) +
                                                      " programs x " + std::to_string(size) + " bytes of " + what +
                                                      " scratch, over the 2^31 bytes Triton kernels can address");
    return programs * size;
  };
  Expected<std::uint64_t> global_bytes = part(global_size, "global");
  if (!global_bytes.ok()) return std::move(global_bytes).take_status();
  Expected<std::uint64_t> profile_bytes = part(profile_size, "profile");
  if (!profile_bytes.ok()) return std::move(profile_bytes).take_status();
  layout.align = std::max({global_align, profile_align, 1u});
  layout.global_offset = 0;
  layout.profile_offset = round_up(*global_bytes, std::max(profile_align, 1u));
  layout.total = layout.profile_offset + *profile_bytes;
  return layout;
}

ScratchPool& ScratchPool::instance() {
  static ScratchPool* pool = new ScratchPool();  // never destroyed: launches may run during exit
  return *pool;
}

Status ScratchPool::grow(const driver::Api& api, const ContextRef& context, CUstream stream, Buffer& buffer,
                         std::uint64_t bytes) {
  if (api.cuMemAllocAsync == nullptr || api.cuMemFreeAsync == nullptr)
    return Status::error(TAOT_NOT_SUPPORTED, "scratch buffers need cuMemAllocAsync (a CUDA 11.2 or newer driver)");
  const std::uint64_t new_bytes = round_up(std::max(bytes, buffer.bytes * 2), kGrowthQuantum);
  CUdeviceptr base = 0;
  CUresult result = api.cuMemAllocAsync(&base, new_bytes + kBufferAlign, stream);
  if (result != CUDA_SUCCESS) return driver::call_error(api, "cuMemAllocAsync", result);
  if (buffer.base != 0) {
    if (buffer.captured) {
      retired_[context.id].push_back(buffer.base);  // a graph may still launch with it
    } else if ((result = api.cuMemFreeAsync(buffer.base, stream)) != CUDA_SUCCESS) {
      (void)api.cuMemFreeAsync(base, stream);
      return driver::call_error(api, "cuMemFreeAsync", result);
    }
  }
  buffer = Buffer{base, round_up(base, kBufferAlign), new_bytes, false};
  return Status();
}

Expected<CUdeviceptr> ScratchPool::acquire(const driver::Api& api, const ContextRef& context, CUstream stream,
                                           std::uint64_t bytes, std::uint32_t align, const std::string& who) {
  if (align > kBufferAlign)
    return Status::error(TAOT_NOT_SUPPORTED, who + " needs scratch aligned to " + std::to_string(align) +
                                                 " bytes; taot aligns scratch to " + std::to_string(kBufferAlign));
  CUstreamCaptureStatus capture = CU_STREAM_CAPTURE_STATUS_NONE;
  const CUresult result = api.cuStreamIsCapturing(stream, &capture);
  if (result != CUDA_SUCCESS) return driver::call_error(api, "cuStreamIsCapturing", result).with_context(who);
  std::lock_guard<std::mutex> lock(mutex_);
  Buffer& buffer = buffers_[Key{context.id, stream, stream_owner(stream)}];
  if (capture != CU_STREAM_CAPTURE_STATUS_NONE) {
    if (buffer.bytes < bytes)
      return Status::error(TAOT_NOT_SUPPORTED,
                           who + " needs " + std::to_string(bytes) + " bytes of scratch memory on " + stream_text(stream) +
                               ", which is capturing a CUDA graph, and taot allocates nothing during capture (" +
                               std::to_string(buffer.bytes) + " bytes reserved there); before capturing, call "
                               "taot::reserve_scratch(stream, " + std::to_string(bytes) +
                               ") (C: taot_reserve_scratch; Python: <library>.reserve_scratch(" +
                               std::to_string(bytes) + ", stream=...)) or launch the kernel once on that stream");
    buffer.captured = true;
    return buffer.aligned;
  }
  if (buffer.bytes < bytes) {
    if (Status status = grow(api, context, stream, buffer, bytes); !status.ok()) return std::move(status).with_context(who);
  }
  return buffer.aligned;
}

Status ScratchPool::reserve(const driver::Api& api, const ContextRef& context, CUstream stream, std::uint64_t bytes) {
  CUstreamCaptureStatus capture = CU_STREAM_CAPTURE_STATUS_NONE;
  const CUresult result = api.cuStreamIsCapturing(stream, &capture);
  if (result != CUDA_SUCCESS) return driver::call_error(api, "cuStreamIsCapturing", result);
  if (capture != CU_STREAM_CAPTURE_STATUS_NONE)
    return Status::error(TAOT_INVALID_ARGUMENT, "reserve_scratch: " + stream_text(stream) +
                                                    " is capturing a CUDA graph; reserve before capture begins");
  std::lock_guard<std::mutex> lock(mutex_);
  Buffer& buffer = buffers_[Key{context.id, stream, stream_owner(stream)}];
  if (buffer.bytes >= bytes) return Status();
  return grow(api, context, stream, buffer, bytes).with_context("reserve_scratch");
}

Status ScratchPool::release(const driver::Api& api, const ContextRef& context) {
  std::lock_guard<std::mutex> lock(mutex_);
  CUresult result = api.cuCtxSynchronize();
  if (result != CUDA_SUCCESS) return driver::call_error(api, "cuCtxSynchronize", result).with_context("release_scratch");
  std::vector<CUdeviceptr> bases = std::move(retired_[context.id]);
  retired_.erase(context.id);
  for (auto entry = buffers_.begin(); entry != buffers_.end();) {
    if (std::get<0>(entry->first) == context.id) {
      if (entry->second.base != 0) bases.push_back(entry->second.base);
      entry = buffers_.erase(entry);
    } else {
      ++entry;
    }
  }
  Status first_failure;
  for (CUdeviceptr base : bases) {
    result = api.cuMemFreeAsync(base, nullptr);
    if (result != CUDA_SUCCESS && first_failure.ok())
      first_failure = driver::call_error(api, "cuMemFreeAsync", result).with_context("release_scratch");
  }
  return first_failure;
}

}  // namespace taot::detail

namespace taot {

Status reserve_scratch(CUstream stream, std::uint64_t bytes) {
  Expected<const driver::Api*> api = driver::get();
  if (!api.ok()) return std::move(api).take_status();
  Expected<detail::ContextRef> context = detail::current_context(**api);
  if (!context.ok()) return std::move(context).take_status().with_context("reserve_scratch");
  return detail::ScratchPool::instance().reserve(**api, *context, stream, bytes);
}

Status release_scratch() {
  Expected<const driver::Api*> api = driver::get();
  if (!api.ok()) return std::move(api).take_status();
  Expected<detail::ContextRef> context = detail::current_context(**api);
  if (!context.ok()) return std::move(context).take_status().with_context("release_scratch");
  return detail::ScratchPool::instance().release(**api, *context);
}

}  // namespace taot
