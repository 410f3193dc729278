// The launch profiler of profiler.h: launches recorded between CUDA events (through the driver
// seam, events pooled per context), NVTX ranges, and the trace file written at exit.
#include "profiler.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <utility>

#include "c_api_errors.h"
#include "taot/driver_api.h"
#include "taot/runtime.h"

#if defined(TAOT_HAVE_NVTX3)
#include <nvtx3/nvToolsExt.h>
#endif

namespace taot::detail {
namespace {

using Json = nlohmann::ordered_json;

constexpr const char* kTraceSchema = "taot.profile.trace";
constexpr int kTraceVersion = 1;
constexpr std::size_t kMaxErrors = 8;  // distinct problems kept (and printed) per profiler
#if defined(TAOT_HAVE_NVTX3)
constexpr bool kHaveNvtx = true;
#else
constexpr bool kHaveNvtx = false;
#endif

// The process's profiler, installed by start_profiler_if_requested(); never freed, since a launch
// on another thread may call its observer while the process exits.
std::atomic<Profiler*> process_profiler{nullptr};
char runtime_anchor;  // its address tells this copy of the runtime from others in the process

// The begin/end pairs open on this thread (nested when a callback launches): which profiler, which
// launch, which record.
struct OpenLaunch {
  const Profiler* profiler;
  const taot_launch_info* launch;
  std::size_t record;
};
thread_local std::vector<OpenLaunch> open_launches;

void push_range([[maybe_unused]] const taot_launch_info& launch) {
#if defined(TAOT_HAVE_NVTX3)
  nvtxRangePushA(launch_range_name(launch).c_str());
#endif
}

void pop_range() {
#if defined(TAOT_HAVE_NVTX3)
  nvtxRangePop();
#endif
}

// When this process started, in clock ticks since boot (field 22 of /proc/self/stat), "" where
// there is no /proc: with the pid, it tells this process from an earlier one of the same id that
// wrote the same trace path.
std::string process_start() {
  std::ifstream stat("/proc/self/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  const std::size_t name_end = text.rfind(')');  // the command name may hold spaces and parentheses
  if (name_end == std::string::npos) return "";
  std::istringstream fields(text.substr(name_end + 1));
  std::string field;
  for (int index = 3; index <= 22 && (fields >> field); ++index)
    if (index == 22) return field;
  return "";
}

std::string hex(std::uintptr_t value) {
  char text[32];
  std::snprintf(text, sizeof(text), "0x%jx", static_cast<std::uintmax_t>(value));
  return text;
}

// Closes a file descriptor when it goes.
class FileDescriptor {
 public:
  explicit FileDescriptor(int fd) noexcept : fd_(fd) {}
  ~FileDescriptor() {
    if (fd_ >= 0) ::close(fd_);
  }
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  int get() const noexcept { return fd_; }

 private:
  int fd_;
};

// What failed on the trace file, with errno's reason (read first: building the message may change it).
Status file_error(const std::string& path, const char* what) {
  const std::string reason = std::strerror(errno);
  return Status::error(TAOT_INVALID_ARGUMENT, "cannot write the trace to " + path + ": " + what + " failed: " + reason);
}

// The start of a trace: schema, version and the process that writes it.
std::string header_text(const std::string& pid, const std::string& started) {
  return "{\n \"schema\": \"" + std::string(kTraceSchema) + "\",\n \"version\": " + std::to_string(kTraceVersion) +
         ",\n \"pid\": " + pid + ",\n \"process_start\": " + Json(started).dump();
}

void flush_process_profiler() {
  if (Profiler* profiler = process_profiler.load(std::memory_order_acquire)) profiler->flush_at_exit();
}

}  // namespace

std::optional<ProfileSettings> profile_settings(const char* profile, const char* nvtx) {
  ProfileSettings settings;
  if (profile != nullptr && *profile != '\0') {
    settings.trace_path = profile;
    const std::string pid = std::to_string(static_cast<long long>(::getpid()));
    for (std::size_t at = settings.trace_path.find("%p"); at != std::string::npos;
         at = settings.trace_path.find("%p", at + pid.size()))
      settings.trace_path.replace(at, 2, pid);
  }
  settings.nvtx = nvtx != nullptr && *nvtx != '\0' && std::strcmp(nvtx, "0") != 0;
  if (settings.trace_path.empty() && !settings.nvtx) return std::nullopt;
  return settings;
}

void start_profiler_if_requested() {
  static const bool started = [] {
    std::optional<ProfileSettings> settings =
        profile_settings(std::getenv("TAOT_PROFILE"), std::getenv("TAOT_PROFILE_NVTX"));
    if (!settings) return false;
    if (settings->nvtx && !kHaveNvtx) {
      // One of the profiler's prints: a tool mode the user asked for with an environment variable.
      std::fprintf(stderr, "taot profile: TAOT_PROFILE_NVTX is set, but this taot runtime was built without NVTX "
                           "(nvtx3/nvToolsExt.h was not found at build time): no NVTX ranges\n");
      settings->nvtx = false;
      if (settings->trace_path.empty()) return false;
    }
    auto* profiler = new Profiler(std::move(*settings));
    profiler->write_at_exit();
    process_profiler.store(profiler, std::memory_order_release);
    const taot_launch_observer observer = profiler->observer();
    taot_set_launch_observer(&observer);
    return true;
  }();
  (void)started;
}

std::string launch_range_name(const taot_launch_info& launch) {
  return std::string(launch.library) + "." + launch.kernel + "[" + launch.variant_id + "]";
}

std::string Profiler::this_runtime_id() { return hex(reinterpret_cast<std::uintptr_t>(&runtime_anchor)); }

Profiler::Profiler(ProfileSettings settings, std::string runtime_id)
    : settings_(std::move(settings)), runtime_id_(std::move(runtime_id)) {}

Profiler::~Profiler() = default;

taot_launch_observer Profiler::observer() noexcept { return taot_launch_observer{&on_begin, &on_end, this}; }

void Profiler::on_begin(const taot_launch_info* launch, void* user) noexcept {
  try {
    static_cast<Profiler*>(user)->begin(*launch);
  } catch (...) {  // out of memory: the launch goes on unrecorded
    static_cast<Profiler*>(user)->report("a launch could not be recorded (out of memory)");
  }
}

void Profiler::on_end(const taot_launch_info* launch, taot_status status, void* user) noexcept {
  try {
    static_cast<Profiler*>(user)->end(*launch, status);
  } catch (...) {
    static_cast<Profiler*>(user)->report("a launch could not be recorded (out of memory)");
  }
}

void Profiler::report(const std::string& message) noexcept {
  try {
    std::lock_guard<std::mutex> lock(report_mutex());
    if (errors_.size() >= kMaxErrors || std::find(errors_.begin(), errors_.end(), message) != errors_.end()) return;
    errors_.push_back(message);
    // The profiler's one print (besides the NVTX notice): profiling is a tool mode the user asked
    // for with $TAOT_PROFILE, and a problem with it must not change what the program does.
    std::fprintf(stderr, "taot profile: %s\n", message.c_str());
  } catch (...) {
  }
}

std::mutex& Profiler::report_mutex() const noexcept { return report_mutex_; }

bool Profiler::timing_entry_points(const driver::Api& api) {
  if (timing_checked_ == 0) {
    const std::pair<const char*, bool> entries[] = {
        {"cuEventCreate", api.cuEventCreate != nullptr},
        {"cuEventRecord", api.cuEventRecord != nullptr},
        {"cuEventSynchronize", api.cuEventSynchronize != nullptr},
        {"cuEventElapsedTime_v2", api.cuEventElapsedTime != nullptr},
        {"cuEventDestroy_v2", api.cuEventDestroy != nullptr},
    };
    timing_checked_ = 1;
    for (const auto& [name, present] : entries)
      if (!present) {
        timing_checked_ = -1;
        report(std::string("this CUDA driver lacks ") + name +
               " (times need a CUDA 12.8 or newer driver): launches are recorded without times");
        break;
      }
  }
  return timing_checked_ > 0;
}

const Profiler::KernelNames* Profiler::kernel_names(const taot_launch_info& launch) {
  const void* key = launch.kernel_handle;
  std::unique_ptr<KernelNames>& names = kernels_[key];
  if (names != nullptr && (names->kernel != launch.kernel || names->library != launch.library))
    replaced_kernels_.push_back(std::move(names));  // another kernel at a freed one's address
  if (names == nullptr) {
    names = std::make_unique<KernelNames>();
    names->library = launch.library;
    names->kernel = launch.kernel;
    if (launch.kernel_handle != nullptr) {  // null from an observer caller other than the runtime: no arguments
      const table::KernelTable& table = Kernel::from_handle(const_cast<taot_kernel*>(launch.kernel_handle))->table();
      for (std::uint16_t a = 0; a < table.arg_count; ++a) {
        const table::Arg& arg = table.args[a];
        names->args.push_back({arg.name, arg.kind, arg.type_count > 0 && arg.types[0] == TAOT_DTYPE_FP64, arg.none});
      }
    }
  }
  if (names->variants.size() <= launch.variant_index) names->variants.resize(launch.variant_index + 1);
  std::string& variant = names->variants[launch.variant_index];
  if (variant.empty()) variant = launch.variant_id;
  return names.get();
}

Profiler::ContextEvents* Profiler::context_events(const driver::Api& api, CUcontext context) {
  auto found = events_.find(context);
  if (found != events_.end()) return &found->second;
  ContextEvents& events = events_[context];
  DeviceInfo& device = events.device;
  CUdevice handle = 0;
  if (api.cuCtxGetDevice(&handle) != CUDA_SUCCESS) return &events;
  device.ordinal = static_cast<int>(handle);
  char name[256] = {};
  if (api.cuDeviceGetName(name, sizeof(name) - 1, handle) == CUDA_SUCCESS) device.name = name;
  const auto attribute = [&](CUdevice_attribute which) {
    int value = 0;
    return api.cuDeviceGetAttribute(&value, which, handle) == CUDA_SUCCESS ? value : 0;
  };
  device.arch = attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR) * 10 +
                attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  device.multiprocessors = attribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  device.clock_khz = attribute(CU_DEVICE_ATTRIBUTE_CLOCK_RATE);
  device.memory_clock_khz = attribute(CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE);
  device.bus_width_bits = attribute(CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH);
  devices_.emplace(device.ordinal, device);
  return &events;
}

Status Profiler::take_event(const driver::Api& api, ContextEvents& events, Event& event) {
  if (!events.free.empty()) {
    event = std::move(events.free.back());
    events.free.pop_back();
    return Status();
  }
  CUevent handle = nullptr;
  const CUresult result = api.cuEventCreate(&handle, CU_EVENT_DEFAULT);
  if (result != CUDA_SUCCESS) return driver::call_error(api, "cuEventCreate", result);
  event = Event(api, handle);
  return Status();
}

void Profiler::begin(const taot_launch_info& launch) {
  if (settings_.nvtx) push_range(launch);
  if (settings_.trace_path.empty()) return;
  if (flush_at_exit_ && !exit_handler_registered_.exchange(true)) std::atexit(&flush_process_profiler);
  const driver::Api* api = driver::loaded();  // a launch is under way: the table is known
  std::lock_guard<std::mutex> lock(mutex_);  // report() takes only its own lock
  const std::size_t index = launches_.size();
  Launch& record = launches_.emplace_back();
  record.names = kernel_names(launch);
  record.variant_index = launch.variant_index;
  record.step = launch.step;
  std::copy(launch.grid, launch.grid + 3, record.grid);
  record.stream = launch.stream;
  record.host_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                       std::chrono::steady_clock::now().time_since_epoch())
                       .count();
  record.args.assign(launch.args, launch.args + launch.arg_count);
  for (std::size_t a = 0; a < record.args.size() && a < record.names->args.size(); ++a)
    if (record.names->args[a].kind == table::ArgKind::tensordesc)  // valid only during the launch: its dtype is kept
      record.args[a].tensordesc = nullptr;
  open_launches.push_back(OpenLaunch{this, &launch, index});
  if (api == nullptr) return;

