// The launch recorder of recorder.h: one launch's arguments and buffers, copied through the driver
// seam, written as launch.json and binary files.
#include "recorder.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <utility>

#include "observer.h"
#include "taot/driver_api.h"
#include "taot/kernel_table.h"
#include "taot/runtime.h"

namespace taot::detail {
namespace {

using Json = nlohmann::ordered_json;

constexpr const char* kSchema = "taot.repro";
constexpr int kVersion = 1;
constexpr std::size_t kMaxErrors = 8;

std::string buffer_file(std::size_t index, const char* suffix) {
  return "buffer" + std::to_string(index) + suffix + ".bin";
}

// "0x3fc00000": a scalar's exact bits, so that a replay passes the very value.
std::string bits_text(std::uint64_t bits) {
  char text[24];
  std::snprintf(text, sizeof(text), "0x%016jx", static_cast<std::uintmax_t>(bits));
  return text;
}

Status write_file(const std::filesystem::path& path, const void* data, std::size_t bytes) {
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  if (file) file.write(static_cast<const char*>(data), static_cast<std::streamsize>(bytes));
  if (!file) return Status::error(TAOT_INVALID_ARGUMENT, "cannot write " + path.string() + ": " + std::strerror(errno));
  return Status();
}

const char* kind_name(table::ArgKind kind) {
  switch (kind) {
    case table::ArgKind::pointer: return "pointer";
    case table::ArgKind::tensordesc: return "tensordesc";
    case table::ArgKind::int_scalar: return "int";
    case table::ArgKind::float_scalar: return "float";
    case table::ArgKind::bool_scalar: return "bool";
    case table::ArgKind::scalar: return "scalar";
  }
  return "unknown";
}

}  // namespace

Expected<std::optional<RecordSettings>> record_settings(const char* directory, const char* kernel, const char* index) {
  if (directory == nullptr || *directory == '\0') return std::optional<RecordSettings>();
  RecordSettings settings;
  settings.directory = directory;
  if (kernel != nullptr) settings.kernel = kernel;
  if (index != nullptr && *index != '\0') {
    char* end = nullptr;
    errno = 0;
    const unsigned long long value = std::strtoull(index, &end, 10);
    if (*end != '\0' || errno != 0 || *index == '-')
      return Status::error(TAOT_INVALID_ARGUMENT,
                           std::string("TAOT_RECORD_INDEX must be a launch index (0, 1, ...), not '") + index + "'");
    settings.index = static_cast<std::size_t>(value);
  }
  return std::optional<RecordSettings>(std::move(settings));
}

void start_recorder_if_requested() {
  static const bool started = [] {
    Expected<std::optional<RecordSettings>> settings =
        record_settings(std::getenv("TAOT_RECORD"), std::getenv("TAOT_RECORD_KERNEL"), std::getenv("TAOT_RECORD_INDEX"));
    if (!settings.ok()) {
      // A tool mode the user asked for with an environment variable: its problems go to stderr.
      std::fprintf(stderr, "taot record: %s; nothing is recorded\n", std::move(settings).take_status().message().c_str());
      return false;
    }
    if (!settings->has_value()) return false;
    const taot_launch_observer* installed = current_launch_observer();
    const taot_launch_observer next = installed != nullptr ? *installed : taot_launch_observer{nullptr, nullptr, nullptr};
    // Never freed: a launch on another thread may call its observer while the process exits.
    auto* recorder = new Recorder(std::move(**settings), next);
    const taot_launch_observer observer = recorder->observer();
    taot_set_launch_observer(&observer);
    return true;
  }();
  (void)started;
}

Recorder::Recorder(RecordSettings settings, taot_launch_observer next)
    : settings_(std::move(settings)), next_(next) {}

taot_launch_observer Recorder::observer() noexcept { return taot_launch_observer{&on_begin, &on_end, this}; }

void Recorder::on_begin(const taot_launch_info* launch, void* user) noexcept {
  auto* recorder = static_cast<Recorder*>(user);
  if (recorder->state_.load(std::memory_order_acquire) != kDone) {
    try {
      recorder->begin(*launch);
    } catch (const std::exception& error) {
      recorder->report(std::string("the launch could not be recorded: ") + error.what());
    }
  }
  if (recorder->next_.begin != nullptr) recorder->next_.begin(launch, recorder->next_.user);
}

void Recorder::on_end(const taot_launch_info* launch, taot_status status, void* user) noexcept {
  auto* recorder = static_cast<Recorder*>(user);
  if (recorder->next_.end != nullptr) recorder->next_.end(launch, status, recorder->next_.user);
  if (recorder->state_.load(std::memory_order_acquire) == kRecording) {
    try {
      recorder->end(*launch, status);
    } catch (const std::exception& error) {
      recorder->report(std::string("the launch's outputs could not be recorded: ") + error.what());
    }
  }
}

void Recorder::report(const std::string& message) noexcept {
  try {
    std::lock_guard<std::mutex> lock(mutex_);
    if (errors_.size() >= kMaxErrors || std::find(errors_.begin(), errors_.end(), message) != errors_.end()) return;
    errors_.push_back(message);
    // The recorder's one print: recording is a tool mode the user asked for with $TAOT_RECORD.
    std::fprintf(stderr, "taot record: %s\n", message.c_str());
  } catch (...) {
  }
}

bool Recorder::chosen(const taot_launch_info& launch) {
  if (!settings_.kernel.empty() && settings_.kernel != launch.kernel) return false;
  const driver::Api* api = driver::loaded();
  CUstreamCaptureStatus capture = CU_STREAM_CAPTURE_STATUS_NONE;
  if (api == nullptr || api->cuStreamIsCapturing(launch.stream, &capture) != CUDA_SUCCESS ||
      capture != CU_STREAM_CAPTURE_STATUS_NONE)
    return false;  // captured into a graph: the device cannot be waited for; a later launch is taken
  return seen_++ == settings_.index;
}

void Recorder::begin(const taot_launch_info& launch) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (state_.load(std::memory_order_relaxed) != kWaiting || !chosen(launch)) return;
  state_.store(kRecording, std::memory_order_release);
  recording_ = &launch;
  const table::KernelTable* table =
      launch.kernel_handle != nullptr
          ? &Kernel::from_handle(const_cast<taot_kernel*>(launch.kernel_handle))->table()
          : nullptr;
  const driver::Api* api = driver::loaded();
  std::vector<std::string> problems;
  if (api->cuMemGetAddressRange == nullptr || api->cuMemcpyDtoH == nullptr)
    problems.push_back("the CUDA driver lacks cuMemGetAddressRange_v2 or cuMemcpyDtoH_v2: buffers are not copied");

