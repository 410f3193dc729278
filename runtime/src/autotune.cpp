// First-call autotuning (autotune.h, docs/runtime.md "Autotuning at first call").
#include "autotune.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <system_error>
#include <utility>

#include <unistd.h>

#include "config_fields.h"
#include "driver_objects.h"
#include "taot/driver_api.h"
#include "taot/timing.h"
#include "timing_hooks.h"
#include "tuning.h"

namespace taot::detail {
namespace {

// ---- the process's settings ----

std::mutex dir_mutex;
bool dir_set = false;  // set_autotune_dir was called: it replaces $TAOT_AUTOTUNE_DIR
std::string dir_given;

// $TAOT_AUTOTUNE: "1"/"on" and "0"/"off"; anything else (or unset) leaves each kernel's default.
std::uint64_t mode_from_environment() noexcept {
  const char* value = std::getenv("TAOT_AUTOTUNE");
  if (value == nullptr) return kEachKernel;
  if (std::strcmp(value, "1") == 0 || std::strcmp(value, "on") == 0) return kOn;
  if (std::strcmp(value, "0") == 0 || std::strcmp(value, "off") == 0) return kOff;
  return kEachKernel;
}

// Sets the mode bits of the state word (clearing the unread bit) and moves the epoch on.
void set_mode(std::uint64_t mode) noexcept {
  std::uint64_t state = autotune_state_word.load(std::memory_order_relaxed);
  while (!autotune_state_word.compare_exchange_weak(
      state, ((state >> kEpochShift) + 1) << kEpochShift | mode, std::memory_order_acq_rel)) {
  }
}

// A 64-bit FNV-1a digest, fed field by field (each followed by a 0 byte so that "ab","c" and
// "a","bc" differ).
class Digest {
 public:
  void add(std::string_view text) noexcept {
    for (unsigned char c : text) mix(c);
    mix(0);
  }
  void add(std::uint64_t value) noexcept {
    for (int b = 0; b < 8; ++b) mix(static_cast<unsigned char>(value >> (8 * b)));
  }
  std::string hex() const {
    char text[17];
    std::snprintf(text, sizeof(text), "%016llx", static_cast<unsigned long long>(hash_));
    return text;
  }

 private:
  void mix(unsigned char c) noexcept { hash_ = (hash_ ^ c) * 0x100000001b3ULL; }
  std::uint64_t hash_ = 0xcbf29ce484222325ULL;
};

std::string identity_of(const table::KernelTable& table) {
  Digest digest;
  digest.add(table.library);
  digest.add(table.name);
  for (std::uint16_t f = 0; f < table.field_count; ++f) {
    const table::ConfigField& field = table.fields[f];
    digest.add(field.name);
    for (std::uint16_t v = 0; v < field.value_count; ++v) digest.add(value_text(field, v));
  }
  for (std::uint32_t v = 0; v < table.variant_count; ++v) {
    const table::Variant& variant = table.variants[v];
    digest.add(variant.id);
    for (std::uint16_t i = 0; i < variant.image_count; ++i) {
      digest.add(variant.images[i].target);
      digest.add(static_cast<std::uint64_t>(variant.images[i].cubin_size));
    }
  }
  return digest.hex();
}

// A config value index of `field` as a file writes it: dtypes by name.
TuningValue file_value(const table::ConfigField& field, std::uint16_t index) {
  TuningValue value = compiled_value(field, index);
  if (field.kind == table::FieldKind::dtype_value) {
    value.kind = TuningValue::Kind::text;
    value.text = dtype_name(static_cast<DType>(field.int_values[index]));
  }
  return value;
}

// "NVIDIA H100 80GB HBM3" -> "NVIDIA_H100_80GB_HBM3": a device's results file, without its ".json".
std::string file_stem(std::string_view device) {
  std::string stem(device);
  for (char& c : stem)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.')) c = '_';
  return stem.empty() ? "any_device" : stem;
}

std::filesystem::path kernel_folder(const std::string& root, const table::KernelTable& table) {
  return std::filesystem::path(root) / table.library / table.name;
}

}  // namespace

Status AutotuneStore::persist(const std::string& device) const {
  const std::string root = autotune_dir();
  if (root.empty()) return Status();
  namespace fs = std::filesystem;
  std::lock_guard<std::mutex> lock(writing_);
  const fs::path folder = kernel_folder(root, table_);
  const fs::path path = folder / (file_stem(device) + ".json");
  std::error_code error;
  fs::create_directories(folder, error);
  if (error)
    return Status::error(TAOT_INVALID_ARGUMENT, "first-call autotuning: cannot make " + folder.string() + ": " +
                                                    error.message());
  // Threads tuning two keys of one kernel, and processes sharing the folder (containers too, where
  // pids repeat), each write a file of their own.
  static const std::uint64_t process_tag = std::random_device{}() * 0x100000001ULL ^ std::random_device{}();
  static std::atomic<std::uint64_t> writes{0};
  const fs::path temporary = path.string() + ".part" + std::to_string(::getpid()) + "-" + std::to_string(process_tag) +
                             "-" + std::to_string(writes.fetch_add(1, std::memory_order_relaxed));
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    out << tuning_file_text(results(device));
    out.close();
    if (!out) {
      fs::remove(temporary, error);
      return Status::error(TAOT_INVALID_ARGUMENT, "first-call autotuning: cannot write " + temporary.string());
    }
  }
  fs::rename(temporary, path, error);
  if (error) {
    std::error_code ignored;
    fs::remove(temporary, ignored);
    return Status::error(TAOT_INVALID_ARGUMENT, "first-call autotuning: cannot write " + path.string() + ": " +
                                                    error.message());
  }
  return Status();
}

