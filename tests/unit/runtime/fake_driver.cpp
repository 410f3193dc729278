// The recording fake driver; see fake_driver.h. Handles are small integers cast to pointers:
// context N is (CUcontext)N, a module is its index + 1, a function is (module << 8) | 1.
#include "fake_driver.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>

namespace taot::testing {
namespace {

constexpr std::uintptr_t kStreamBase = 0x5700000;  // cuStreamCreate streams: kStreamBase + 16 * index

FakeDriver* active_driver = nullptr;
unsigned long long next_context_id = 1;  // unique across FakeDriver instances
thread_local CUcontext current = nullptr;

}  // namespace

struct FakeEntryPoints {
  static FakeDriver& driver() { return *active_driver; }
  static std::size_t context_index(CUcontext context) { return reinterpret_cast<std::uintptr_t>(context) - 1; }

  static CUresult init(unsigned) { return CUDA_SUCCESS; }
  static CUresult error_name(CUresult result, const char** name) {
    *name = result == CUDA_ERROR_INVALID_VALUE ? "CUDA_ERROR_INVALID_VALUE"
            : result == CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES ? "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES"
            : result == CUDA_ERROR_INVALID_IMAGE ? "CUDA_ERROR_INVALID_IMAGE"
            : result == CUDA_ERROR_CONTEXT_IS_DESTROYED ? "CUDA_ERROR_CONTEXT_IS_DESTROYED"
            : result == CUDA_ERROR_LAUNCH_FAILED ? "CUDA_ERROR_LAUNCH_FAILED"
            : result == CUDA_ERROR_INVALID_HANDLE ? "CUDA_ERROR_INVALID_HANDLE"
            : result == CUDA_ERROR_OUT_OF_MEMORY ? "CUDA_ERROR_OUT_OF_MEMORY"
            : result == CUDA_ERROR_ILLEGAL_STATE ? "CUDA_ERROR_ILLEGAL_STATE"
            : result == CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED ? "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED"
            : result == CUDA_ERROR_ASSERT ? "CUDA_ERROR_ASSERT"
                                                 : "CUDA_ERROR_UNKNOWN";
    return CUDA_SUCCESS;
  }
  static CUresult error_string(CUresult, const char** text) {
    *text = "fake driver error";
    return CUDA_SUCCESS;
  }
  static CUresult ctx_get_current(CUcontext* context) {
    *context = current;
    return CUDA_SUCCESS;
  }
  static CUresult ctx_get_device(CUdevice* device) {
    ++driver().device_queries_;
    std::lock_guard<std::mutex> lock(driver().mutex_);
    *device = driver().contexts_.at(context_index(current)).device;
    return CUDA_SUCCESS;
  }
  static CUresult ctx_get_id(CUcontext context, unsigned long long* id) {
    std::lock_guard<std::mutex> lock(driver().mutex_);
    *id = driver().contexts_.at(context_index(context)).id;
    return CUDA_SUCCESS;
  }
  static CUresult device_get_attribute(int* value, CUdevice_attribute attribute, CUdevice device) {
    std::lock_guard<std::mutex> lock(driver().mutex_);
    const auto& context = driver().contexts_.at(static_cast<std::size_t>(device));
    switch (attribute) {
      case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *value = context.arch / 10; return CUDA_SUCCESS;
      case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *value = context.arch % 10; return CUDA_SUCCESS;
      case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: *value = context.shared_optin_limit; return CUDA_SUCCESS;
      case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE: *value = driver().l2_cache_bytes; return CUDA_SUCCESS;
      case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
        ++driver().multiprocessor_queries_;
        *value = context.multiprocessors;
        return CUDA_SUCCESS;
      default: return CUDA_ERROR_INVALID_VALUE;
    }
  }
  static CUresult device_get_name(char* name, int length, CUdevice device) {
    std::snprintf(name, static_cast<std::size_t>(length), "Fake GPU %d", device);
    return CUDA_SUCCESS;
  }
  static CUresult module_load_data(CUmodule* module, const void* image) {
    FakeDriver& fake = driver();
    if (fake.load_delay_us > 0) std::this_thread::sleep_for(std::chrono::microseconds(fake.load_delay_us));
    if (fake.load_result != CUDA_SUCCESS) return fake.load_result;
    std::lock_guard<std::mutex> lock(fake.mutex_);
    ++fake.loads_[image];
    ++fake.total_loads_;
    fake.module_contexts_.push_back(fake.contexts_.at(context_index(current)).id);
    *module = reinterpret_cast<CUmodule>(fake.module_contexts_.size());
    return CUDA_SUCCESS;
  }
  static CUresult module_unload(CUmodule) {
    ++driver().unloads_;
    return CUDA_SUCCESS;
  }
  static CUresult module_get_function(CUfunction* function, CUmodule module, const char*) {
    *function = reinterpret_cast<CUfunction>((reinterpret_cast<std::uintptr_t>(module) << 8) | 1);
    return CUDA_SUCCESS;
  }
  static CUresult func_set_attribute(CUfunction function, CUfunction_attribute attribute, int value) {
    std::lock_guard<std::mutex> lock(driver().mutex_);
    if (attribute == CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)
      driver().shared_attributes_.emplace_back(reinterpret_cast<std::uintptr_t>(function), value);
    else if (attribute == CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED)
      driver().cluster_attributes_.emplace_back(reinterpret_cast<std::uintptr_t>(function), value);
    else
      return CUDA_ERROR_INVALID_VALUE;
    return CUDA_SUCCESS;
  }
  static CUresult func_get_attribute(int* value, CUfunction_attribute attribute, CUfunction) {
    if (attribute != CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES) return CUDA_ERROR_INVALID_VALUE;
    *value = driver().static_shared_bytes;
    return CUDA_SUCCESS;
  }
  static CUresult stream_is_capturing(CUstream stream, CUstreamCaptureStatus* status) {
    std::lock_guard<std::mutex> lock(driver().mutex_);
    *status = driver().capturing_.count(stream) ? CU_STREAM_CAPTURE_STATUS_ACTIVE : CU_STREAM_CAPTURE_STATUS_NONE;
    return CUDA_SUCCESS;
  }
  static CUresult ctx_synchronize() {
    ++driver().synchronizations_;
    return driver().synchronize_result;
  }
  static CUresult ctx_set_limit(CUlimit limit, std::size_t value) {
    FakeDriver& fake = driver();
    if (fake.set_limit_result != CUDA_SUCCESS) return fake.set_limit_result;
    std::lock_guard<std::mutex> lock(fake.mutex_);
    fake.limits_.push_back({current, limit, value, fake.launches_.size()});
    return CUDA_SUCCESS;
  }
  static CUresult mem_alloc_async(CUdeviceptr* address, std::size_t bytes, CUstream stream) {
    std::lock_guard<std::mutex> lock(driver().mutex_);
    auto& allocations = driver().allocations_;
    *address = 0x7f0000000000ull + 0x100000000ull * allocations.size() + 0x40;  // 64-byte aligned only
    allocations.push_back(RecordedAllocation{*address, bytes, stream, false, nullptr, false, {}});
    allocations.back().contents.assign(bytes, 0);
    return CUDA_SUCCESS;
  }
  static CUresult mem_free_async(CUdeviceptr address, CUstream stream) {
    std::lock_guard<std::mutex> lock(driver().mutex_);
    for (RecordedAllocation& allocation : driver().allocations_) {
      if (allocation.address == address && !allocation.freed) {
        allocation.freed = true;
        allocation.freed_on = stream;
        return CUDA_SUCCESS;
      }
    }
    return CUDA_ERROR_INVALID_VALUE;
  }
  static CUresult mem_alloc(CUdeviceptr* address, std::size_t bytes) {
    const CUresult result = mem_alloc_async(address, bytes, nullptr);
    std::lock_guard<std::mutex> lock(driver().mutex_);
    driver().allocations_.back().synchronous = true;
    return result;
  }
  static CUresult mem_free(CUdeviceptr address) { return mem_free_async(address, nullptr); }
  // The live allocation holding [address, address + bytes), or null. Lock held.
  static RecordedAllocation* allocation_of(FakeDriver& fake, CUdeviceptr address, std::size_t bytes) {
    for (RecordedAllocation& allocation : fake.allocations_)
      if (!allocation.freed && address >= allocation.address && address + bytes <= allocation.address + allocation.bytes)
        return &allocation;
    return nullptr;
  }
  static CUresult mem_get_address_range(CUdeviceptr* base, std::size_t* size, CUdeviceptr address) {
    std::lock_guard<std::mutex> lock(driver().mutex_);
    RecordedAllocation* allocation = allocation_of(driver(), address, 1);
    if (allocation == nullptr) return CUDA_ERROR_INVALID_VALUE;
    if (base != nullptr) *base = allocation->address;
    if (size != nullptr) *size = allocation->bytes;
    return CUDA_SUCCESS;
  }
  static CUresult memcpy_dtoh(void* host, CUdeviceptr address, std::size_t bytes) {
    FakeDriver& fake = driver();
    ++fake.copies_to_host_;
    std::lock_guard<std::mutex> lock(fake.mutex_);
    RecordedAllocation* allocation = allocation_of(fake, address, bytes);
    if (allocation == nullptr) return CUDA_ERROR_INVALID_VALUE;
    std::memcpy(host, allocation->contents.data() + (address - allocation->address), bytes);
    return CUDA_SUCCESS;
  }