  Json args = Json::array();
  for (std::size_t a = 0; a < launch.arg_count; ++a) {
    const taot_arg& value = launch.args[a];
    const table::Arg* described = table != nullptr && a < table->arg_count ? &table->args[a] : nullptr;
    Json arg = Json::object();
    arg["name"] = described != nullptr ? described->name : "arg" + std::to_string(a);
    const table::ArgKind kind = described != nullptr ? described->kind : table::ArgKind::int_scalar;
    arg["kind"] = kind_name(kind);
    switch (kind) {
      case table::ArgKind::pointer: {
        arg["dtype"] = dtype_name(static_cast<DType>(value.dtype));
        arg["output"] = described->output;
        if (value.address == 0) {
          arg["buffer"] = nullptr;
          break;
        }
        CUdeviceptr base = 0;
        std::size_t bytes = 0;
        CUresult result = CUDA_ERROR_NOT_SUPPORTED;
        if (api->cuMemGetAddressRange != nullptr)
          result = api->cuMemGetAddressRange(&base, &bytes, static_cast<CUdeviceptr>(value.address));
        if (result != CUDA_SUCCESS) {
          if (api->cuMemGetAddressRange != nullptr)
            problems.push_back("argument " + arg["name"].get<std::string>() + ": " +
                               driver::call_error(*api, "cuMemGetAddressRange", result).message());
          arg["buffer"] = nullptr;
          arg["address"] = bits_text(value.address);
          break;
        }
        auto found = std::find_if(buffers_.begin(), buffers_.end(), [&](const Buffer& b) { return b.base == base; });
        if (found == buffers_.end()) found = buffers_.insert(buffers_.end(), Buffer{base, bytes, false});
        found->output |= described->output;
        arg["buffer"] = static_cast<std::size_t>(found - buffers_.begin());
        arg["offset"] = static_cast<std::uint64_t>(value.address - base);
        break;
      }
      case table::ArgKind::tensordesc:
        arg["dtype"] = dtype_name(static_cast<DType>(value.dtype));
        problems.push_back("argument " + arg["name"].get<std::string>() +
                           ": tensor descriptors are not recorded yet; the launch cannot be replayed");
        break;
      case table::ArgKind::int_scalar:
      case table::ArgKind::bool_scalar:
        arg["value"] = value.integer;
        arg["bits"] = bits_text(value.address);
        break;
      case table::ArgKind::float_scalar: {
        const bool fp64 = described != nullptr && described->type_count > 0 && described->types[0] == TAOT_DTYPE_FP64;
        arg["fp64"] = fp64;
        arg["value"] = fp64 ? value.real64 : double{value.real32};
        std::uint64_t bits = 0;
        if (fp64) std::memcpy(&bits, &value.real64, sizeof(double));
        else std::memcpy(&bits, &value.real32, sizeof(float));
        arg["bits"] = bits_text(bits);
        break;
      }
      case table::ArgKind::scalar:  // its form is its dtype (none, i64, fp32 or fp64); bits as passed
        arg["dtype"] = value.dtype == TAOT_DTYPE_UNKNOWN ? "none" : dtype_name(static_cast<DType>(value.dtype));
        arg["value"] = value.dtype == TAOT_DTYPE_UNKNOWN ? Json()
                       : value.dtype == TAOT_DTYPE_FP32  ? Json(double{value.real32})
                       : value.dtype == TAOT_DTYPE_FP64  ? Json(value.real64)
                                                         : Json(value.integer);
        arg["bits"] = bits_text(value.address);
        break;
    }
    args.push_back(std::move(arg));
  }
  Json buffers = Json::array();
  for (std::size_t b = 0; b < buffers_.size(); ++b)
    buffers.push_back(Json{{"file", buffer_file(b, "")}, {"bytes", buffers_[b].bytes}, {"output", buffers_[b].output}});
  CUdevice device = 0;
  const int ordinal = api->cuCtxGetDevice(&device) == CUDA_SUCCESS ? static_cast<int>(device) : -1;
  Json description{{"schema", kSchema},
                   {"version", kVersion},
                   {"library", launch.library},
                   {"kernel", launch.kernel},
                   {"variant", launch.variant_id},
                   {"variant_index", launch.variant_index},
                   {"step", step_name(static_cast<Step>(launch.step))},
                   {"launch_index", settings_.index},
                   {"grid", {launch.grid[0], launch.grid[1], launch.grid[2]}},
                   {"device", ordinal},
                   {"buffers", std::move(buffers)},
                   {"args", std::move(args)}};
  description_ = description.dump();
  lock.unlock();
  for (const std::string& problem : problems) report(problem);