namespace {

// ---- timing a key's candidates ----

// The memory of one reset_to_zero / restore_value argument, from its pointer to the end of the
// allocation it is in (what the driver knows of it), copied aside before tuning.
struct SavedBuffer {
  CUdeviceptr address;
  std::size_t bytes;
  DeviceMemory copy;
};

Status driver_failure(const driver::Api& api, const char* call, CUresult result, const std::string& who) {
  return driver::call_error(api, call, result).with_context(who + ": first-call autotuning");
}

// The most memory of one argument first-call autotuning copies aside (its allocation from the
// pointer on): beyond it the key is not tuned.
constexpr std::size_t kMaxRestoreBytes = std::size_t{1} << 30;

Expected<std::vector<SavedBuffer>> save_buffers(const driver::Api& api, const table::KernelTable& table,
                                                const taot_arg* args, CUstream stream, const std::string& who) {
  std::vector<SavedBuffer> saved;
  const table::Autotune& autotune = *table.autotune;
  std::vector<std::uint16_t> indexes(autotune.reset_to_zero, autotune.reset_to_zero + autotune.reset_count);
  indexes.insert(indexes.end(), autotune.restore_value, autotune.restore_value + autotune.restore_count);
  if (indexes.empty()) return saved;
  if (api.cuMemGetAddressRange == nullptr || api.cuMemcpyDtoDAsync == nullptr || api.cuMemAlloc == nullptr)
    return Status::error(TAOT_NOT_SUPPORTED, who + ": first-call autotuning restores " + table.args[indexes[0]].name +
                                                 " with cuMemGetAddressRange, cuMemAlloc and cuMemcpyDtoDAsync, "
                                                 "which this driver lacks");
  for (std::uint16_t a : indexes) {
    const CUdeviceptr address = args[a].address;
    if (address == 0) continue;  // None: nothing to restore
    CUdeviceptr base = 0;
    std::size_t size = 0;
    if (const CUresult result = api.cuMemGetAddressRange(&base, &size, address); result != CUDA_SUCCESS)
      return driver_failure(api, "cuMemGetAddressRange", result, who).with_context(table.args[a].name);
    SavedBuffer buffer{address, static_cast<std::size_t>(base + size - address), DeviceMemory()};
    if (buffer.bytes > kMaxRestoreBytes)
      return Status::error(TAOT_NOT_SUPPORTED, who + ": first-call autotuning would copy " +
                                                   std::to_string(buffer.bytes) + " bytes of " + table.args[a].name +
                                                   " (its allocation from the pointer on) to restore it, more than " +
                                                   std::to_string(kMaxRestoreBytes) + ": the key is not tuned");
    CUdeviceptr copy = 0;
    if (const CUresult result = api.cuMemAlloc(&copy, buffer.bytes); result != CUDA_SUCCESS)
      return driver_failure(api, "cuMemAlloc", result, who)
          .with_context("a copy of " + std::string(table.args[a].name) + " (" + std::to_string(buffer.bytes) + " bytes)");
    buffer.copy = DeviceMemory(api, copy);
    if (const CUresult result = api.cuMemcpyDtoDAsync(copy, address, buffer.bytes, stream); result != CUDA_SUCCESS)
      return driver_failure(api, "cuMemcpyDtoDAsync", result, who);
    saved.push_back(std::move(buffer));
  }
  return saved;
}

Status restore_buffers(const driver::Api& api, const std::vector<SavedBuffer>& saved, CUstream stream,
                       const std::string& who) {
  for (const SavedBuffer& buffer : saved)
    if (const CUresult result = api.cuMemcpyDtoDAsync(buffer.address, buffer.copy.get(), buffer.bytes, stream);
        result != CUDA_SUCCESS)
      return driver_failure(api, "cuMemcpyDtoDAsync", result, who);
  return Status();
}

// The quick timing every candidate gets, the full one those within kPruneRatio of the best full
// median so far get (taot tune's quick timing and pruning; reps for 25 ms in full, a quarter of
// Triton's do_bench, so that configs a few per cent apart are told apart as the JIT tells them),
// and the rule that picks: the least full median.
constexpr double kQuickMs = 1.0;
constexpr double kFullWarmupMs = 5.0;
constexpr double kFullRepMs = 25.0;
constexpr double kPruneRatio = 1.15;
// Then the candidates within kLeaderRatio of the best full median (at most kMaxLeaders, the best
// first) are timed again in kLeaderRounds interleaved rounds of kRoundMs warm-up and reps each; the
// least median of a leader's round medians wins.
constexpr double kLeaderRatio = 1.05;
constexpr std::size_t kMaxLeaders = 4;
constexpr int kLeaderRounds = 5;
constexpr double kRoundMs = 4.0;

}  // namespace