  // Work on `stream`: into the graph it is capturing, if any, else onto operations_. Lock held.
  static void put(FakeDriver& fake, RecordedOperation operation) {
    auto capture = fake.open_captures_.find(operation.stream);
    if (capture != fake.open_captures_.end()) fake.graphs_[capture->second].operations.push_back(operation);
    else fake.operations_.push_back(operation);
  }
  static CUresult memset_d8_async(CUdeviceptr address, unsigned char value, std::size_t bytes, CUstream stream) {
    FakeDriver& fake = driver();
    std::lock_guard<std::mutex> lock(fake.mutex_);
    bool inside = false;
    for (const RecordedAllocation& allocation : fake.allocations_)
      inside |= !allocation.freed && address >= allocation.address && address + bytes <= allocation.address + allocation.bytes;
    if (!inside) return CUDA_ERROR_INVALID_VALUE;
    put(fake, {RecordedOperation::Kind::memset, stream, address, bytes, value});
    return CUDA_SUCCESS;
  }

  // Events: handle N is event_states_[N - 1].
  static int* event_state(FakeDriver& fake, CUevent event) {
    const std::size_t index = reinterpret_cast<std::uintptr_t>(event) - 1;
    if (event == nullptr || index >= fake.event_states_.size() || fake.event_states_[index] < 0) return nullptr;
    return &fake.event_states_[index];
  }
  static CUresult event_create(CUevent* event, unsigned) {
    FakeDriver& fake = driver();
    std::lock_guard<std::mutex> lock(fake.mutex_);
    fake.event_states_.push_back(0);
    *event = reinterpret_cast<CUevent>(fake.event_states_.size());
    return CUDA_SUCCESS;
  }
  static CUresult event_record(CUevent event, CUstream stream) {
    FakeDriver& fake = driver();
    std::lock_guard<std::mutex> lock(fake.mutex_);
    int* state = event_state(fake, event);
    if (state == nullptr) return CUDA_ERROR_INVALID_HANDLE;
    *state = 1;
    put(fake, {RecordedOperation::Kind::event_record, stream, reinterpret_cast<std::uintptr_t>(event)});
    return CUDA_SUCCESS;
  }
  static CUresult event_synchronize(CUevent event) {
    FakeDriver& fake = driver();
    std::lock_guard<std::mutex> lock(fake.mutex_);
    return event_state(fake, event) != nullptr ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
  }
  static CUresult event_elapsed_time(float* milliseconds, CUevent start, CUevent stop) {
    FakeDriver& fake = driver();
    std::lock_guard<std::mutex> lock(fake.mutex_);
    const int* start_state = event_state(fake, start);
    const int* stop_state = event_state(fake, stop);
    if (start_state == nullptr || stop_state == nullptr || *start_state != 1 || *stop_state != 1)
      return CUDA_ERROR_INVALID_HANDLE;
    ++fake.elapsed_queries_;
    if (fake.launch_ms) {
      *milliseconds = launches_between(fake, reinterpret_cast<std::uintptr_t>(start), reinterpret_cast<std::uintptr_t>(stop));
      return CUDA_SUCCESS;
    }
    *milliseconds = fake.next_elapsed_ < fake.scripted_elapsed_.size() ? fake.scripted_elapsed_[fake.next_elapsed_++]
                                                                       : fake.default_elapsed_ms;
    return CUDA_SUCCESS;
  }
  // launch_ms summed over the launches between the last records of `start` and `stop`. Lock held.
  static float launches_between(const FakeDriver& fake, std::uint64_t start, std::uint64_t stop) {
    const auto& operations = fake.operations_;
    std::size_t begin = operations.size(), end = operations.size();
    for (std::size_t o = operations.size(); o-- > 0;) {
      if (operations[o].kind != RecordedOperation::Kind::event_record) continue;
      if (end == operations.size() && operations[o].handle == stop) end = o;
      if (operations[o].handle == start && o < end) {
        begin = o;
        break;
      }
    }
    float total = 0;
    for (std::size_t o = begin; o < end; ++o)
      if (operations[o].kind == RecordedOperation::Kind::launch) total += fake.launch_ms(fake.launches_[operations[o].handle]);
    return total;
  }
  // Each thread's capture mode, global at first, as the driver's.
  static CUresult exchange_capture_mode(CUstreamCaptureMode* mode) {
    thread_local CUstreamCaptureMode current_mode = CU_STREAM_CAPTURE_MODE_GLOBAL;
    FakeDriver& fake = driver();
    std::lock_guard<std::mutex> lock(fake.mutex_);
    fake.capture_modes_set_.push_back(*mode);
    std::swap(current_mode, *mode);
    return CUDA_SUCCESS;
  }
  static CUresult memcpy_dtod_async(CUdeviceptr to, CUdeviceptr from, std::size_t bytes, CUstream stream) {
    FakeDriver& fake = driver();
    std::lock_guard<std::mutex> lock(fake.mutex_);
    RecordedAllocation* source = allocation_of(fake, from, bytes);
    RecordedAllocation* target = allocation_of(fake, to, bytes);
    if (source == nullptr || target == nullptr) return CUDA_ERROR_INVALID_VALUE;
    std::copy_n(source->contents.begin() + static_cast<std::ptrdiff_t>(from - source->address), bytes,
                target->contents.begin() + static_cast<std::ptrdiff_t>(to - target->address));
    put(fake, {RecordedOperation::Kind::copy, stream, to, bytes});
    return CUDA_SUCCESS;
  }
  static CUresult event_destroy(CUevent event) {
    FakeDriver& fake = driver();
    std::lock_guard<std::mutex> lock(fake.mutex_);
    int* state = event_state(fake, event);
    if (state == nullptr) return CUDA_ERROR_INVALID_HANDLE;
    *state = -1;
    return CUDA_SUCCESS;
  }

