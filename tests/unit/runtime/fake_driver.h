// A recording fake of the CUDA driver table: contexts on fake devices, module loads counted per
// (context, image), launches recorded with their parameter bytes, stream work (memsets, events,
// graph replays, copies) in call order, captures into graphs, event timings a test scripts or
// launches take, and the bytes of allocations (cuMemGetAddressRange, cuMemcpyDtoH,
// cuMemcpyDtoDAsync, launches that accumulate).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "taot/driver_api.h"

namespace taot::testing {

struct RecordedLaunch {
  std::uintptr_t function;
  unsigned grid[3];
  unsigned block[3];
  unsigned shared_bytes;
  CUstream stream;
  std::vector<std::uint64_t> params;  // the first 8 bytes behind each parameter pointer
  bool extended = false;              // through cuLaunchKernelEx, with `attributes`
  std::vector<CUlaunchAttribute> attributes;
};

struct RecordedAllocation {
  CUdeviceptr address;
  std::size_t bytes;
  CUstream stream;           // of cuMemAllocAsync
  bool freed = false;
  CUstream freed_on = nullptr;
  bool synchronous = false;  // cuMemAlloc/cuMemFree rather than the stream-ordered calls
  std::vector<unsigned char> contents;  // what cuMemcpyDtoH reads: zeros until write_memory()
};

// One piece of work put on a stream, in call order: outside captures in operations(), during one
// in its graph's operations.
struct RecordedOperation {
  enum class Kind { launch, memset, event_record, graph_launch, copy };
  Kind kind;
  CUstream stream;
  std::uint64_t handle = 0;  // launch: its index in launches(); memset, copy: the address written;
                             // event_record: the event; graph_launch: the executable graph
  std::uint64_t bytes = 0;   // memset, copy: bytes written
  unsigned value = 0;        // memset: the byte value
};

// A graph made by cuStreamBeginCapture/cuStreamEndCapture.
struct RecordedGraph {
  CUstream captured_on;
  std::vector<RecordedOperation> operations;
  bool destroyed = false;
};

// An executable graph made by cuGraphInstantiateWithFlags.
struct RecordedGraphExec {
  std::size_t graph;  // index in graphs()
  bool destroyed = false;
};

// One cuTensorMapEncodeTiled call. The fake writes kTensorMapMark + (its index in tensor_maps())
// into the map's first 8 bytes, so that a recorded launch shows which map it was given.
struct RecordedTensorMap {
  static constexpr std::uint64_t kTensorMapMark = 0x7e50000000000000ull;
  CUtensorMapDataType data_type;
  unsigned rank;
  std::uint64_t address;
  std::vector<std::uint64_t> global_dim;      // innermost first
  std::vector<std::uint64_t> global_strides;  // bytes, rank - 1 entries
  std::vector<unsigned> box;
  std::vector<unsigned> element_strides;
  CUtensorMapInterleave interleave;
  CUtensorMapSwizzle swizzle;
  CUtensorMapL2promotion l2_promotion;
  CUtensorMapFloatOOBfill oob_fill;
  bool map_aligned;                           // the map was 64-byte aligned
};

// Installs itself as the driver on construction and restores the real one on destruction.
// One at a time. Contexts are numbered from 1; context N lives on device N-1.
class FakeDriver {
 public:
  explicit FakeDriver(std::size_t param_count_hint = 6);
  ~FakeDriver();

  // Makes a new context on a device of compute capability `arch` (e.g. 90) with
  // `multiprocessors` SMs; returns its handle.
  CUcontext add_context(int arch, int shared_optin_limit = 232448, int multiprocessors = 132);
  void make_current(CUcontext context);  // for the calling thread; nullptr for none
  // Destroys `context` and creates a new one at the same address (a new id); functions loaded
  // in the old one then fail to launch with CUDA_ERROR_CONTEXT_IS_DESTROYED.
  void recreate_context(CUcontext context);

  int loads_of(const void* image) const;      // cuModuleLoadData calls with this image, all contexts
  int total_loads() const { return total_loads_.load(); }
  int unloads() const { return unloads_.load(); }
  std::vector<RecordedLaunch> launches() const;
  std::vector<std::pair<std::uintptr_t, int>> shared_attributes() const;  // (function, bytes) set
  std::vector<std::pair<std::uintptr_t, int>> non_portable_cluster_functions() const;  // (function, value) set
  std::vector<RecordedAllocation> allocations() const;  // cuMemAllocAsync calls, in order
  std::vector<RecordedTensorMap> tensor_maps() const;   // cuTensorMapEncodeTiled calls, in order
  // Puts `bytes` at `address`, inside an allocation; what cuMemcpyDtoH then reads there.
  void write_memory(CUdeviceptr address, const std::vector<unsigned char>& bytes);
  int copies_to_host() const { return copies_to_host_.load(); }  // cuMemcpyDtoH calls
  int synchronizations() const { return synchronizations_.load(); }
  int device_queries() const { return device_queries_.load(); }  // cuCtxGetDevice calls
  int multiprocessor_queries() const { return multiprocessor_queries_.load(); }  // SM count attribute reads
  // Streams that report CU_STREAM_CAPTURE_STATUS_ACTIVE from cuStreamIsCapturing.
  void set_capturing(CUstream stream, bool capturing);