std::uint64_t read_autotune_environment() noexcept {
  std::uint64_t state = autotune_state_word.load(std::memory_order_acquire);
  if ((state & kUnreadBit) != 0)  // a set_autotune meanwhile wins: the CAS fails, the word has no unread bit
    autotune_state_word.compare_exchange_strong(state, (state & ~(kUnreadBit | kModeBits)) | mode_from_environment(),
                                                std::memory_order_acq_rel);
  return autotune_state_word.load(std::memory_order_acquire);
}

std::string autotune_dir() {
  std::lock_guard<std::mutex> lock(dir_mutex);
  if (dir_set) return dir_given;
  const char* value = std::getenv("TAOT_AUTOTUNE_DIR");
  return value != nullptr ? value : "";
}

void bump_autotune_epoch() noexcept {
  autotune_state_word.fetch_add(std::uint64_t{1} << kEpochShift, std::memory_order_acq_rel);
}

AutotuneStore::AutotuneStore(const table::KernelTable& table)
    : table_(table), identity_(table.autotune != nullptr ? identity_of(table) : std::string()) {}

void AutotuneStore::set_enabled(std::optional<bool> on) noexcept {
  own_switch_.store(on ? static_cast<std::int8_t>(*on) : std::int8_t{-1}, std::memory_order_relaxed);
  bump_autotune_epoch();
}

AutotuneStore::Found AutotuneStore::find(std::string_view device, const std::int64_t* key,
                                         std::uint16_t* config) const {
  const Key wanted(std::string(device), std::vector<std::int64_t>(key, key + table_.tuning_key_count));
  std::shared_lock<std::shared_mutex> lock(mutex_);
  const auto found = slots_.find(wanted);
  if (found == slots_.end() || found->second.tuning) return Found::none;
  if (found->second.next_step) return Found::next_step;
  std::copy(found->second.config.begin(), found->second.config.end(), config);
  return Found::config;
}

bool AutotuneStore::claim(const std::string& device, const std::vector<std::int64_t>& key) {
  std::unique_lock<std::shared_mutex> lock(mutex_);
  Key wanted(device, key);
  for (;;) {
    auto found = slots_.find(wanted);
    if (found == slots_.end()) {
      slots_[wanted].tuning = true;
      return true;
    }
    if (!found->second.tuning) return false;
    finished_.wait(lock);
  }
}