  static CUresult stream_create(CUstream* stream, unsigned) {
    FakeDriver& fake = driver();
    std::lock_guard<std::mutex> lock(fake.mutex_);
    *stream = reinterpret_cast<CUstream>(kStreamBase + 16 * fake.streams_.size());
    fake.streams_.push_back(true);
    return CUDA_SUCCESS;
  }
  static CUresult stream_destroy(CUstream stream) {
    FakeDriver& fake = driver();
    std::lock_guard<std::mutex> lock(fake.mutex_);
    const std::size_t index = (reinterpret_cast<std::uintptr_t>(stream) - kStreamBase) / 16;
    if (reinterpret_cast<std::uintptr_t>(stream) < kStreamBase || index >= fake.streams_.size() || !fake.streams_[index])
      return CUDA_ERROR_INVALID_HANDLE;
    fake.streams_[index] = false;
    return CUDA_SUCCESS;
  }
  static CUresult stream_synchronize(CUstream) {
    ++driver().stream_synchronizations_;
    return CUDA_SUCCESS;
  }

  // Captures: work on a capturing stream goes into its graph; graph N is graphs_[N - 1], executable
  // graph N is graph_execs_[N - 1].
  static CUresult stream_begin_capture(CUstream stream, CUstreamCaptureMode) {
    FakeDriver& fake = driver();
    std::lock_guard<std::mutex> lock(fake.mutex_);
    if (stream == nullptr || stream == CU_STREAM_LEGACY) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    if (fake.open_captures_.count(stream) || fake.capturing_.count(stream)) return CUDA_ERROR_ILLEGAL_STATE;
    fake.graphs_.push_back(RecordedGraph{stream, {}, false});
    fake.open_captures_[stream] = fake.graphs_.size() - 1;
    fake.capturing_.insert(stream);
    return CUDA_SUCCESS;
  }
  static CUresult stream_end_capture(CUstream stream, CUgraph* graph) {
    FakeDriver& fake = driver();
    std::lock_guard<std::mutex> lock(fake.mutex_);
    auto capture = fake.open_captures_.find(stream);
    if (capture == fake.open_captures_.end()) return CUDA_ERROR_ILLEGAL_STATE;
    *graph = reinterpret_cast<CUgraph>(capture->second + 1);
    fake.open_captures_.erase(capture);
    fake.capturing_.erase(stream);
    return CUDA_SUCCESS;
  }
  static RecordedGraph* graph_of(FakeDriver& fake, CUgraph graph) {
    const std::size_t index = reinterpret_cast<std::uintptr_t>(graph) - 1;
    if (graph == nullptr || index >= fake.graphs_.size() || fake.graphs_[index].destroyed) return nullptr;
    return &fake.graphs_[index];
  }
  static RecordedGraphExec* exec_of(FakeDriver& fake, CUgraphExec exec) {
    const std::size_t index = reinterpret_cast<std::uintptr_t>(exec) - 1;
    if (exec == nullptr || index >= fake.graph_execs_.size() || fake.graph_execs_[index].destroyed) return nullptr;
    return &fake.graph_execs_[index];
  }
  static CUresult graph_instantiate(CUgraphExec* exec, CUgraph graph, unsigned long long) {
    FakeDriver& fake = driver();
    std::lock_guard<std::mutex> lock(fake.mutex_);
    if (graph_of(fake, graph) == nullptr) return CUDA_ERROR_INVALID_HANDLE;
    if (fake.graph_instantiate_result != CUDA_SUCCESS) return fake.graph_instantiate_result;
    fake.graph_execs_.push_back(RecordedGraphExec{reinterpret_cast<std::uintptr_t>(graph) - 1, false});
    *exec = reinterpret_cast<CUgraphExec>(fake.graph_execs_.size());
    return CUDA_SUCCESS;
  }
  static CUresult graph_launch(CUgraphExec exec, CUstream stream) {
    FakeDriver& fake = driver();
    std::lock_guard<std::mutex> lock(fake.mutex_);
    if (exec_of(fake, exec) == nullptr) return CUDA_ERROR_INVALID_HANDLE;
    put(fake, {RecordedOperation::Kind::graph_launch, stream, reinterpret_cast<std::uintptr_t>(exec)});
    return CUDA_SUCCESS;
  }
  static CUresult graph_exec_destroy(CUgraphExec exec) {
    FakeDriver& fake = driver();
    std::lock_guard<std::mutex> lock(fake.mutex_);
    RecordedGraphExec* found = exec_of(fake, exec);
    if (found == nullptr) return CUDA_ERROR_INVALID_HANDLE;
    found->destroyed = true;
    return CUDA_SUCCESS;
  }
  static CUresult graph_destroy(CUgraph graph) {
    FakeDriver& fake = driver();
    std::lock_guard<std::mutex> lock(fake.mutex_);
    RecordedGraph* found = graph_of(fake, graph);
    if (found == nullptr) return CUDA_ERROR_INVALID_HANDLE;
    found->destroyed = true;
    return CUDA_SUCCESS;
  }
  static CUresult tensor_map_encode_tiled(CUtensorMap* map, CUtensorMapDataType data_type, cuuint32_t rank,
                                         void* address, const cuuint64_t* global_dim,
                                         const cuuint64_t* global_strides, const cuuint32_t* box,
                                         const cuuint32_t* element_strides, CUtensorMapInterleave interleave,
                                         CUtensorMapSwizzle swizzle, CUtensorMapL2promotion l2_promotion,
                                         CUtensorMapFloatOOBfill oob_fill) {
    FakeDriver& fake = driver();
    std::lock_guard<std::mutex> lock(fake.mutex_);
    if (fake.tensor_map_result != CUDA_SUCCESS) return fake.tensor_map_result;
    RecordedTensorMap record{data_type, rank, reinterpret_cast<std::uintptr_t>(address),
                             std::vector<std::uint64_t>(global_dim, global_dim + rank),
                             std::vector<std::uint64_t>(global_strides, global_strides + (rank - 1)),
                             std::vector<unsigned>(box, box + rank),
                             std::vector<unsigned>(element_strides, element_strides + rank),
                             interleave, swizzle, l2_promotion, oob_fill,
                             reinterpret_cast<std::uintptr_t>(map) % 64 == 0};
    std::memset(map, 0, sizeof(*map));
    const std::uint64_t mark = RecordedTensorMap::kTensorMapMark + fake.tensor_maps_.size();
    std::memcpy(map, &mark, sizeof(mark));
    fake.tensor_maps_.push_back(std::move(record));
    return CUDA_SUCCESS;
  }
  static CUresult record_launch(RecordedLaunch launch, void** params) {
    FakeDriver& fake = driver();
    for (std::size_t p = 0; p < fake.params_per_launch; ++p) {
      std::uint64_t bytes = 0;
      std::memcpy(&bytes, params[p], sizeof(bytes));
      launch.params.push_back(bytes);
    }
    std::lock_guard<std::mutex> lock(fake.mutex_);
    const std::size_t module = (launch.function >> 8) - 1;
    if (fake.module_contexts_.at(module) != fake.contexts_.at(context_index(current)).id)
      return CUDA_ERROR_CONTEXT_IS_DESTROYED;
    if (fake.launch_calls_++ >= fake.fail_from_launch) return CUDA_ERROR_LAUNCH_FAILED;
    if (fake.failing_functions.count(launch.function) != 0) return CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES;
    if (fake.launches_accumulate && !launch.params.empty())
      if (RecordedAllocation* allocation = allocation_of(fake, launch.params[0], 1))
        ++allocation->contents[launch.params[0] - allocation->address];
    put(fake, {RecordedOperation::Kind::launch, launch.stream, fake.launches_.size()});
    fake.launches_.push_back(std::move(launch));
    return fake.launch_result;
  }
  static CUresult launch_kernel(CUfunction function, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                                unsigned bz, unsigned shared, CUstream stream, void** params, void** extra) {
    if (extra != nullptr) return CUDA_ERROR_INVALID_VALUE;
    return record_launch({reinterpret_cast<std::uintptr_t>(function), {gx, gy, gz}, {bx, by, bz}, shared, stream, {}, false, {}},
                         params);
  }
  static CUresult launch_kernel_ex(const CUlaunchConfig* config, CUfunction function, void** params, void** extra) {
    if (extra != nullptr) return CUDA_ERROR_INVALID_VALUE;
    RecordedLaunch launch{reinterpret_cast<std::uintptr_t>(function),
                          {config->gridDimX, config->gridDimY, config->gridDimZ},
                          {config->blockDimX, config->blockDimY, config->blockDimZ},
                          config->sharedMemBytes,
                          config->hStream,
                          {},
                          true,
                          std::vector<CUlaunchAttribute>(config->attrs, config->attrs + config->numAttrs)};
    return record_launch(std::move(launch), params);
  }
};

FakeDriver::FakeDriver(std::size_t param_count_hint) : params_per_launch(param_count_hint) {
  api_.cuInit = &FakeEntryPoints::init;
  api_.cuGetErrorName = &FakeEntryPoints::error_name;
  api_.cuGetErrorString = &FakeEntryPoints::error_string;
  api_.cuCtxGetCurrent = &FakeEntryPoints::ctx_get_current;
  api_.cuCtxGetDevice = &FakeEntryPoints::ctx_get_device;
  api_.cuCtxGetId = &FakeEntryPoints::ctx_get_id;
  api_.cuDeviceGetAttribute = &FakeEntryPoints::device_get_attribute;
  api_.cuDeviceGetName = &FakeEntryPoints::device_get_name;
  api_.cuModuleLoadData = &FakeEntryPoints::module_load_data;
  api_.cuModuleUnload = &FakeEntryPoints::module_unload;
  api_.cuModuleGetFunction = &FakeEntryPoints::module_get_function;
  api_.cuFuncSetAttribute = &FakeEntryPoints::func_set_attribute;
  api_.cuFuncGetAttribute = &FakeEntryPoints::func_get_attribute;
  api_.cuStreamIsCapturing = &FakeEntryPoints::stream_is_capturing;
  api_.cuCtxSynchronize = &FakeEntryPoints::ctx_synchronize;
  api_.cuCtxSetLimit = &FakeEntryPoints::ctx_set_limit;
  api_.cuLaunchKernel = &FakeEntryPoints::launch_kernel;
  api_.cuLaunchKernelEx = &FakeEntryPoints::launch_kernel_ex;
  api_.cuMemAllocAsync = &FakeEntryPoints::mem_alloc_async;
  api_.cuMemFreeAsync = &FakeEntryPoints::mem_free_async;
  api_.cuTensorMapEncodeTiled = &FakeEntryPoints::tensor_map_encode_tiled;
  api_.cuEventCreate = &FakeEntryPoints::event_create;
  api_.cuEventRecord = &FakeEntryPoints::event_record;
  api_.cuEventSynchronize = &FakeEntryPoints::event_synchronize;
  api_.cuEventElapsedTime = &FakeEntryPoints::event_elapsed_time;
  api_.cuEventDestroy = &FakeEntryPoints::event_destroy;
  api_.cuMemAlloc = &FakeEntryPoints::mem_alloc;
  api_.cuMemFree = &FakeEntryPoints::mem_free;
  api_.cuMemsetD8Async = &FakeEntryPoints::memset_d8_async;
  api_.cuStreamCreate = &FakeEntryPoints::stream_create;
  api_.cuStreamDestroy = &FakeEntryPoints::stream_destroy;
  api_.cuStreamSynchronize = &FakeEntryPoints::stream_synchronize;
  api_.cuStreamBeginCapture = &FakeEntryPoints::stream_begin_capture;
  api_.cuStreamEndCapture = &FakeEntryPoints::stream_end_capture;
  api_.cuGraphInstantiate = &FakeEntryPoints::graph_instantiate;
  api_.cuGraphLaunch = &FakeEntryPoints::graph_launch;
  api_.cuGraphExecDestroy = &FakeEntryPoints::graph_exec_destroy;
  api_.cuGraphDestroy = &FakeEntryPoints::graph_destroy;
  api_.cuMemGetAddressRange = &FakeEntryPoints::mem_get_address_range;
  api_.cuMemcpyDtoH = &FakeEntryPoints::memcpy_dtoh;
  api_.cuMemcpyDtoDAsync = &FakeEntryPoints::memcpy_dtod_async;
  api_.cuThreadExchangeStreamCaptureMode = &FakeEntryPoints::exchange_capture_mode;
  active_driver = this;
  current = nullptr;
  driver::install_for_testing(&api_);
}

FakeDriver::~FakeDriver() {
  driver::install_for_testing(nullptr);
  active_driver = nullptr;
  current = nullptr;
}

FakeDriver* FakeDriver::active() { return active_driver; }

CUcontext FakeDriver::add_context(int arch, int shared_optin_limit, int multiprocessors) {
  std::lock_guard<std::mutex> lock(mutex_);
  contexts_.push_back(
      Context{static_cast<int>(contexts_.size()), arch, shared_optin_limit, multiprocessors, next_context_id++});
  return reinterpret_cast<CUcontext>(contexts_.size());
}

void FakeDriver::make_current(CUcontext context) { current = context; }

void FakeDriver::recreate_context(CUcontext context) {
  std::lock_guard<std::mutex> lock(mutex_);
  contexts_.at(FakeEntryPoints::context_index(context)).id = next_context_id++;
}

int FakeDriver::loads_of(const void* image) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto found = loads_.find(image);
  return found == loads_.end() ? 0 : found->second;
}