  std::error_code made;
  std::filesystem::create_directories(settings_.directory, made);
  Status status = made ? Status::error(TAOT_INVALID_ARGUMENT, "cannot make " + settings_.directory + ": " + made.message())
                       : copy_buffers("");
  if (status.ok()) status = write_description(std::nullopt);
  if (!status.ok()) report(status.message());
}

void Recorder::end(const taot_launch_info& launch, taot_status status) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (recording_ != &launch) return;  // another thread's launch
    recording_ = nullptr;
  }
  Status written = status == TAOT_OK ? copy_buffers(".after") : Status();
  if (written.ok()) written = write_description(status);
  if (!written.ok()) report(written.message());
  state_.store(kDone, std::memory_order_release);
}

Status Recorder::copy_buffers(const char* suffix) {
  const driver::Api* api = driver::loaded();
  if (api->cuMemcpyDtoH == nullptr) return Status();  // reported at begin
  // Every stream's work, not only the launch's: another stream may still write an input.
  if (CUresult result = api->cuCtxSynchronize(); result != CUDA_SUCCESS)
    return driver::call_error(*api, "cuCtxSynchronize", result);
  std::vector<unsigned char> bytes;
  for (std::size_t b = 0; b < buffers_.size(); ++b) {
    bytes.resize(buffers_[b].bytes);
    if (CUresult result = api->cuMemcpyDtoH(bytes.data(), buffers_[b].base, bytes.size()); result != CUDA_SUCCESS)
      return driver::call_error(*api, "cuMemcpyDtoH", result);
    if (Status status = write_file(std::filesystem::path(settings_.directory) / buffer_file(b, suffix), bytes.data(),
                                   bytes.size());
        !status.ok())
      return status;
  }
  return Status();
}

Status Recorder::write_description(const std::optional<taot_status>& status) {
  Json description = Json::parse(description_);
  if (status) {
    description["status"] = taot_status_name(*status);
    if (*status == TAOT_OK && driver::loaded()->cuMemcpyDtoH != nullptr)
      for (std::size_t b = 0; b < buffers_.size(); ++b) description["buffers"][b]["after"] = buffer_file(b, ".after");
  } else {
    description["status"] = nullptr;  // the launch has not ended
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    description["errors"] = errors_;
  }
  const std::string text = description.dump(1) + "\n";
  return write_file(std::filesystem::path(settings_.directory) / "launch.json", text.data(), text.size());
}

}  // namespace taot::detail
