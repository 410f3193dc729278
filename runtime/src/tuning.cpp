// A kernel's tuned tables at run time: checking a file against the kernel, the lookup of a key,
// the per-device sets that loads replace, and $TAOT_TUNING_DIR (see tuning.h, docs/tuning.md).
#include "tuning.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <system_error>
#include <utility>

namespace taot::detail {
namespace {

// The first entry of [lo, hi) whose dimension `d` is not below `value` (`below`), or is above it
// (!`below`); entries in [lo, hi) are sorted by dimension `d`, `stride` values per entry.
template <bool below>
std::size_t partition_point(const std::int64_t* keys, std::size_t stride, std::size_t d, std::size_t lo,
                            std::size_t hi, std::int64_t value) noexcept {
  while (lo < hi) {
    const std::size_t mid = lo + (hi - lo) / 2;
    const std::int64_t at = keys[mid * stride + d];
    if (below ? at < value : at <= value) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

}  // namespace

std::vector<std::string> tuning_key_names(const table::KernelTable& kernel) {
  std::vector<std::string> names;
  for (std::uint16_t k = 0; k < kernel.tuning_key_count; ++k) {
    const table::TuningKeyPart& part = kernel.tuning_key[k];
    names.emplace_back(part.field ? kernel.fields[part.index].name : kernel.args[part.index].name);
  }
  return names;
}

TuningValue compiled_value(const table::ConfigField& field, std::size_t index) {
  TuningValue value;
  switch (field.kind) {
    case table::FieldKind::float_value:
      value.kind = TuningValue::Kind::real;
      value.real = field.float_values[index];
      break;
    case table::FieldKind::string_value:
      value.kind = TuningValue::Kind::text;
      value.text = field.string_values[index];
      break;
    case table::FieldKind::bool_value:
      value.kind = TuningValue::Kind::boolean;
      value.integer = field.int_values[index];
      break;
    case table::FieldKind::int_value:
    case table::FieldKind::dtype_value: value.integer = field.int_values[index]; break;
  }
  return value;
}

Expected<OwnedTable> resolve_tuning(const TuningFile& file, const table::KernelTable& kernel) {
  TuningTarget target;
  target.kernel = kernel.name;
  target.key = tuning_key_names(kernel);
  for (std::uint16_t f = 0; f < kernel.field_count; ++f) {
    const table::ConfigField& field = kernel.fields[f];
    TuningTarget::Field& described = target.fields.emplace_back();
    described.name = field.name;
    described.kind = field.kind;
    for (std::uint16_t v = 0; v < field.value_count; ++v) described.values.push_back(compiled_value(field, v));
  }
  return resolve_tuning_file(file, target);
}

std::size_t lookup_entry(const table::TunedTable& tuned, std::size_t key_count, const std::int64_t* key) noexcept {
  const std::int64_t* keys = tuned.keys;
  std::size_t lo = 0, hi = tuned.entry_count;
  for (std::size_t d = 0; d < key_count; ++d) {
    const std::int64_t value = key[d];
    std::size_t chosen;  // an entry in [lo, hi) holding the value chosen for dimension d
    if (tuned.match == table::TuningMatch::floor) {
      const std::size_t above = partition_point<false>(keys, key_count, d, lo, hi, value);
      chosen = above == lo ? lo : above - 1;
    } else {
      const std::size_t first = partition_point<true>(keys, key_count, d, lo, hi, value);
      if (first == hi) {
        chosen = hi - 1;
      } else if (first == lo) {
        chosen = lo;
      } else {
        // keys[first - 1] < value <= keys[first]: both gaps fit in 64 unsigned bits.
        const std::uint64_t below_gap =
            static_cast<std::uint64_t>(value) - static_cast<std::uint64_t>(keys[(first - 1) * key_count + d]);
        const std::uint64_t above_gap =
            static_cast<std::uint64_t>(keys[first * key_count + d]) - static_cast<std::uint64_t>(value);
        chosen = above_gap < below_gap ? first : first - 1;
      }
    }
    if (d + 1 == key_count) return chosen;
    const std::int64_t chosen_value = keys[chosen * key_count + d];
    const std::size_t begin = partition_point<true>(keys, key_count, d, lo, hi, chosen_value);
    hi = partition_point<false>(keys, key_count, d, begin, hi, chosen_value);
    lo = begin;
  }
  return lo;
}

std::unique_ptr<TuningSet> TuningSet::baked(const table::KernelTable& kernel) {
  auto set = std::make_unique<TuningSet>();
  for (std::uint16_t t = 0; t < kernel.tuned_count; ++t) {
    set->views_.push_back(kernel.tuned[t]);
    set->devices_.emplace_back(kernel.tuned[t].device);
    set->owned_.push_back(nullptr);
    set->names_devices_ = set->names_devices_ || !set->devices_.back().empty();
  }
  return set;
}

std::unique_ptr<TuningSet> TuningSet::with(const TuningSet& base, OwnedTable table) {
  auto set = std::make_unique<TuningSet>();
  set->views_ = base.views_;
  set->devices_ = base.devices_;
  set->owned_ = base.owned_;
  auto owned = std::make_shared<const OwnedTable>(std::move(table));
  std::size_t t = 0;
  while (t < set->devices_.size() && !same_device_name(set->devices_[t], owned->device)) ++t;
  if (t == set->devices_.size()) {
    set->views_.emplace_back();
    set->devices_.emplace_back();
    set->owned_.emplace_back();
  }
  set->views_[t] = owned->view();
  set->devices_[t] = owned->device;
  set->owned_[t] = std::move(owned);
  for (std::string_view device : set->devices_) set->names_devices_ = set->names_devices_ || !device.empty();
  return set;
}

const table::TunedTable* TuningSet::for_device(std::string_view device_name) const noexcept {
  const table::TunedTable* any = nullptr;
  for (std::size_t t = 0; t < views_.size(); ++t) {
    if (devices_[t].empty()) any = &views_[t];
    else if (same_device_name(devices_[t], device_name)) return &views_[t];
  }
  return any;
}

const table::TunedTable* TuningSet::remember_for_device(const DeviceFacts* device) const noexcept {
  const table::TunedTable* table = for_device(device != nullptr ? std::string_view(device->name) : std::string_view());
  const std::uint32_t ordinal = device != nullptr ? device->ordinal : 0;
  const std::size_t answer = table == nullptr ? 1 : static_cast<std::size_t>(table - views_.data()) + 2;
  if (ordinal < kRememberedDevices && answer <= 0xFFFF)
    by_device_[ordinal].store(static_cast<std::uint16_t>(answer), std::memory_order_relaxed);
  return table;
}

TuningHolder::TuningHolder(const table::KernelTable& kernel) : sets_(std::make_unique<Sets>()) {
  sets_->all.push_back(TuningSet::baked(kernel));
  current_.store(sets_->all.back().get(), std::memory_order_release);
}

void TuningHolder::load(OwnedTable table) {
  std::lock_guard<std::mutex> lock(sets_->mutex);
  sets_->all.push_back(TuningSet::with(*current_.load(std::memory_order_relaxed), std::move(table)));
  current_.store(sets_->all.back().get(), std::memory_order_release);
}

void TuningHolder::reset() {
  std::lock_guard<std::mutex> lock(sets_->mutex);
  current_.store(sets_->all.front().get(), std::memory_order_release);
}

Status load_tuning_directory(TuningHolder& holder, const table::KernelTable& kernel) {
  namespace fs = std::filesystem;
  const char* root = std::getenv("TAOT_TUNING_DIR");
  if (root == nullptr || *root == '\0') return {};
  const fs::path folder = fs::path(root) / kernel.library / kernel.name;
  std::error_code error;
  if (!fs::is_directory(folder, error)) return {};
  std::vector<fs::path> files;
  for (fs::directory_iterator it(folder, error), end; !error && it != end; it.increment(error)) {
    std::error_code kind_error;
    if (it->path().extension() == ".json" && it->is_regular_file(kind_error)) files.push_back(it->path());
  }
  if (error)
    return Status::error(TAOT_INVALID_ARGUMENT,
                         "$TAOT_TUNING_DIR: cannot list " + folder.string() + ": " + error.message());
  std::sort(files.begin(), files.end());
  for (const fs::path& path : files) {
    Expected<TuningFile> file = read_tuning_file(path.string());
    if (!file.ok()) return std::move(file).take_status().with_context("$TAOT_TUNING_DIR");
    Expected<OwnedTable> table = resolve_tuning(*file, kernel);
    if (!table.ok()) return std::move(table).take_status().with_context("$TAOT_TUNING_DIR");
    holder.load(std::move(table).value());
  }
  return {};
}

}  // namespace taot::detail
