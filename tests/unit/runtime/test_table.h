// A vector-add-like kernel table built in memory, shaped like what taot gen writes, for tests.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "taot/kernel_table.h"

namespace taot::testing {

// The variant set: x/y/out pointers in {fp32, fp16} (one dtype for all three) x each alignment
// {16, any}; n as (i32 %16), (i32 none), (i32 ==1), (i64 none); BLOCK {256, 1024} (default 1024)
// x num_warps {4, 8} (default 4). Grid: cdiv(n, BLOCK). Images for sm_80 and sm_90 (arch-specific).
struct AddKernelTable {
  struct VariantFacts {
    taot_dtype dtype;
    std::uint8_t align[3];
    taot_dtype n_type;
    std::uint8_t n_hint;
    std::int64_t block;
    std::int64_t num_warps;
  };

  explicit AddKernelTable(std::uint32_t shared_bytes = 1024, bool drop_fp16_unaligned = false);
  AddKernelTable(const AddKernelTable&) = delete;

  // Applies `edit` to the image of every variant and target (num_ctas, scratch sizes, ...).
  template <class Edit>
  void edit_images(Edit edit) {
    for (auto& images : images_)
      for (table::Image& image : images) edit(image);
  }

  // Calls edit(variant) for every variant (before a Kernel is made from the table).
  template <class Edit>
  void edit_variants(Edit edit) {
    for (table::Variant& variant : variants_) edit(variant);
  }

  table::KernelTable kernel{};
  std::vector<VariantFacts> facts;  // per variant, in table order

 private:
  std::deque<std::string> strings_;
  std::deque<std::vector<table::ArgSpecialization>> specializations_;
  std::deque<std::vector<std::uint16_t>> configs_;
  std::deque<std::vector<std::uint16_t>> params_;
  std::deque<std::vector<table::GridInstr>> grid_code_;
  std::deque<std::vector<table::Image>> images_;
  std::deque<std::vector<unsigned char>> cubins_;
  std::vector<table::Variant> variants_;
  std::vector<table::Arg> args_;
  std::vector<table::ConfigField> fields_;
};

}  // namespace taot::testing