void AutotuneStore::finish(const std::string& device, const std::vector<std::int64_t>& key,
                           const std::uint16_t* config, bool retry) {
  {
    std::unique_lock<std::shared_mutex> lock(mutex_);
    const Key wanted(device, key);
    if (retry) {
      slots_.erase(wanted);
    } else {
      Slot& slot = slots_[wanted];
      slot.tuning = false;
      slot.next_step = config == nullptr;
      if (config != nullptr) slot.config.assign(config, config + table_.field_count);
    }
  }
  finished_.notify_all();
}

TuningFile AutotuneStore::results(const std::string& device) const {
  TuningFile file;
  file.kernel = table_.name;
  file.library = table_.library;
  file.library_id = identity_;
  file.device = device;
  file.key = tuning_key_names(table_);
  std::shared_lock<std::shared_mutex> lock(mutex_);
  for (const auto& [key, slot] : slots_) {
    if (key.first != device || slot.tuning || slot.next_step) continue;
    TuningEntry& entry = file.entries.emplace_back();
    entry.key = key.second;
    for (std::uint16_t f = 0; f < table_.field_count; ++f)
      if (slot.config[f] != table::kUnsetValue)
        entry.config.push_back({table_.fields[f].name, file_value(table_.fields[f], slot.config[f])});
  }
  return file;
}

Status AutotuneStore::load(const TuningFile& file) {
  const auto refused = [&](const std::string& why) {
    return Status::error(TAOT_INVALID_ARGUMENT, file.source + ": not first-call results of " + table_.library +
                                                    "::" + table_.name + " as built: " + why);
  };
  if (file.format != TuningFormat::taot) return refused("it is not in taot's format");
  if (file.library != table_.library)
    return refused("it names library \"" + file.library + "\"");
  if (file.library_id != identity_)
    return refused("it was timed on another build (library_id " + file.library_id + ", this build's is " +
                   identity_ + ")");
  if (file.device.empty()) return refused("it names no device");
  Expected<OwnedTable> resolved = resolve_tuning(file, table_);  // the kernel, its key, compiled values
  if (!resolved.ok()) return std::move(resolved).take_status();
  {
    std::unique_lock<std::shared_mutex> lock(mutex_);
    for (std::uint32_t e = 0; e < resolved->entry_count; ++e) {
      const std::int64_t* key = resolved->keys.data() + e * resolved->key_count;
      const std::uint16_t* config = resolved->configs.data() + e * resolved->field_count;
      Slot& slot = slots_[Key(file.device, std::vector<std::int64_t>(key, key + resolved->key_count))];
      if (slot.tuning) continue;
      slot.next_step = false;
      slot.config.assign(config, config + resolved->field_count);
    }
  }
  return Status();
}

void AutotuneStore::clear() {
  {
    std::unique_lock<std::shared_mutex> lock(mutex_);
    for (auto slot = slots_.begin(); slot != slots_.end();)
      slot = slot->second.tuning ? std::next(slot) : slots_.erase(slot);
  }
  bump_autotune_epoch();
}

void load_autotune_directory(AutotuneStore& store) {
  namespace fs = std::filesystem;
  const std::string root = autotune_dir();
  if (root.empty() || store.table().autotune == nullptr) return;
  const fs::path folder = kernel_folder(root, store.table());
  std::error_code error;
  if (!fs::is_directory(folder, error)) return;
  std::vector<fs::path> files;
  for (fs::directory_iterator it(folder, error), end; !error && it != end; it.increment(error))
    if (it->path().extension() == ".json") files.push_back(it->path());
  std::sort(files.begin(), files.end());
  for (const fs::path& path : files) {
    Expected<TuningFile> file = read_tuning_file(path.string());
    if (file.ok()) (void)store.load(*file);  // another build's, or damaged: tuned again and rewritten
  }
}