  CUcontext context = nullptr;
  if (api->cuCtxGetCurrent(&context) != CUDA_SUCCESS || context == nullptr) return;
  record.context = context;
  ContextEvents* events = context_events(*api, context);
  record.device = events->device.ordinal;
  CUstreamCaptureStatus capture = CU_STREAM_CAPTURE_STATUS_NONE;
  if (api->cuStreamIsCapturing(launch.stream, &capture) != CUDA_SUCCESS || capture != CU_STREAM_CAPTURE_STATUS_NONE) {
    record.captured = true;  // an event recorded into a capture would time the graph's replay, not this launch
    return;
  }
  if (!timing_entry_points(*api)) return;
  for (Event* event : {&record.start, &record.stop})
    if (Status status = take_event(*api, *events, *event); !status.ok()) {
      report("launches are recorded without times: " + status.message());
      record.start.reset();
      record.stop.reset();
      return;
    }
  const CUresult result = api->cuEventRecord(record.start.get(), launch.stream);
  if (result != CUDA_SUCCESS) {
    record.start.reset();
    record.stop.reset();
    report("a launch is recorded without its time: " + driver::call_error(*api, "cuEventRecord", result).message());
  }
}

void Profiler::end(const taot_launch_info& launch, taot_status status) {
  if (settings_.nvtx) pop_range();
  if (settings_.trace_path.empty()) return;
  auto open = std::find_if(open_launches.rbegin(), open_launches.rend(), [&](const OpenLaunch& entry) {
    return entry.profiler == this && entry.launch == &launch;
  });
  if (open == open_launches.rend()) return;  // begun before this profiler was installed
  const std::size_t index = open->record;
  open_launches.erase(std::next(open).base());
  std::lock_guard<std::mutex> lock(mutex_);
  Launch& record = launches_[index];
  record.status = status;
  record.ended = true;
  if (record.start.get() == nullptr) return;
  const driver::Api* api = driver::loaded();
  if (status != TAOT_OK || api == nullptr) {  // nothing ran: its events go back to the pool
    ContextEvents& events = events_[record.context];
    events.free.push_back(std::move(record.start));
    events.free.push_back(std::move(record.stop));
    return;
  }
  const CUresult result = api->cuEventRecord(record.stop.get(), launch.stream);
  if (result != CUDA_SUCCESS) {
    record.start.reset();
    record.stop.reset();
    report("a launch is recorded without its time: " + driver::call_error(*api, "cuEventRecord", result).message());
    return;
  }
  unread_.push_back(index);
  if (unread_.size() > settings_.unread_limit) read_times(unread_.size() / 2);
}

