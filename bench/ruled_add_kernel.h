// RuledAddKernel: vector_add's add_kernel with launch-time rules added, for the launch benchmarks.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "taot/runtime.h"

// vector_add's add_kernel table with rules added, as taot gen writes them for
//   heuristics: BLOCK_SIZE = 1024 if n_elements >= 1024 else 256
//               num_warps = 8 if BLOCK_SIZE > 1024 else 4
//   requires:   n_elements <= BLOCK_SIZE * 65535
//   a tuned table keyed by n_elements (1, 2, 4, ..., 2^19: 20 entries) giving BLOCK_SIZE only,
//   num_warps left to its heuristic;
// the table is for any device, or for the device named `table_device`; or, with `autotuned`, no
// tuned table and BLOCK_SIZE x num_warps tuned at the first launch of each n_elements (as
// @triton.autotune(key=["n_elements"]) over those configs).
class RuledAddKernel {
 public:
  explicit RuledAddKernel(const taot::table::KernelTable& base, bool autotuned = false, const char* table_device = "")
      : table_(base) {
    using taot::table::RuleOp;
    const auto field = [&](const char* name) {
      for (std::uint16_t f = 0; f < base.field_count; ++f)
        if (std::string(base.fields[f].name) == name) return f;
      std::fprintf(stderr, "vector_add has no config field %s\n", name);
      std::exit(1);
    };
    const auto value = [&](std::uint16_t f, std::int64_t wanted) {
      for (std::uint16_t i = 0; i < base.fields[f].value_count; ++i)
        if (base.fields[f].int_values[i] == wanted) return i;
      std::fprintf(stderr, "vector_add has no %s=%lld\n", base.fields[f].name, static_cast<long long>(wanted));
      std::exit(1);
    };
    const std::uint16_t block = field("BLOCK_SIZE"), warps = field("num_warps");
    block_code_ = {{RuleOp::arg, 3, 0, 0}, {RuleOp::lit, 0, 1024, 0}, {RuleOp::ge, 0, 0, 0}, {RuleOp::jz, 6, 0, 0},
                   {RuleOp::lit, 0, 1024, 0}, {RuleOp::jmp, 7, 0, 0}, {RuleOp::lit, 0, 256, 0}};
    warps_code_ = {{RuleOp::field, block, 0, 0}, {RuleOp::lit, 0, 1024, 0}, {RuleOp::gt, 0, 0, 0}, {RuleOp::jz, 6, 0, 0},
                   {RuleOp::lit, 0, 8, 0}, {RuleOp::jmp, 7, 0, 0}, {RuleOp::lit, 0, 4, 0}};
    requires_code_ = {{RuleOp::arg, 3, 0, 0}, {RuleOp::field, block, 0, 0}, {RuleOp::lit, 0, 65535, 0},
                      {RuleOp::mul, 0, 0, 0}, {RuleOp::le, 0, 0, 0}};
    heuristics_[0] = {block, {"1024 if n_elements >= 1024 else 256", block_code_.data(), 7}};
    heuristics_[1] = {warps, {"8 if BLOCK_SIZE > 1024 else 4", warps_code_.data(), 7}};
    requirement_ = {"n_elements <= BLOCK_SIZE * 65535", requires_code_.data(), 5};
    for (int e = 0; e < 20; ++e) {
      keys_.push_back(std::int64_t{1} << e);
      for (std::uint16_t f = 0; f < base.field_count; ++f)
        configs_.push_back(f == block ? value(block, keys_.back() >= 1024 ? 1024 : 256) : taot::table::kUnsetValue);
    }
    tuned_ = {table_device, "bench", taot::table::TuningMatch::nearest, 20, keys_.data(), configs_.data()};
    table_.heuristics = heuristics_;
    table_.heuristic_count = 2;
    table_.requirements = &requirement_;
    table_.requirement_count = 1;
    table_.tuning_key = kTuningKey;
    table_.tuning_key_count = 1;
    table_.tuned = &tuned_;
    table_.tuned_count = 1;
    if (autotuned) {
      table_.tuned = nullptr;
      table_.tuned_count = 0;
      autotune_fields_[0] = std::min(block, warps);
      autotune_fields_[1] = std::max(block, warps);
      autotune_ = {true, autotune_fields_, 2, nullptr, 0, nullptr, 0};
      table_.autotune = &autotune_;
    }
  }
  RuledAddKernel(const RuledAddKernel&) = delete;
  taot::Kernel& kernel() { return kernel_; }

 private:
  static constexpr taot::table::TuningKeyPart kTuningKey[] = {{3, false}};
  taot::table::KernelTable table_;
  std::vector<taot::table::RuleInstr> block_code_, warps_code_, requires_code_;
  taot::table::Heuristic heuristics_[2];
  taot::table::RuleProgram requirement_;
  std::vector<std::int64_t> keys_;
  std::vector<std::uint16_t> configs_;
  taot::table::TunedTable tuned_;
  std::uint16_t autotune_fields_[2] = {};
  taot::table::Autotune autotune_{};
  taot::Kernel kernel_{table_};
};