  // Stream work outside captures (launches, memsets, event records, graph replays), in call order.
  std::vector<RecordedOperation> operations() const;
  std::vector<RecordedGraph> graphs() const;            // captures, in order
  std::vector<RecordedGraphExec> graph_execs() const;   // instantiations, in order
  // What cuEventElapsedTime returns: the scripted values first, in order, then default_elapsed_ms.
  void script_elapsed(std::vector<float> milliseconds);
  int elapsed_queries() const;
  int live_events() const;          // created and not destroyed
  int events_created() const;
  int live_streams() const;         // made by cuStreamCreate and not destroyed
  std::vector<CUstream> created_streams() const;
  int stream_synchronizations() const { return stream_synchronizations_.load(); }

  // cuCtxSetLimit calls, in order: the context current, the limit, its value, and how many
  // launches (all contexts) the driver had seen by then.
  struct LimitSet {
    CUcontext context;
    CUlimit limit;
    std::size_t value;
    std::size_t launches_before;
  };
  std::vector<LimitSet> limits_set() const;

  CUresult launch_result = CUDA_SUCCESS;       // what cuLaunchKernel returns
  CUresult synchronize_result = CUDA_SUCCESS;  // what cuCtxSynchronize returns
  CUresult set_limit_result = CUDA_SUCCESS;    // what cuCtxSetLimit returns
  CUresult load_result = CUDA_SUCCESS;         // what cuModuleLoadData returns
  CUresult tensor_map_result = CUDA_SUCCESS;   // what cuTensorMapEncodeTiled returns
  int load_delay_us = 0;                       // widens race windows in concurrency tests
  int static_shared_bytes = 0;                 // CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES of every function
  std::size_t params_per_launch;               // how many parameters to record
  float default_elapsed_ms = 0.01f;            // cuEventElapsedTime once the script is used up
  int l2_cache_bytes = 50 * 1024 * 1024;       // CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE of every device
  CUresult graph_instantiate_result = CUDA_SUCCESS;  // what cuGraphInstantiateWithFlags returns
  // Launches from this one on (counted from 0, all streams) fail with CUDA_ERROR_LAUNCH_FAILED.
  std::size_t fail_from_launch = ~std::size_t{0};
  // When set, cuEventElapsedTime gives the GPU time of the launches recorded between the two
  // events' records (each launch_ms(launch) ms) instead of the script: kernels that take time.
  std::function<float(const RecordedLaunch&)> launch_ms;
  // When true, every launch adds 1 to the byte its first parameter points at (inside an
  // allocation): a kernel that accumulates, as atomics into an output do.
  bool launches_accumulate = false;
  // cuThreadExchangeStreamCaptureMode calls, and the modes they set, in order (all threads).
  std::vector<CUstreamCaptureMode> capture_modes_set() const;
  // Launches of functions in this set fail with CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES.
  std::set<std::uintptr_t> failing_functions;

  // Makes the driver look older than CUDA 12.0: no cuLaunchKernelEx.
  void drop_launch_kernel_ex() { api_.cuLaunchKernelEx = nullptr; }
  // Makes the driver lack cuTensorMapEncodeTiled (older than CUDA 12.0).
  void drop_tensor_map_encode() { api_.cuTensorMapEncodeTiled = nullptr; }

  static FakeDriver* active();
  const driver::Api& api() const { return api_; }
  // The installed table itself, to take entry points away (a driver too old for them).
  driver::Api& edit_api() { return api_; }

 private:
  friend struct FakeEntryPoints;
  struct Context {
    int device;
    int arch;
    int shared_optin_limit;
    int multiprocessors;
    unsigned long long id;
  };
  driver::Api api_;
  mutable std::mutex mutex_;
  std::vector<Context> contexts_;
  std::map<const void*, int> loads_;
  std::vector<unsigned long long> module_contexts_;  // module handle - 1 -> context id
  std::vector<RecordedLaunch> launches_;
  std::vector<std::pair<std::uintptr_t, int>> shared_attributes_;
  std::vector<std::pair<std::uintptr_t, int>> cluster_attributes_;
  std::vector<RecordedAllocation> allocations_;
  std::vector<RecordedTensorMap> tensor_maps_;
  std::vector<LimitSet> limits_;
  std::set<CUstream> capturing_;
  std::vector<RecordedOperation> operations_;
  std::map<CUstream, std::size_t> open_captures_;  // stream -> index in graphs_
  std::vector<RecordedGraph> graphs_;
  std::vector<RecordedGraphExec> graph_execs_;
  std::vector<float> scripted_elapsed_;
  std::vector<CUstreamCaptureMode> capture_modes_set_;
  std::size_t next_elapsed_ = 0;
  int elapsed_queries_ = 0;
  std::vector<int> event_states_;  // per event handle - 1: 0 created, 1 recorded, -1 destroyed
  std::vector<bool> streams_;      // per cuStreamCreate stream (handle - kStreamBase): alive
  std::size_t launch_calls_ = 0;
  std::atomic<int> stream_synchronizations_{0};
  std::atomic<int> synchronizations_{0};
  std::atomic<int> copies_to_host_{0};
  std::atomic<int> device_queries_{0};
  std::atomic<int> multiprocessor_queries_{0};
  std::atomic<int> total_loads_{0};
  std::atomic<int> unloads_{0};
};

}  // namespace taot::testing
