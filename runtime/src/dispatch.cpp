// The fact index: variant selection by bitsets; see dispatch.h. Only the miss path builds strings.
#include "dispatch.h"

#include <algorithm>
#include <limits>
#include <numeric>

#include "config_fields.h"
#include "tensordesc.h"

namespace taot::detail {
namespace {

using table::ArgKind;

// How specialized a variant is: the sum of its arguments' scores (arg_kinds.h).
int specialization_score(const table::KernelTable& table, const table::Variant& variant) {
  int score = 0;
  for (std::size_t a = 0; a < table.arg_count; ++a)
    score += detail::specialization_score(table.args[a], variant.specialization[a]);
  return score;
}

int default_matches(const table::KernelTable& table, const table::Variant& variant) {
  int matches = 0;
  for (std::size_t f = 0; f < table.field_count; ++f)
    if (variant.config[f] == table.fields[f].default_index) ++matches;
  return matches;
}

bool any_bit(const std::vector<std::uint64_t>& mask) {
  return std::any_of(mask.begin(), mask.end(), [](std::uint64_t word) { return word != 0; });
}

// Whether every variant has images for the same targets (the common case): then selection need
// not know the device.
bool uniform_images(const table::KernelTable& table) {
  const table::Variant& first = table.variants[0];
  for (std::uint32_t v = 1; v < table.variant_count; ++v) {
    const table::Variant& variant = table.variants[v];
    if (variant.image_count != first.image_count) return false;
    for (std::uint16_t i = 0; i < variant.image_count; ++i) {
      const table::Image& a = variant.images[i];
      const table::Image& b = first.images[i];
      if (a.vendor != b.vendor || a.arch != b.arch || a.arch_specific != b.arch_specific) return false;
      if (a.vendor == table::Vendor::amd && std::string_view(a.target) != b.target) return false;
    }
  }
  return true;
}

// "sm_80, sm_90": the kernel's targets (from its images when the table lists none).
std::string targets_text(const table::KernelTable& table) {
  std::vector<std::string> targets;
  for (std::uint16_t t = 0; t < table.target_count; ++t) targets.emplace_back(table.targets[t]);
  for (std::uint32_t v = 0; targets.empty() && v < table.variant_count; ++v)
    for (std::uint16_t i = 0; i < table.variants[v].image_count; ++i)
      targets.emplace_back(table.variants[v].images[i].target);
  std::string text;
  for (const std::string& target : targets)
    if (text.find(target) == std::string::npos) text += (text.empty() ? "" : ", ") + target;
  return text;
}

std::string device_text(const DeviceFacts& device) {
  if (device.vendor == table::Vendor::amd) return device.name + ", " + device.gfx;
  return device.name + ", sm_" + std::to_string(device.arch);
}

}  // namespace

std::string hex(std::uint64_t value) {
  static const char* digits = "0123456789abcdef";
  std::string text;
  do {
    text.insert(text.begin(), digits[value % 16]);
    value /= 16;
  } while (value != 0);
  return "0x" + text;
}

FactIndex::FactIndex(const table::KernelTable& table)
    : arg_count_(table.arg_count),
      table_(&table),
      qualified_name_(std::string(table.library) + "::" + table.name),
      words_((table.variant_count + 63) / 64) {}

Expected<FactIndex> FactIndex::build(const table::KernelTable& table) {
  FactIndex index(table);
  if (table.variant_count == 0)
    return Status::error(TAOT_INTERNAL, index.qualified_name_ + ": the kernel table has no variants");
  for (std::size_t f = 0; f < table.field_count; ++f)
    if (table.fields[f].default_index >= table.fields[f].value_count)
      return Status::error(TAOT_INTERNAL, index.qualified_name_ + ": config field " + table.fields[f].name +
                                              " has its default out of its values");

  index.order_.resize(table.variant_count);
  std::iota(index.order_.begin(), index.order_.end(), 0U);
  std::vector<int> defaults(table.variant_count), scores(table.variant_count);
  for (std::uint32_t v = 0; v < table.variant_count; ++v) {
    const auto& variant = table.variants[v];
    for (std::size_t f = 0; f < table.field_count; ++f)
      if (variant.config[f] >= table.fields[f].value_count)
        return Status::error(TAOT_INTERNAL, index.qualified_name_ + ": variant " + variant.id +
                                                " has a config value out of range");
    for (std::size_t a = 0; a < table.arg_count; ++a) {
      const table::Arg& arg = table.args[a];
      if (const char* problem = table_problem(arg, variant.specialization[a]))
        return Status::error(TAOT_INTERNAL, index.qualified_name_ + ": variant " + variant.id + " has " + problem +
                                                " for argument " + arg.name);
    }
    std::size_t descriptors = 0;
    for (std::size_t a = 0; a < table.arg_count; ++a) descriptors += table.args[a].kind == ArgKind::tensordesc;
    for (std::uint16_t i = 0; i < variant.image_count; ++i) {
      const table::Image& image = variant.images[i];
      if (image.tensordesc_count != 0 && (image.tensordesc_count != descriptors || image.tensordescs == nullptr))
        return Status::error(TAOT_INTERNAL, index.qualified_name_ + ": variant " + variant.id + " image " +
                                                image.target + " has " + std::to_string(image.tensordesc_count) +
                                                " descriptor entries for " + std::to_string(descriptors) +
                                                " descriptor arguments");
    }
    defaults[v] = default_matches(table, variant);
    scores[v] = specialization_score(table, variant);
  }
  std::stable_sort(index.order_.begin(), index.order_.end(), [&](std::uint32_t a, std::uint32_t b) {
    if (defaults[a] != defaults[b]) return defaults[a] > defaults[b];
    return scores[a] > scores[b];
  });
  index.position_.resize(table.variant_count);
  for (std::uint32_t bit = 0; bit < table.variant_count; ++bit) index.position_[index.order_[bit]] = bit;

  std::size_t facts = 0;
  std::size_t memo_size = 1;
  for (std::size_t a = 0; a < table.arg_count; ++a) {
    const table::Arg& arg = table.args[a];
    index.arg_fact_offset_.push_back(facts);
    facts += static_cast<std::size_t>(fact_count(arg));
    if (memo_size <= kMaxMemo) memo_size *= static_cast<std::size_t>(fact_count(arg));
    DtypeSlots slots;
    slots.fill(-1);
    for (std::uint16_t slot = 0; slot < arg.type_count; ++slot) {
      const auto dtype = static_cast<std::size_t>(arg.types[slot]);
      if (dtype >= TAOT_DTYPE_SLOTS || slot > 63)
        return Status::error(TAOT_INTERNAL, index.qualified_name_ + ": argument " + arg.name + " has a bad type table");
      slots[dtype] = static_cast<std::int8_t>(slot);
    }
    index.dtype_slots_.push_back(slots);
  }
  if (!uniform_images(table)) {
    // Every NVIDIA arch that may run some image (each minor of each major an image was built for),
    // and every AMD image's gfx name.
    for (std::uint32_t v = 0; v < table.variant_count; ++v)
      for (std::uint16_t i = 0; i < table.variants[v].image_count; ++i) {
        const table::Image& image = table.variants[v].images[i];
        if (image.vendor == table::Vendor::amd) {
          if (std::find(index.gfx_classes_.begin(), index.gfx_classes_.end(), image.target) ==
              index.gfx_classes_.end())
            index.gfx_classes_.emplace_back(image.target);
          continue;
        }
        const int major = image.arch / 10;
        for (int minor = 0; minor < 10; ++minor)
          if (std::find(index.arch_classes_.begin(), index.arch_classes_.end(), major * 10 + minor) ==
              index.arch_classes_.end())
            index.arch_classes_.push_back(major * 10 + minor);
      }
    index.runnable_masks_.assign((index.device_classes() + 1) * index.words_, 0);
    for (std::size_t c = 0; c < index.device_classes(); ++c) {
      DeviceFacts device{};
      if (c < index.arch_classes_.size()) {
        device.arch = index.arch_classes_[c];
      } else {
        device.vendor = table::Vendor::amd;
        device.gfx = index.gfx_classes_[c - index.arch_classes_.size()];
      }
      for (std::uint32_t v = 0; v < table.variant_count; ++v)
        if (pick_image(table.variants[v], device) != nullptr)
          set_bit(&index.runnable_masks_[c * index.words_], index.position_[v]);
    }
    if (memo_size <= kMaxMemo) memo_size *= index.device_classes() + 1;
    index.device_aware_ = true;
  }
  if (memo_size <= kMaxMemo) {
    index.memo_.reset(new std::atomic<std::int32_t>[memo_size]);
    for (std::size_t m = 0; m < memo_size; ++m) index.memo_[m].store(-1, std::memory_order_relaxed);
    // The digits, last argument first: pointers (without None variants), then ints, inline
    // while they fit; every other argument whose facts vary in other_terms_.
    std::vector<FactTerm> pointers, ints;
    std::size_t weight = index.device_aware_ ? index.device_classes() + 1 : 1;
    for (std::size_t a = table.arg_count; a-- > 0;) {
      const table::Arg& arg = table.args[a];
      const auto index_of = static_cast<std::uint16_t>(a);
      const auto weight_of = static_cast<std::uint32_t>(weight);
      if (arg.kind == ArgKind::pointer && !arg.none) {
        pointers.push_back({index.dtype_slots_[a], weight_of, index_of});
      } else if (arg.kind == ArgKind::int_scalar) {
        ints.push_back({index.dtype_slots_[a], weight_of, index_of});
      } else if (!has_one_fact(arg)) {
        index.other_terms_.push_back({&arg, index.dtype_slots_[a], index_of, weight_of});
      }
      weight *= static_cast<std::size_t>(fact_count(arg));
    }
    const auto place = [&](const FactTerm& term, std::uint8_t* inline_count) {
      const std::size_t placed = std::size_t{index.pointer_terms_} + index.int_terms_;
      if (placed < kInlineTerms) {
        index.terms_[placed] = term;
        ++*inline_count;
      } else {
        index.other_terms_.push_back({&table.args[term.index], term.slots, term.index, term.weight});
      }
    };
    for (const FactTerm& term : pointers) place(term, &index.pointer_terms_);
    for (const FactTerm& term : ints) place(term, &index.int_terms_);
    index.has_other_terms_ = !index.other_terms_.empty();
  }
  index.fact_masks_.assign(facts * index.words_, 0);
  for (std::size_t a = 0; a < table.arg_count; ++a) {
    for (int fact = 0; fact < fact_count(table.args[a]); ++fact) {
      auto* mask = &index.fact_masks_[(index.arg_fact_offset_[a] + static_cast<std::size_t>(fact)) * index.words_];
      for (std::uint32_t v = 0; v < table.variant_count; ++v)
        if (accepts(table.args[a], table.variants[v].specialization[a], fact)) set_bit(mask, index.position_[v]);
    }
  }

  std::size_t values = 0;
  for (std::size_t f = 0; f < table.field_count; ++f) {
    index.field_value_offset_.push_back(values);
    values += table.fields[f].value_count;
  }
  index.value_masks_.assign(values * index.words_, 0);
  for (std::uint32_t v = 0; v < table.variant_count; ++v)
    for (std::size_t f = 0; f < table.field_count; ++f)
      set_bit(&index.value_masks_[(index.field_value_offset_[f] + table.variants[v].config[f]) * index.words_],
              index.position_[v]);
  return index;
}

bool FactIndex::other_facts(const taot_arg* args, std::size_t* slot) const noexcept {
  for (const OtherTerm& term : other_terms_) {
    const int fact = fact_of(*term.arg, term.slots, args[term.index]);
    if (fact < 0) return false;
    *slot += static_cast<std::size_t>(fact) * term.weight;
  }
  return true;
}

int FactIndex::value_index(std::size_t field_index, const FieldRequest& request) const noexcept {
  const table::ConfigField& field = table_->fields[field_index];
  for (std::uint16_t i = 0; i < field.value_count; ++i)
    if (value_equals(field, i, request)) return i;
  return -1;
}

Status FactIndex::check_arity(std::size_t arg_count) const {
  if (arg_count == table_->arg_count) return Status();
  return Status::error(TAOT_INVALID_ARGUMENT, qualified_name_ + ": expected " + std::to_string(table_->arg_count) +
                                                  " arguments, got " + std::to_string(arg_count));
}

Expected<std::size_t> FactIndex::select(const taot_arg* args, std::size_t arg_count, const Selection& selection,
                                        const DeviceFacts* device) const {
  if (arg_count != table_->arg_count) return check_arity(arg_count);
  if (selection.is_variant()) {
    const std::size_t variant = selection.variant_index();
    if (variant >= table_->variant_count)
      return Status::error(TAOT_INVALID_ARGUMENT, qualified_name_ + ": variant index " + std::to_string(variant) +
                                                      " is out of range (the kernel has " +
                                                      std::to_string(table_->variant_count) + " variants)");
    const std::size_t bit = position_[variant];
    for (std::size_t a = 0; a < table_->arg_count; ++a) {
      const int fact = fact_of(table_->args[a], dtype_slots_[a], args[a]);
      if (fact < 0 || !test_bit(fact_mask(a, fact), bit)) return explain_variant_rejects(variant, args);
    }
    return variant;
  }

  if (memo_ && selection.fields() == nullptr) {
    std::size_t key = 0;
    if (memo_key(args, device, &key)) {
      const std::int32_t known = memo_[key].load(std::memory_order_relaxed);
      if (known >= 0) return static_cast<std::size_t>(known);
      Expected<std::size_t> chosen = select_by_masks(args, selection, device);
      if (chosen.ok()) memo_[key].store(static_cast<std::int32_t>(*chosen), std::memory_order_relaxed);
      return chosen;
    }
  }
  return select_by_masks(args, selection, device);
}

bool FactIndex::accepting(const taot_arg* args, const DeviceFacts* device, std::uint64_t* mask) const noexcept {
  if (const std::uint64_t* on_device = runnable(device)) std::copy(on_device, on_device + words_, mask);
  else std::fill(mask, mask + words_, ~std::uint64_t{0});
  for (std::size_t a = 0; a < table_->arg_count; ++a) {
    const int fact = fact_of(table_->args[a], dtype_slots_[a], args[a]);
    if (fact < 0) return false;
    const std::uint64_t* accepted = fact_mask(a, fact);
    for (std::size_t w = 0; w < words_; ++w) mask[w] &= accepted[w];
  }
  return true;
}

Expected<std::size_t> FactIndex::select_by_masks(const taot_arg* args, const Selection& selection,
                                                 const DeviceFacts* device) const {
  constexpr std::size_t kInlineWords = 16;
  std::uint64_t inline_mask[kInlineWords];
  std::vector<std::uint64_t> heap_mask;
  std::uint64_t* mask = inline_mask;
  if (words_ > kInlineWords) {
    heap_mask.resize(words_);
    mask = heap_mask.data();
  }
  if (!accepting(args, device, mask)) return explain_miss(args, selection, device);
  if (const FieldRequest* fields = selection.fields()) {
    for (std::size_t f = 0; f < table_->field_count; ++f) {
      if (!fields[f].set) continue;
      const int value = value_index(f, fields[f]);
      if (value < 0) return explain_miss(args, selection, device);
      const std::uint64_t* with_value = value_mask(f, static_cast<std::size_t>(value));
      for (std::size_t w = 0; w < words_; ++w) mask[w] &= with_value[w];
    }
  }
  for (std::size_t w = 0; w < words_; ++w) {
    if (mask[w] != 0) {
      const std::size_t bit = w * 64 + static_cast<std::size_t>(__builtin_ctzll(mask[w]));
      return static_cast<std::size_t>(order_[bit]);
    }
  }
  return explain_miss(args, selection, device);
}

// What the variants in `among` were compiled to take for one argument, e.g.
// "fp32 align 16, fp32 any alignment".
std::string FactIndex::compiled_choices(std::size_t arg_index, const std::vector<std::uint64_t>& among) const {
  const table::Arg& arg = table_->args[arg_index];
  std::vector<std::string> choices;
  for (std::uint32_t v = 0; v < table_->variant_count; ++v) {
    if (!test_bit(among.data(), position_[v])) continue;
    const std::string choice = compiled_choice(arg, table_->variants[v].specialization[arg_index]);
    if (std::find(choices.begin(), choices.end(), choice) == choices.end()) choices.push_back(choice);
  }
  std::string text;
  for (const auto& choice : choices) text += (text.empty() ? "" : ", ") + choice;
  return text;
}

Status FactIndex::explain_miss(const taot_arg* args, const Selection& selection, const DeviceFacts* device) const {
  std::vector<std::uint64_t> mask(words_, 0);
  std::string variants = "variant";  // "variant for this GPU (H100, sm_90)" on a device-aware index
  if (const std::uint64_t* on_device = runnable(device)) {
    mask.assign(on_device, on_device + words_);
    if (!any_bit(mask))
      return Status::error(TAOT_UNSUPPORTED_DEVICE, qualified_name_ + ": no variant has an image for this GPU (" +
                                                        device_text(*device) + "); the kernel was compiled for " +
                                                        targets_text(*table_));
    variants = "variant for this GPU (" + device_text(*device) + ")";
  } else {
    for (std::uint32_t v = 0; v < table_->variant_count; ++v) set_bit(mask.data(), v);
  }
  if (const FieldRequest* fields = selection.fields()) {
    for (std::size_t f = 0; f < table_->field_count; ++f) {
      if (!fields[f].set) continue;
      const table::ConfigField& field = table_->fields[f];
      const int value = value_index(f, fields[f]);
      if (value < 0) {
        std::string compiled;
        for (std::uint16_t i = 0; i < field.value_count; ++i)
          compiled += (i ? ", " : "") + value_text(field, i);
        return Status::error(TAOT_NO_MATCHING_VARIANT, qualified_name_ + ": config " + field.name + "=" +
                                                           request_text(field, fields[f]) +
                                                           " was not compiled; compiled values: " + compiled);
      }
      const std::uint64_t* with_value = value_mask(f, static_cast<std::size_t>(value));
      std::vector<std::uint64_t> next(words_);
      for (std::size_t w = 0; w < words_; ++w) next[w] = mask[w] & with_value[w];
      if (!any_bit(next))
        return Status::error(TAOT_NO_MATCHING_VARIANT, qualified_name_ + ": no " + variants + " has config " +
                                                           field.name + "=" + request_text(field, fields[f]) +
                                                           " together with the other requested config values");
      mask = std::move(next);
    }
  }
  for (std::size_t a = 0; a < table_->arg_count; ++a) {
    const table::Arg& arg = table_->args[a];
    const int fact = fact_of(table_->args[a], dtype_slots_[a], args[a]);
    std::vector<std::uint64_t> next(words_, 0);
    if (fact >= 0) {
      const std::uint64_t* accepted = fact_mask(a, fact);
      for (std::size_t w = 0; w < words_; ++w) next[w] = mask[w] & accepted[w];
    }
    if (!any_bit(next)) {
      const bool requested = selection.fields() != nullptr;
      return Status::error(TAOT_NO_MATCHING_VARIANT,
                           qualified_name_ + ": no compiled " + variants + " accepts " +
                               describe_value(table_->args[a], args[a]) + "; " +
                               (a > 0 ? "given the arguments before it" : "") +
                               (requested ? (a > 0 ? " and the requested config" : "given the requested config") : "") +
                               (a > 0 || requested ? ", " : "") + "the variants take " + arg.name + " as: " +
                               compiled_choices(a, mask) +
                               (runnable(device) != nullptr ? "; the kernel was compiled for " + targets_text(*table_)
                                                            : ""));
    }
    mask = std::move(next);
  }
  return Status::error(TAOT_INTERNAL, qualified_name_ + ": selection failed without a failing argument");
}

Status FactIndex::explain_variant_rejects(std::size_t variant, const taot_arg* args) const {
  const std::size_t bit = position_[variant];
  for (std::size_t a = 0; a < table_->arg_count; ++a) {
    const int fact = fact_of(table_->args[a], dtype_slots_[a], args[a]);
    if (fact >= 0 && test_bit(fact_mask(a, fact), bit)) continue;
    std::vector<std::uint64_t> only(words_, 0);
    set_bit(only.data(), bit);
    return Status::error(TAOT_NO_MATCHING_VARIANT, qualified_name_ + ": variant " + table_->variants[variant].id +
                                                       " does not accept " + describe_value(table_->args[a], args[a]) +
                                                       "; it takes " + table_->args[a].name + " as: " +
                                                       compiled_choices(a, only));
  }
  return Status::error(TAOT_INTERNAL, qualified_name_ + ": variant check failed without a failing argument");
}

}  // namespace taot::detail