namespace {

// A key claimed for tuning: finished by commit() or next_step(); if neither ran (an exception),
// given back so that a later call tunes it, and the threads waiting for it are woken.
class Claim {
 public:
  Claim(AutotuneStore& store, const std::string& device, const std::vector<std::int64_t>& key)
      : store_(store), device_(device), key_(key) {}
  Claim(const Claim&) = delete;
  Claim& operator=(const Claim&) = delete;
  ~Claim() {
    if (!done_) store_.finish(device_, key_, nullptr, /*retry=*/true);
  }
  // The key's result is `config`; then its device's results are written (`*persisted`: how that went).
  void commit(const std::uint16_t* config, Status* persisted) {
    store_.finish(device_, key_, config);
    done_ = true;
    *persisted = store_.persist(device_);
  }
  // The key takes the later steps (heuristics, the default) in this process.
  void next_step() {
    store_.finish(device_, key_, nullptr);
    done_ = true;
  }

 private:
  AutotuneStore& store_;
  const std::string& device_;
  const std::vector<std::int64_t>& key_;
  bool done_ = false;
};

// This thread in relaxed capture mode while it tunes, so that its allocations and synchronizations
// neither fail nor break a capture another thread runs in global mode (torch.cuda.graph's).
class RelaxedCapture {
 public:
  explicit RelaxedCapture(const driver::Api& api) noexcept : api_(api) {
    if (api_.cuThreadExchangeStreamCaptureMode != nullptr &&
        api_.cuThreadExchangeStreamCaptureMode(&mode_) == CUDA_SUCCESS)
      exchanged_ = true;
  }
  ~RelaxedCapture() {
    if (exchanged_) (void)api_.cuThreadExchangeStreamCaptureMode(&mode_);
  }
  RelaxedCapture(const RelaxedCapture&) = delete;
  RelaxedCapture& operator=(const RelaxedCapture&) = delete;

 private:
  const driver::Api& api_;
  CUstreamCaptureMode mode_ = CU_STREAM_CAPTURE_MODE_RELAXED;
  bool exchanged_ = false;
};

// The candidates' launches are not the call's: the launch observer does not see them.
class Unobserved {
 public:
  Unobserved() noexcept { tuning_on_this_thread = true; }
  ~Unobserved() { tuning_on_this_thread = false; }
  Unobserved(const Unobserved&) = delete;
  Unobserved& operator=(const Unobserved&) = delete;
};

// How one key's candidates are timed, on the call's arguments.
struct Timed {
  Kernel& kernel;
  CUstream stream;
  const taot_arg* args;
  std::size_t arg_count;
  const Grid* grid;
  const BeforeLaunch& restore;

  Expected<Timings> time(std::size_t variant, double warmup_ms, double rep_ms) const {
    TimingOptions options;
    options.warmup_ms = warmup_ms;
    options.rep_ms = rep_ms;
    return time_launches(kernel, stream, args, arg_count, Selection::variant(variant), grid, options, restore);
  }
};

// The index of the fastest of `candidates` (candidates.size() when none could be timed; the first
// failure into `*failure`): each timed quickly, in full unless far behind the best so far, then
// the leaders again in interleaved rounds.
std::size_t fastest(const Timed& timed, const std::vector<AutotuneCandidate>& candidates, Status* failure) {
  double best = std::numeric_limits<double>::infinity();
  std::size_t chosen = candidates.size();
  std::vector<double> full_median(candidates.size(), std::numeric_limits<double>::infinity());
  for (std::size_t c = 0; c < candidates.size(); ++c) {
    Expected<Timings> timing = timed.time(candidates[c].variant, kQuickMs, kQuickMs);
    if (timing.ok() && timing->stats.median <= best * kPruneRatio)
      timing = timed.time(candidates[c].variant, kFullWarmupMs, kFullRepMs);
    else if (timing.ok())
      continue;  // far behind the best: not timed in full
    if (!timing.ok()) {
      if (failure->ok()) *failure = std::move(timing).take_status();
      continue;
    }
    full_median[c] = timing->stats.median;
    if (timing->stats.median < best) {
      best = timing->stats.median;
      chosen = c;
    }
  }
  // The leaders (within kLeaderRatio of the best), timed again in interleaved rounds: candidates
  // timed one after another meet the GPU at other clocks, and a few per cent is what tells them apart.
  std::vector<std::size_t> leaders;
  for (std::size_t c = 0; c < candidates.size(); ++c)
    if (full_median[c] <= best * kLeaderRatio) leaders.push_back(c);
  std::sort(leaders.begin(), leaders.end(), [&](std::size_t a, std::size_t b) { return full_median[a] < full_median[b]; });
  if (leaders.size() > kMaxLeaders) leaders.resize(kMaxLeaders);
  if (leaders.size() < 2) return chosen;
  std::vector<std::vector<double>> rounds(leaders.size());
  for (int r = 0; r < kLeaderRounds; ++r)
    for (std::size_t l = 0; l < leaders.size(); ++l) {
      Expected<Timings> timing = timed.time(candidates[leaders[l]].variant, kRoundMs, kRoundMs);
      if (timing.ok()) rounds[l].push_back(timing->stats.median);
    }
  double best_rounds = std::numeric_limits<double>::infinity();
  for (std::size_t l = 0; l < leaders.size(); ++l) {
    if (rounds[l].size() != static_cast<std::size_t>(kLeaderRounds)) continue;
    const double median = statistics(rounds[l]).median;
    if (median < best_rounds) {
      best_rounds = median;
      chosen = leaders[l];
    }
  }
  return chosen;
}

}  // namespace