void Profiler::read_times(std::size_t count) {
  const driver::Api* api = driver::loaded();
  for (; count > 0 && !unread_.empty(); --count) {
    Launch& record = launches_[unread_.front()];
    unread_.pop_front();
    if (api == nullptr) continue;
    CUresult result = api->cuEventSynchronize(record.stop.get());
    const char* call = "cuEventSynchronize";
    float ms = 0;
    if (result == CUDA_SUCCESS) {
      result = api->cuEventElapsedTime(&ms, record.start.get(), record.stop.get());
      call = "cuEventElapsedTime";
    }
    if (result == CUDA_SUCCESS) {
      record.ms = std::round(static_cast<double>(ms) * 1e6) / 1e6;  // whole ns: the float's noise left out
      ContextEvents& events = events_[record.context];
      events.free.push_back(std::move(record.start));
      events.free.push_back(std::move(record.stop));
    } else {  // the context may be gone: drop the events
      record.start.reset();
      record.stop.reset();
      report("a launch's time could not be read: " + driver::call_error(*api, call, result).message());
    }
  }
}

std::string Profiler::trace_text(const std::string& existing) const {
  const std::string pid = std::to_string(static_cast<long long>(::getpid()));
  const std::string started = process_start();
  // Launches as lines of the trace, with when they began and on which device.
  struct Line {
    std::int64_t host_ns;
    int device;
    std::string text;
  };
  std::vector<Line> lines;
  Json devices = Json::object();
  Json errors = Json::array();
  // What other copies of the runtime in this process wrote to the same path is kept. A file that
  // does not start with this process's header (an earlier run's, of any size) is not parsed.
  const std::string header = header_text(pid, started);
  const Json before = existing.compare(0, header.size(), header) == 0
                          ? Json::parse(existing, nullptr, /*allow_exceptions=*/false)
                          : Json();
  if (before.is_object() && before.value("schema", "") == kTraceSchema) {
    for (const Json& launch : before.value("launches", Json::array()))
      if (launch.is_object() && launch.value("runtime", "") != runtime_id_)
        lines.push_back({launch.value("host_ns", std::int64_t{0}), launch.value("device", -1), launch.dump()});
    if (before.contains("devices") && before["devices"].is_object()) devices = before["devices"];
    for (const Json& error : before.value("errors", Json::array())) errors.push_back(error);
  }
  for (const auto& [ordinal, device] : devices_)
    devices[std::to_string(ordinal)] = Json{{"name", device.name},
                                            {"arch", std::to_string(device.arch)},
                                            {"num_sms", device.multiprocessors},
                                            {"clock_rate", device.clock_khz},
                                            {"memory_clock_rate", device.memory_clock_khz},
                                            {"bus_width", device.bus_width_bits}};
  {
    std::lock_guard<std::mutex> lock(report_mutex());
    for (const std::string& error : errors_)
      if (std::find(errors.begin(), errors.end(), Json(error)) == errors.end()) errors.push_back(error);
  }
  // Each kernel's names as JSON text, quoted once per trace rather than once per launch.
  struct KernelText {
    std::string head;                   // {"library":"...","kernel":"..."
    std::vector<std::string> arg_keys;  // "name":
    std::vector<std::string> variants;  // ,"variant":"...","variant_index":N, by index
  };
  std::map<const KernelNames*, KernelText> texts;
  const std::string tail = ",\"runtime\":" + Json(runtime_id_).dump() + "}";
  for (const Launch& record : launches_) {
    if (!record.ended) continue;  // still in its launch call on another thread
    const KernelNames& names = *record.names;
    KernelText& text = texts[&names];
    if (text.head.empty()) {
      text.head = "{\"library\":" + Json(names.library).dump() + ",\"kernel\":" + Json(names.kernel).dump();
      for (const KernelNames::Arg& arg : names.args) text.arg_keys.push_back(Json(arg.name).dump() + ":");
    }
    if (text.variants.size() <= record.variant_index) text.variants.resize(record.variant_index + 1);
    std::string& variant = text.variants[record.variant_index];
    if (variant.empty())
      variant = ",\"variant\":" + Json(names.variants[record.variant_index]).dump() +
                ",\"variant_index\":" + std::to_string(record.variant_index);
    std::string line = text.head + variant + ",\"step\":\"" + step_name(static_cast<Step>(record.step)) +
                       "\",\"grid\":[" + std::to_string(record.grid[0]) + "," + std::to_string(record.grid[1]) + "," +
                       std::to_string(record.grid[2]) + "],\"stream\":\"" +
                       hex(reinterpret_cast<std::uintptr_t>(record.stream)) +
                       "\",\"device\":" + std::to_string(record.device);
    // Scalars by name, then the dtypes of pointers and descriptors by name (null: a None pointer).
    std::string values, dtypes;
    for (std::size_t a = 0; a < record.args.size() && a < names.args.size(); ++a) {
      const KernelNames::Arg& arg = names.args[a];
      const taot_arg& value = record.args[a];
      std::string& into = arg.kind == table::ArgKind::pointer || arg.kind == table::ArgKind::tensordesc ? dtypes : values;
      into += (into.empty() ? "" : ",") + text.arg_keys[a];
      switch (arg.kind) {
        case table::ArgKind::pointer:
          if (value.address == 0 && arg.none) {
            into += "null";
            break;
          }
          [[fallthrough]];
        case table::ArgKind::tensordesc:
          into += std::string("\"") + dtype_name(static_cast<DType>(value.dtype)) + "\"";
          break;
        case table::ArgKind::int_scalar: into += std::to_string(value.integer); break;
        case table::ArgKind::float_scalar: into += Json(arg.fp64 ? value.real64 : double{value.real32}).dump(); break;
        case table::ArgKind::bool_scalar: into += value.integer != 0 ? "true" : "false"; break;
        case table::ArgKind::scalar:
          into += value.dtype == TAOT_DTYPE_FP32   ? Json(double{value.real32}).dump()
                  : value.dtype == TAOT_DTYPE_FP64 ? Json(value.real64).dump()
                  : value.dtype == TAOT_DTYPE_I64  ? std::to_string(value.integer)
                                                   : std::string("null");
          break;
      }
    }
    line += ",\"args\":{" + values + "},\"dtypes\":{" + dtypes + "},\"ms\":" +
            (record.ms ? Json(*record.ms).dump() : std::string("null")) + ",\"status\":\"" +
            taot_status_name(record.status) + "\"" + (record.captured ? ",\"captured\":true" : "") +
            ",\"host_ns\":" + std::to_string(record.host_ns) + tail;
    lines.push_back({record.host_ns, record.device, std::move(line)});
  }
  std::stable_sort(lines.begin(), lines.end(), [](const Line& a, const Line& b) { return a.host_ns < b.host_ns; });
  Json first_device;
  if (!lines.empty() && devices.contains(std::to_string(lines.front().device)))
    first_device = devices[std::to_string(lines.front().device)].value("name", Json());
  // One launch per line: a trace of many launches stays readable and diffable.
  std::string text = header + ",\n \"device\": " + first_device.dump() + ",\n \"devices\": " + devices.dump() +
                     ",\n \"errors\": " + errors.dump() + ",\n \"launches\": [";
  for (std::size_t l = 0; l < lines.size(); ++l) text += (l ? ",\n  " : "\n  ") + lines[l].text;
  text += lines.empty() ? "]\n}\n" : "\n ]\n}\n";
  return text;
}

