// taot's own CPU cost per launch, without the driver: the launch path (selection, rules and the
// tuned table, grid, function lookup, parameters) over a driver whose entry points return at once.
// Runs anywhere (no GPU); run it under `valgrind --tool=callgrind` for instructions per launch.
// Prints ns per launch for the automatic vector_add launch, for the same kernel with rules and a
// 20-entry tuned table (RuledAddKernel), for that kernel with num_warps asked for (as bind() and
// config keywords from Python pass a config), with the table naming the device (a launch then finds
// its device, as for first-call results, which are per device), and with its key tuned at first
// call instead of the table (the first launch times the configs; the rounds measure hits), side by
// side, interleaved rounds, medians.
// `bench_launch_path_cpu [LAUNCHES] [off|observer|profile] [DRIVER_KIB]`: with no observer (the
// default), with an observer whose callbacks do nothing, or with the profiler on ($TAOT_PROFILE set
// before the first launch; the trace of every launch is written at exit to
// /tmp/taot_launch_path_cpu.trace.json, and the profiler keeps every launch until then: give it
// 100000 launches, not millions), to compare instructions per launch. DRIVER_KIB (default 0) makes
// each null launch read and write that many KiB and run 32 KiB of code, as a real driver's launch
// does, so that taot's data and code are no longer in the nearest caches when the next launch
// begins (run under `valgrind --tool=callgrind --cache-sim=yes` for the cache misses that costs).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "ruled_add_kernel.h"
#include "taot/c_api.h"
#include "taot/driver_api.h"
#include "vector_add.h"

namespace {

// A driver with one context on one H100-like device; every call succeeds and does nothing.
namespace null_driver {
CUcontext const kContext = reinterpret_cast<CUcontext>(0x1000);
CUresult init(unsigned) { return CUDA_SUCCESS; }
CUresult error_text(CUresult, const char** text) {
  *text = "null driver";
  return CUDA_SUCCESS;
}
CUresult current(CUcontext* context) {
  *context = kContext;
  return CUDA_SUCCESS;
}
CUresult context_id(CUcontext, unsigned long long* id) {
  *id = 1;
  return CUDA_SUCCESS;
}
CUresult device(CUdevice* device) {
  *device = 0;
  return CUDA_SUCCESS;
}
CUresult attribute(int* value, CUdevice_attribute attribute, CUdevice) {
  switch (attribute) {
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *value = 9; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *value = 0; break;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *value = 132; break;
    default: *value = 1 << 20;
  }
  return CUDA_SUCCESS;
}
CUresult name(char* text, int length, CUdevice) {
  std::snprintf(text, static_cast<std::size_t>(length), "NVIDIA H100 80GB HBM3");
  return CUDA_SUCCESS;
}
CUresult load(CUmodule* module, const void*) {
  *module = reinterpret_cast<CUmodule>(0x2000);
  return CUDA_SUCCESS;
}
CUresult unload(CUmodule) { return CUDA_SUCCESS; }
CUresult function(CUfunction* function, CUmodule, const char*) {
  *function = reinterpret_cast<CUfunction>(0x3000);
  return CUDA_SUCCESS;
}
CUresult set_attribute(CUfunction, CUfunction_attribute, int) { return CUDA_SUCCESS; }
CUresult get_attribute(int* value, CUfunction_attribute, CUfunction) {
  *value = 0;
  return CUDA_SUCCESS;
}
CUresult capturing(CUstream, CUstreamCaptureStatus* status) {
  *status = CU_STREAM_CAPTURE_STATUS_NONE;
  return CUDA_SUCCESS;
}
CUresult synchronize() { return CUDA_SUCCESS; }
std::vector<unsigned char> footprint;  // what each launch touches (DRIVER_KIB)
CUresult launch(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream, void**,
                void**) {
  if (footprint.empty()) return CUDA_SUCCESS;
  for (std::size_t i = 0; i < footprint.size(); i += 64) footprint[i] = static_cast<unsigned char>(footprint[i] + 1);
#if defined(__x86_64__)
  asm volatile(".rept 32768\n\tnop\n\t.endr");  // 32 KiB of code run: the instruction cache too
#endif
  return CUDA_SUCCESS;
}
// Events, for the profiler: every one the same handle, 1 us apart.
CUresult event_create(CUevent* event, unsigned) {
  *event = reinterpret_cast<CUevent>(0x4000);
  return CUDA_SUCCESS;
}
CUresult event_record(CUevent, CUstream) { return CUDA_SUCCESS; }
CUresult event_synchronize(CUevent) { return CUDA_SUCCESS; }
CUresult event_elapsed(float* milliseconds, CUevent, CUevent) {
  *milliseconds = 0.001f;
  return CUDA_SUCCESS;
}
CUresult event_destroy(CUevent) { return CUDA_SUCCESS; }
// Memory and streams, for first-call autotuning's timing (its L2 flush buffer).
CUresult mem_alloc(CUdeviceptr* address, std::size_t) {
  *address = 0x5000;
  return CUDA_SUCCESS;
}
CUresult mem_free(CUdeviceptr) { return CUDA_SUCCESS; }
CUresult memset_async(CUdeviceptr, unsigned char, std::size_t, CUstream) { return CUDA_SUCCESS; }
CUresult stream_synchronize(CUstream) { return CUDA_SUCCESS; }

taot::driver::Api api() {
  taot::driver::Api table;
  table.cuInit = init;
  table.cuGetErrorName = error_text;
  table.cuGetErrorString = error_text;
  table.cuCtxGetCurrent = current;
  table.cuCtxGetId = context_id;
  table.cuCtxGetDevice = device;
  table.cuDeviceGetAttribute = attribute;
  table.cuDeviceGetName = name;
  table.cuModuleLoadData = load;
  table.cuModuleUnload = unload;
  table.cuModuleGetFunction = function;
  table.cuFuncSetAttribute = set_attribute;
  table.cuFuncGetAttribute = get_attribute;
  table.cuStreamIsCapturing = capturing;
  table.cuCtxSynchronize = synchronize;
  table.cuLaunchKernel = launch;
  table.cuEventCreate = event_create;
  table.cuEventRecord = event_record;
  table.cuEventSynchronize = event_synchronize;
  table.cuEventElapsedTime = event_elapsed;
  table.cuEventDestroy = event_destroy;
  table.cuMemAlloc = mem_alloc;
  table.cuMemFree = mem_free;
  table.cuMemsetD8Async = memset_async;
  table.cuStreamSynchronize = stream_synchronize;
  return table;
}
}  // namespace null_driver

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

void ignore_begin(const taot_launch_info*, void*) {}
void ignore_end(const taot_launch_info*, taot_status, void*) {}

}  // namespace