Status tune_key(Kernel& kernel, AutotuneStore& store, CUstream stream, const taot_arg* args, std::size_t arg_count,
                const Grid* grid, const DeviceFacts& device, const std::vector<std::int64_t>& key,
                const std::vector<AutotuneCandidate>& candidates, Status* problem) {
  const table::KernelTable& table = kernel.table();
  const std::string who = std::string(table.library) + "::" + table.name;
  if (!store.claim(device.name, key)) return Status();  // another thread tuned it meanwhile
  Claim claim(store, device.name, key);
  if (candidates.size() <= 1) {
    if (candidates.empty()) claim.next_step();
    else claim.commit(candidates[0].config.data(), problem);
    return Status();
  }
  const driver::Api* api = driver::loaded();
  if (api == nullptr) {
    claim.next_step();
    *problem = Status::error(TAOT_NO_DRIVER, who + ": first-call autotuning has no driver");
    return Status();
  }
  // What keeps the key from being timed at all (a driver too old to time, memory for the copies)
  // makes it take the later steps: the call launches as it would without tuning.
  if (Status supported = timing_supported(*api, who); !supported.ok()) {
    claim.next_step();
    *problem = std::move(supported);
    return Status();
  }
  const RelaxedCapture relaxed(*api);
  Expected<std::vector<SavedBuffer>> saved = save_buffers(*api, table, args, stream, who);
  if (!saved.ok()) {
    claim.next_step();
    *problem = std::move(saved).take_status();
    return Status();
  }
  const BeforeLaunch restore = saved->empty() ? BeforeLaunch() : BeforeLaunch([&](CUstream on) {
    return restore_buffers(*api, *saved, on, who);
  });
  Status failure;
  std::size_t chosen = candidates.size();
  {
    const Unobserved unobserved;
    chosen = fastest(Timed{kernel, stream, args, arg_count, grid, restore}, candidates, &failure);
  }
  // The call's own launch must find its memory as given: a failure to put it back fails the call.
  Status restored = restore_buffers(*api, *saved, stream, who);
  if (restored.ok())
    if (const CUresult result = api->cuStreamSynchronize(stream); result != CUDA_SUCCESS)
      restored = driver_failure(*api, "cuStreamSynchronize", result, who);
  if (!restored.ok()) return restored;  // (the claim is given back: a later call tries again)
  if (chosen == candidates.size()) {
    claim.next_step();
    *problem = std::move(failure).with_context(who + ": first-call autotuning: no candidate could be timed");
    return Status();
  }
  claim.commit(candidates[chosen].config.data(), problem);
  return Status();
}

}  // namespace taot::detail

namespace taot {

void set_autotune(std::optional<bool> on) noexcept {
  detail::set_mode(on ? (*on ? detail::kOn : detail::kOff) : detail::kEachKernel);
}

void set_autotune_dir(const std::string& path) {
  std::lock_guard<std::mutex> lock(detail::dir_mutex);
  detail::dir_set = true;
  detail::dir_given = path;
}

}  // namespace taot