Status Profiler::flush() {
  if (settings_.trace_path.empty()) return Status();
  try {
    std::lock_guard<std::mutex> lock(mutex_);
    read_times(unread_.size());
    const std::string& path = settings_.trace_path;
    // Copies of the runtime in this process (and other processes given the same path) take turns.
    FileDescriptor file(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644));
    if (file.get() < 0) return file_error(path, "open");
    if (::flock(file.get(), LOCK_EX) != 0) return file_error(path, "flock");
    std::string existing;
    char buffer[65536];
    for (ssize_t got; (got = ::read(file.get(), buffer, sizeof(buffer))) != 0;) {
      if (got < 0) {
        if (errno == EINTR) continue;
        return file_error(path, "read");
      }
      existing.append(buffer, static_cast<std::size_t>(got));
    }
    const std::string text = trace_text(existing);
    if (::ftruncate(file.get(), 0) != 0) return file_error(path, "ftruncate");
    for (std::size_t written = 0; written < text.size();) {
      const ssize_t put = ::pwrite(file.get(), text.data() + written, text.size() - written,
                                   static_cast<off_t>(written));
      if (put < 0) {
        if (errno == EINTR) continue;
        return file_error(path, "write");
      }
      written += static_cast<std::size_t>(put);
    }
    return Status();
  } catch (const std::exception& error) {
    return Status::error(TAOT_INTERNAL, "cannot write the trace to " + settings_.trace_path + ": " + error.what());
  }
}

void Profiler::flush_at_exit() noexcept {
  Status status = flush();
  if (!status.ok()) report(status.message());
}

void Profiler::write_at_exit() noexcept { flush_at_exit_ = true; }

Profiler* active_profiler() noexcept { return process_profiler.load(std::memory_order_acquire); }

}  // namespace taot::detail

extern "C" taot_status taot_profile_flush(void) {
  return taot::detail::guarded([]() -> taot::Status {
    taot::detail::Profiler* profiler = taot::detail::active_profiler();
    return profiler != nullptr ? profiler->flush() : taot::Status();
  });
}
