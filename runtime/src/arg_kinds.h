// What each kind of call argument (table::ArgKind) means to the runtime, in one place: its facts
// for dispatch (how many there are, which one a value shows, which specializations accept it, how
// specialized a variant is), how values and compiled choices read in messages, and how a value
// becomes kernel parameters. One ArgKindRules specialization per kind; callers reach them through
// table::visit_arg_kind, which inlines to a switch: nothing here is virtual, and the functions on
// the launch path (fact_of, pack) are inline.
//
// A "fact" is what selection needs to know about a value: an index from 0 to fact_count - 1, or -1
// for a value no variant can take. Variants are preselected per (argument, fact) into bitsets.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>

#include "taot/driver_api.h"
#include "taot/kernel_table.h"
#include "taot/runtime.h"
#include "tensordesc.h"

namespace taot::detail {

// Per argument, the position of each taot_dtype value in the argument's type list (-1: absent).
using DtypeSlots = std::array<std::int8_t, TAOT_DTYPE_SLOTS>;

inline int dtype_slot(const DtypeSlots& slots, std::int32_t dtype) noexcept {
  const auto value = static_cast<std::uint32_t>(dtype);
  return value < TAOT_DTYPE_SLOTS ? slots[value] : -1;
}

std::string hex(std::uint64_t value);

// Where an argument's value goes when it does not pack in place: the image launched and, for
// descriptor arguments, the storage of this argument's expanded values (valid until the launch
// call returns) and its number among the kernel's descriptor arguments.
struct PackSite {
  const driver::Api& api;
  const table::Image& image;
  TensordescParams* expanded;
  std::uint16_t ordinal;
};

template <table::ArgKind Kind>
struct ArgKindRules;

// A device pointer. Facts: dtype slot x (16-byte aligned or not), and for arguments with None
// variants one more, "null": a null pointer selects exactly the variants compiled with the pointer
// None (and they take nothing else); for other arguments a null pointer is a pointer of its dtype.
// Packed in place (the address); a None variant does not take it.
template <>
struct ArgKindRules<table::ArgKind::pointer> {
  static const char* table_problem(const table::Arg& arg, const table::ArgSpecialization& spec) {
    return spec.none && !arg.none ? "a None specialization of an argument without None variants" : nullptr;
  }
  static int fact_count(const table::Arg& arg) { return 2 * arg.type_count + (arg.none ? 1 : 0); }
  static int fact_of(const table::Arg& arg, const DtypeSlots& slots, const taot_arg& value) noexcept {
    if (arg.none && value.address == 0) return 2 * arg.type_count;
    return fact_of_slot(dtype_slot(slots, value.dtype), value);
  }
  // The fact of a value (not None) whose dtype has slot `slot` in the argument's types (-1: none).
  static int fact_of_slot(int slot, const taot_arg& value) noexcept {
    return slot < 0 ? -1 : 2 * slot + ((value.address % 16) == 0 ? 1 : 0);
  }
  static bool accepts(const table::Arg& arg, const table::ArgSpecialization& spec, int fact) {
    if (fact == 2 * arg.type_count) return spec.none;
    const bool aligned = (fact % 2) == 1;
    return !spec.none && spec.type == arg.types[fact / 2] && (spec.hint == 0 || aligned);
  }
  static int score(const table::Arg&, const table::ArgSpecialization& spec) { return spec.hint == 16 ? 1 : 0; }
  static std::string describe_value(const table::Arg& arg, const taot_arg& value) {
    if (arg.none && value.address == 0) return "None (a null pointer)";
    return std::string(dtype_name(static_cast<DType>(value.dtype))) + " pointer " + hex(value.address) +
           ((value.address % 16) == 0 ? " (16-byte aligned)" : " (not 16-byte aligned)");
  }
  static std::string compiled_choice(const table::Arg&, const table::ArgSpecialization& spec) {
    if (spec.none) return "None";
    return std::string(dtype_name(static_cast<DType>(spec.type))) + (spec.hint == 16 ? " align 16" : " any alignment");
  }
  static std::string variant_text(const table::Arg&, const table::ArgSpecialization& spec) {
    if (spec.none) return "None";
    return std::string(dtype_name(static_cast<DType>(spec.type))) + (spec.hint == 16 ? " align 16" : "");
  }
  static constexpr bool kPacksInPlace = true;
  static constexpr bool kOneFact = false;
};

// An integer. Facts: (fits in 32 bits or not) x (==1, %16==0, neither). Packed in place.
template <>
struct ArgKindRules<table::ArgKind::int_scalar> {
  static constexpr int kPlain = 0, kDiv16 = 1, kOne = 2, kClasses = 3;
  static const char* table_problem(const table::Arg&, const table::ArgSpecialization&) { return nullptr; }
  static int fact_count(const table::Arg&) { return 2 * kClasses; }
  static int fact_of(const table::Arg&, const DtypeSlots&, const taot_arg& value) noexcept { return fact_of(value); }
  static int fact_of(const taot_arg& value) noexcept {
    const std::int64_t integer = value.integer;
    const bool wide = integer < std::numeric_limits<std::int32_t>::min() ||
                      integer > std::numeric_limits<std::int32_t>::max();
    const int divisibility = integer == 1 ? kOne : ((integer & 15) == 0 ? kDiv16 : kPlain);  // % 16 == 0
    return (wide ? kClasses : 0) + divisibility;
  }
  static bool accepts(const table::Arg&, const table::ArgSpecialization& spec, int fact) {
    const bool wide = fact / kClasses == 1;
    const int divisibility = fact % kClasses;
    if (wide && spec.type != TAOT_DTYPE_I64) return false;
    return spec.hint == 0 || (spec.hint == 16 && divisibility == kDiv16) || (spec.hint == 1 && divisibility == kOne);
  }
  // ==1 counts 2 (it also removes the argument), %16 counts 1, a 32-bit type counts 1 over 64-bit.
  static int score(const table::Arg& arg, const table::ArgSpecialization& spec) {
    return (spec.hint == 1 ? 2 : spec.hint == 16 ? 1 : 0) + (spec.type == TAOT_DTYPE_I32 && arg.type_count > 1 ? 1 : 0);
  }
  static std::string describe_value(const table::Arg&, const taot_arg& value) { return std::to_string(value.integer); }
  static std::string compiled_choice(const table::Arg&, const table::ArgSpecialization& spec) {
    return std::string(dtype_name(static_cast<DType>(spec.type))) +
           (spec.hint == 1 ? " ==1" : spec.hint == 16 ? " %16==0" : " any value");
  }
  static std::string variant_text(const table::Arg&, const table::ArgSpecialization& spec) {
    return std::string(dtype_name(static_cast<DType>(spec.type))) +
           (spec.hint == 16 ? " %16" : spec.hint == 1 ? " ==1" : "");
  }
  static constexpr bool kPacksInPlace = true;
  static constexpr bool kOneFact = false;
};

// A float or bool scalar: one fact, every variant accepts it. Packed in place.
struct ScalarRules {
  static const char* table_problem(const table::Arg&, const table::ArgSpecialization&) { return nullptr; }
  static int fact_count(const table::Arg&) { return 1; }
  static int fact_of(const table::Arg&, const DtypeSlots&, const taot_arg&) noexcept { return 0; }
  static bool accepts(const table::Arg&, const table::ArgSpecialization&, int) { return true; }
  static int score(const table::Arg&, const table::ArgSpecialization&) { return 0; }
  static std::string compiled_choice(const table::Arg&, const table::ArgSpecialization& spec) {
    return dtype_name(static_cast<DType>(spec.type));
  }
  static std::string variant_text(const table::Arg& arg, const table::ArgSpecialization& spec) {
    return compiled_choice(arg, spec);
  }
  static constexpr bool kPacksInPlace = true;
  static constexpr bool kOneFact = true;
};

template <>
struct ArgKindRules<table::ArgKind::float_scalar> : ScalarRules {
  static std::string describe_value(const table::Arg& arg, const taot_arg& value) {
    return std::to_string(arg.type_count > 0 && arg.types[0] == TAOT_DTYPE_FP64 ? value.real64 : value.real32);
  }
};

template <>
struct ArgKindRules<table::ArgKind::bool_scalar> : ScalarRules {
  static std::string describe_value(const table::Arg&, const taot_arg& value) {
    return value.integer != 0 ? "true" : "false";
  }
};

// A scalar whose form is chosen at launch: None, an int or a float (`taot_arg.dtype` says which:
// TAOT_DTYPE_UNKNOWN, TAOT_DTYPE_I64, or the argument's float type). Facts: the int facts of
// int_scalar, then one for a float, one for None. A None variant takes only None and has no
// parameter for it; the others are packed in place.
template <>
struct ArgKindRules<table::ArgKind::scalar> {
  using IntRules = ArgKindRules<table::ArgKind::int_scalar>;
  static constexpr int kFloat = 2 * IntRules::kClasses, kNone = kFloat + 1;
  static bool is_float_type(taot_dtype type) { return type == TAOT_DTYPE_FP32 || type == TAOT_DTYPE_FP64; }
  static bool takes(const table::Arg& arg, bool floats) {
    for (std::uint16_t t = 0; t < arg.type_count; ++t)
      if (is_float_type(arg.types[t]) == floats) return true;
    return false;
  }
  // The argument's float type, or TAOT_DTYPE_UNKNOWN when it takes no float.
  static taot_dtype float_type(const table::Arg& arg) {
    for (std::uint16_t t = 0; t < arg.type_count; ++t)
      if (is_float_type(arg.types[t])) return arg.types[t];
    return TAOT_DTYPE_UNKNOWN;
  }
  static bool is_none(const taot_arg& value) noexcept { return value.dtype == TAOT_DTYPE_UNKNOWN; }
  static const char* table_problem(const table::Arg& arg, const table::ArgSpecialization& spec) {
    if (spec.none) return arg.none ? nullptr : "a None specialization of an argument without None variants";
    return spec.type == TAOT_DTYPE_I32 || spec.type == TAOT_DTYPE_I64 || spec.type == float_type(arg)
               ? nullptr
               : "a type the argument does not take";
  }
  static int fact_count(const table::Arg&) { return kNone + 1; }
  static int fact_of(const table::Arg& arg, const DtypeSlots&, const taot_arg& value) noexcept {
    if (value.dtype == TAOT_DTYPE_UNKNOWN) return arg.none ? kNone : -1;
    if (value.dtype == TAOT_DTYPE_I64) return IntRules::fact_of(value);
    const taot_dtype floats = float_type(arg);
    return floats != TAOT_DTYPE_UNKNOWN && value.dtype == floats ? kFloat : -1;
  }
  static bool accepts(const table::Arg& arg, const table::ArgSpecialization& spec, int fact) {
    if (fact == kNone || spec.none) return fact == kNone && spec.none;
    if (fact == kFloat) return is_float_type(spec.type);
    return !is_float_type(spec.type) && IntRules::accepts(arg, spec, fact);
  }
  static int score(const table::Arg& arg, const table::ArgSpecialization& spec) {
    return spec.none || is_float_type(spec.type) ? 0 : IntRules::score(arg, spec);
  }
  static std::string describe_value(const table::Arg& arg, const taot_arg& value) {
    if (value.dtype == TAOT_DTYPE_UNKNOWN) return "None";
    if (value.dtype == TAOT_DTYPE_I64) return std::to_string(value.integer);
    if (value.dtype == TAOT_DTYPE_FP32) return std::to_string(value.real32);
    if (value.dtype == TAOT_DTYPE_FP64) return std::to_string(value.real64);
    return "a value of form " + std::to_string(value.dtype) + " (expected " +
           (takes(arg, false) ? "an int (TAOT_DTYPE_I64), " : "") +
           (takes(arg, true) ? std::string(dtype_name(static_cast<DType>(float_type(arg)))) + ", " : "") + "or None)";
  }
  static std::string compiled_choice(const table::Arg& arg, const table::ArgSpecialization& spec) {
    if (spec.none) return "None";
    return is_float_type(spec.type) ? dtype_name(static_cast<DType>(spec.type)) : IntRules::compiled_choice(arg, spec);
  }
  static std::string variant_text(const table::Arg& arg, const table::ArgSpecialization& spec) {
    if (spec.none) return "None";
    return is_float_type(spec.type) ? dtype_name(static_cast<DType>(spec.type)) : IntRules::variant_text(arg, spec);
  }
  static constexpr bool kPacksInPlace = true;
  static constexpr bool kOneFact = false;
};

// A host-side tensor descriptor. Facts: dtype slot x (index of its block_shape among the
// argument's blocks, or block_count for "no block given"). Expanded into a TMA map, shape and
// strides (sm_90 images), or Triton's decomposition (below), in the image's launch ABI.
template <>
struct ArgKindRules<table::ArgKind::tensordesc> {
  // The index of the descriptor's block_shape among the argument's compiled blocks, `block_count`
  // when it gives none (all zero: any variant's block), -1 when no variant has it.
  static int block_fact(const table::Arg& arg, const taot_tensordesc& desc) noexcept {
    bool given = false;
    for (std::uint8_t d = 0; d < arg.rank; ++d) given = given || desc.block_shape[d] != 0;
    if (!given) return arg.block_count;
    for (std::uint16_t b = 0; b < arg.block_count; ++b) {
      const std::uint32_t* block = arg.blocks + std::size_t{b} * arg.rank;
      bool equal = true;
      for (std::uint8_t d = 0; d < arg.rank; ++d)
        equal = equal && block[d] == static_cast<std::uint32_t>(desc.block_shape[d]);
      if (equal) return b;
    }
    return -1;
  }
  static const char* table_problem(const table::Arg& arg, const table::ArgSpecialization& spec) {
    const bool ok = arg.rank != 0 && arg.rank <= TAOT_TENSORDESC_MAX_RANK && arg.blocks != nullptr &&
                    spec.block < arg.block_count;
    return ok ? nullptr : "a bad block table";
  }
  static int fact_count(const table::Arg& arg) { return arg.type_count * (arg.block_count + 1); }
  static int fact_of(const table::Arg& arg, const DtypeSlots& slots, const taot_arg& value) noexcept {
    const taot_tensordesc* desc = value.tensordesc;
    if (desc == nullptr || desc->rank != arg.rank) return -1;
    const int slot = dtype_slot(slots, desc->dtype);
    const int block = block_fact(arg, *desc);
    return slot < 0 || block < 0 ? -1 : slot * (arg.block_count + 1) + block;
  }
  static bool accepts(const table::Arg& arg, const table::ArgSpecialization& spec, int fact) {
    const int blocks = arg.block_count + 1;
    const int block = fact % blocks;
    return spec.type == arg.types[fact / blocks] && (block == arg.block_count || block == spec.block);
  }
  static int score(const table::Arg&, const table::ArgSpecialization&) { return 0; }
  static std::string describe_value(const table::Arg& arg, const taot_arg& value) {
    const taot_tensordesc* desc = value.tensordesc;
    if (desc == nullptr) return "a null descriptor";
    std::string text = "a rank " + std::to_string(desc->rank) + " " + dtype_name(static_cast<DType>(desc->dtype)) +
                       " descriptor";
    if (desc->rank != arg.rank) return text + " (the argument has rank " + std::to_string(arg.rank) + ")";
    if (block_fact(arg, *desc) == arg.block_count) return text;
    std::uint32_t block[TAOT_TENSORDESC_MAX_RANK] = {};
    for (std::uint8_t d = 0; d < arg.rank; ++d) block[d] = static_cast<std::uint32_t>(desc->block_shape[d]);
    return text + " with block_shape " + dims_text(block, arg.rank);
  }
  static std::string compiled_choice(const table::Arg& arg, const table::ArgSpecialization& spec) {
    return std::string(dtype_name(static_cast<DType>(spec.type))) + " block " +
           dims_text(arg.blocks + std::size_t{spec.block} * arg.rank, arg.rank);
  }
  static std::string variant_text(const table::Arg& arg, const table::ArgSpecialization& spec) {
    return compiled_choice(arg, spec);
  }
  static constexpr bool kPacksInPlace = false;
  static constexpr bool kOneFact = false;
  static std::size_t param_count(const table::Arg& arg, const table::Image& image) {
    return tensordesc_param_count(arg.rank, image);
  }
  static Status pack(const table::Arg& arg, const taot_arg& value, const PackSite& site, void** params) {
    const table::TensordescMeta* meta = site.image.tensordesc_count > 0 ? &site.image.tensordescs[site.ordinal] : nullptr;
    return build_tensordesc_params(site.api, arg, *value.tensordesc, site.image.tensordesc_layout, meta,
                                   *site.expanded, params);
  }
};

// The rules of `kind` as a type, for code that calls several of them: `visit_arg_kind(kind,
// [&](auto tag) { using Rules = RulesOf<decltype(tag)>; ... })`.
template <class Tag>
using RulesOf = ArgKindRules<Tag::value>;

// Shorthands for one rule of an argument's kind.
// What is wrong with the table's entries for one argument and variant (a generator bug), or null.
inline const char* table_problem(const table::Arg& arg, const table::ArgSpecialization& spec) {
  return table::visit_arg_kind(arg.kind, [&](auto tag) { return RulesOf<decltype(tag)>::table_problem(arg, spec); });
}
inline int fact_count(const table::Arg& arg) {
  return table::visit_arg_kind(arg.kind, [&](auto tag) { return RulesOf<decltype(tag)>::fact_count(arg); });
}
inline int fact_of(const table::Arg& arg, const DtypeSlots& slots, const taot_arg& value) noexcept {
  return table::visit_arg_kind(arg.kind,
                               [&](auto tag) { return RulesOf<decltype(tag)>::fact_of(arg, slots, value); });
}
inline bool accepts(const table::Arg& arg, const table::ArgSpecialization& spec, int fact) {
  return table::visit_arg_kind(arg.kind, [&](auto tag) { return RulesOf<decltype(tag)>::accepts(arg, spec, fact); });
}
inline int specialization_score(const table::Arg& arg, const table::ArgSpecialization& spec) {
  return table::visit_arg_kind(arg.kind, [&](auto tag) { return RulesOf<decltype(tag)>::score(arg, spec); });
}
// "x_ptr = fp32 pointer 0x7f00 (16-byte aligned)"
inline std::string describe_value(const table::Arg& arg, const taot_arg& value) {
  return std::string(arg.name) + " = " +
         table::visit_arg_kind(arg.kind, [&](auto tag) { return RulesOf<decltype(tag)>::describe_value(arg, value); });
}
// What a variant was compiled to take, for miss messages: "fp32 align 16", "i32 any value".
inline std::string compiled_choice(const table::Arg& arg, const table::ArgSpecialization& spec) {
  return table::visit_arg_kind(arg.kind, [&](auto tag) { return RulesOf<decltype(tag)>::compiled_choice(arg, spec); });
}
// The same, short, for VariantInfo::describe: "fp32 align 16", "i32 %16", "fp32".
inline std::string variant_text(const table::Arg& arg, const table::ArgSpecialization& spec) {
  return table::visit_arg_kind(arg.kind, [&](auto tag) { return RulesOf<decltype(tag)>::variant_text(arg, spec); });
}
// Whether every value of the argument's kind shows the same fact (0), so that selection need not
// look at it.
inline bool has_one_fact(const table::Arg& arg) {
  return table::visit_arg_kind(arg.kind, [](auto tag) { return RulesOf<decltype(tag)>::kOneFact; });
}
// Whether values of the argument's kind are kernel parameters as they are (read in place from
// the caller's taot_arg), else they expand (pack()).
inline bool packs_in_place(const table::Arg& arg) {
  return table::visit_arg_kind(arg.kind, [](auto tag) { return RulesOf<decltype(tag)>::kPacksInPlace; });
}

}  // namespace taot::detail