std::vector<RecordedLaunch> FakeDriver::launches() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return launches_;
}

std::vector<std::pair<std::uintptr_t, int>> FakeDriver::shared_attributes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return shared_attributes_;
}

std::vector<std::pair<std::uintptr_t, int>> FakeDriver::non_portable_cluster_functions() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return cluster_attributes_;
}

std::vector<RecordedAllocation> FakeDriver::allocations() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return allocations_;
}

void FakeDriver::write_memory(CUdeviceptr address, const std::vector<unsigned char>& bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  RecordedAllocation* allocation = FakeEntryPoints::allocation_of(*this, address, bytes.size());
  if (allocation != nullptr) std::copy(bytes.begin(), bytes.end(), allocation->contents.begin() + (address - allocation->address));
}

std::vector<CUstreamCaptureMode> FakeDriver::capture_modes_set() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return capture_modes_set_;
}

std::vector<RecordedTensorMap> FakeDriver::tensor_maps() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return tensor_maps_;
}

void FakeDriver::set_capturing(CUstream stream, bool capturing) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (capturing) capturing_.insert(stream);
  else capturing_.erase(stream);
}

std::vector<RecordedOperation> FakeDriver::operations() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return operations_;
}

std::vector<RecordedGraph> FakeDriver::graphs() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return graphs_;
}

std::vector<RecordedGraphExec> FakeDriver::graph_execs() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return graph_execs_;
}

void FakeDriver::script_elapsed(std::vector<float> milliseconds) {
  std::lock_guard<std::mutex> lock(mutex_);
  scripted_elapsed_ = std::move(milliseconds);
  next_elapsed_ = 0;
}

int FakeDriver::elapsed_queries() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return elapsed_queries_;
}

int FakeDriver::live_events() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return static_cast<int>(std::count_if(event_states_.begin(), event_states_.end(), [](int state) { return state >= 0; }));
}

int FakeDriver::events_created() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return static_cast<int>(event_states_.size());
}

int FakeDriver::live_streams() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return static_cast<int>(std::count(streams_.begin(), streams_.end(), true));
}

std::vector<CUstream> FakeDriver::created_streams() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<CUstream> streams;
  for (std::size_t s = 0; s < streams_.size(); ++s) streams.push_back(reinterpret_cast<CUstream>(kStreamBase + 16 * s));
  return streams;
}

std::vector<FakeDriver::LimitSet> FakeDriver::limits_set() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return limits_;
}

}  // namespace taot::testing