int main(int argc, char** argv) {
  const long launches = argc > 1 ? std::atol(argv[1]) : 2000000;
  const std::string mode = argc > 2 ? argv[2] : "off";
  null_driver::footprint.resize(static_cast<std::size_t>(argc > 3 ? std::atol(argv[3]) : 0) * 1024);
  if (mode == "observer") {
    const taot_launch_observer observer{ignore_begin, ignore_end, nullptr};
    taot_set_launch_observer(&observer);
  } else if (mode == "profile") {  // read at the first kernel's first use, below
    ::setenv("TAOT_PROFILE", "/tmp/taot_launch_path_cpu.trace.json", 1);
  } else if (mode != "off") {
    std::fprintf(stderr, "usage: %s [LAUNCHES] [off|observer|profile] [DRIVER_KIB]\n", argv[0]);
    return 2;
  }
  const taot::driver::Api api = null_driver::api();
  taot::driver::install_for_testing(&api);
  const taot::Ptr x(0x10000, taot::DType::fp32), y(0x20000, taot::DType::fp32), out(0x30000, taot::DType::fp32);
  const std::int32_t n = 1024;
  const taot_arg args[] = {taot::arg(x), taot::arg(y), taot::arg(out), taot::arg(n)};
  RuledAddKernel ruled(vector_add::add_kernel_kernel().table());
  RuledAddKernel device_table(vector_add::add_kernel_kernel().table(), false, "NVIDIA H100 80GB HBM3");
  RuledAddKernel autotuned(vector_add::add_kernel_kernel().table(), /*autotuned=*/true);
  // A config asked for, as a bound launcher (bind(num_warps=4)) or config keywords pass it: the
  // rules still choose the fields it leaves and check its requirement.
  std::vector<taot::FieldRequest> asked(ruled.kernel().table().field_count);
  for (std::uint16_t f = 0; f < ruled.kernel().table().field_count; ++f)
    if (std::string(ruled.kernel().table().fields[f].name) == "num_warps") asked[f] = taot::FieldRequest{true, 4};
  const taot::Selection asked_config = taot::Selection::config(asked.data());
  struct Path {
    const char* name;
    std::function<bool()> launch;
    std::vector<double> ns;
  };
  std::vector<Path> paths = {
      {"automatic (vector_add::add_kernel)", [&] { return vector_add::add_kernel(nullptr, x, y, out, n).ok(); }, {}},
      {"rules + 20-entry table", [&] { return ruled.kernel().launch(nullptr, args, 4).ok(); }, {}},
      {"rules + table, num_warps=4 asked", [&] { return ruled.kernel().launch(nullptr, args, 4, asked_config).ok(); },
       {}},
      {"rules + table for this device (by name)", [&] { return device_table.kernel().launch(nullptr, args, 4).ok(); },
       {}},
      // Its first launch (below, before the rounds) tunes the key: every later one is a hit.
      {"rules + key autotuned at first call", [&] { return autotuned.kernel().launch(nullptr, args, 4).ok(); }, {}},
  };
  for (Path& path : paths)
    if (!path.launch()) {
      std::fprintf(stderr, "%s failed\n", path.name);
      return 1;
    }
  constexpr int kRounds = 20;
  const long per_round = std::max(1L, launches / kRounds);
  for (int round = 0; round < kRounds; ++round) {
    for (Path& path : paths) {
      const auto start = std::chrono::steady_clock::now();
      for (long i = 0; i < per_round; ++i) path.launch();
      path.ns.push_back(std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count() /
                        static_cast<double>(per_round));
    }
  }
  std::printf("taot's CPU per launch over a null driver (%ld launches per path, %d interleaved rounds, observer %s, "
              "%zu KiB touched per launch)\n",
              per_round * kRounds, kRounds, mode.c_str(), null_driver::footprint.size() / 1024);
  for (const Path& path : paths) std::printf("%-40s %8.1f ns (median of rounds)\n", path.name, median(path.ns));
  return 0;
}
