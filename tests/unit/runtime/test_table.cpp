// Builds the in-memory add-kernel table of test_table.h.
#include "test_table.h"

namespace taot::testing {
namespace {

const taot_dtype kPointerTypes[] = {TAOT_DTYPE_FP32, TAOT_DTYPE_FP16};
const taot_dtype kIntTypes[] = {TAOT_DTYPE_I32, TAOT_DTYPE_I64};
const std::int64_t kBlocks[] = {256, 1024};
const std::int64_t kWarps[] = {4, 8};

}  // namespace

AddKernelTable::AddKernelTable(std::uint32_t shared_bytes, bool drop_fp16_unaligned) {
  args_ = {{"x_ptr", table::ArgKind::pointer, kPointerTypes, 2, false, 1, nullptr, 0, false, false},
           {"y_ptr", table::ArgKind::pointer, kPointerTypes, 2, false, 1, nullptr, 0, false, false},
           {"output_ptr", table::ArgKind::pointer, kPointerTypes, 2, true, 1, nullptr, 0, false, false},
           {"n_elements", table::ArgKind::int_scalar, kIntTypes, 2, false, 0, nullptr, 0, false, false}};
  fields_ = {{"BLOCK_SIZE", table::FieldKind::int_value, kBlocks, nullptr, 2, 1, nullptr, false},
             {"num_warps", table::FieldKind::int_value, kWarps, nullptr, 2, 0, nullptr, false}};
  const std::pair<taot_dtype, std::uint8_t> n_choices[] = {
      {TAOT_DTYPE_I32, 16}, {TAOT_DTYPE_I32, 0}, {TAOT_DTYPE_I32, 1}, {TAOT_DTYPE_I64, 0}};
  for (taot_dtype dtype : kPointerTypes)
    for (int align_bits = 0; align_bits < 8; ++align_bits)
      for (auto [n_type, n_hint] : n_choices)
        for (std::uint16_t block = 0; block < 2; ++block)
          for (std::uint16_t warps = 0; warps < 2; ++warps) {
            VariantFacts fact{dtype,
                              {static_cast<std::uint8_t>(align_bits & 1 ? 16 : 0),
                               static_cast<std::uint8_t>(align_bits & 2 ? 16 : 0),
                               static_cast<std::uint8_t>(align_bits & 4 ? 16 : 0)},
                              n_type, n_hint, kBlocks[block], kWarps[warps]};
            if (drop_fp16_unaligned && dtype == TAOT_DTYPE_FP16 && align_bits != 7) continue;
            facts.push_back(fact);
            std::string id = std::string(dtype == TAOT_DTYPE_FP32 ? "fp32" : "fp16") + "_a" +
                             std::to_string(align_bits) + (n_type == TAOT_DTYPE_I64 ? "_i64" : "_i32") + "h" +
                             std::to_string(n_hint) + "_B" + std::to_string(kBlocks[block]) + "_w" +
                             std::to_string(kWarps[warps]);
            strings_.push_back(id);
            specializations_.push_back({{dtype, fact.align[0], 0, false}, {dtype, fact.align[1], 0, false}, {dtype, fact.align[2], 0, false},
                                        {n_type, n_hint, 0, false}});
            configs_.push_back({block, warps});
            params_.push_back(n_hint == 1 ? std::vector<std::uint16_t>{0, 1, 2}
                                          : std::vector<std::uint16_t>{0, 1, 2, 3});
            grid_code_.push_back(n_hint == 1 ? std::vector<table::GridInstr>{{table::GridOp::literal, 0, 1},
                                                                              {table::GridOp::literal, 0, kBlocks[block]},
                                                                              {table::GridOp::cdiv, 0, 0}}
                                             : std::vector<table::GridInstr>{{table::GridOp::arg, 3, 0},
                                                                              {table::GridOp::literal, 0, kBlocks[block]},
                                                                              {table::GridOp::cdiv, 0, 0}});
            grid_code_.push_back({{table::GridOp::literal, 0, 1}});
            const table::GridInstr* grid_x = grid_code_[grid_code_.size() - 2].data();
            const table::GridInstr* grid_one = grid_code_.back().data();
            cubins_.push_back(std::vector<unsigned char>(64, static_cast<unsigned char>(variants_.size())));
            const void* cubin80 = cubins_.back().data();
            cubins_.push_back(std::vector<unsigned char>(64, static_cast<unsigned char>(variants_.size() + 1)));
            const void* cubin90 = cubins_.back().data();
            const auto num_warps = static_cast<std::uint16_t>(kWarps[warps]);
            images_.push_back({
                {"sm_80", 80, false, table::Vendor::nvidia, 32, cubin80, 64, "add_kernel", shared_bytes, num_warps, 1, {1, 1, 1}, 0, 1, 0, 1, false, false, nullptr, 0, abi::TensordescLayout::triton_3_5, 0, 0, 0, 0, nullptr, nullptr, nullptr, nullptr},
                // The sm_90 images as Triton 3.9 compiles them (its CUDA 13 ptxas assembles sm_90).
                {"sm_90", 90, true, table::Vendor::nvidia, 32, cubin90, 64, "add_kernel", shared_bytes, num_warps, 1, {1, 1, 1}, 0, 1, 0, 1, false, false, nullptr, 0, abi::TensordescLayout::triton_3_7, 0, 0, 0, 0, "3.9.0", "13.4.59", nullptr, nullptr},
            });
            table::Variant variant{};
            variant.id = strings_.back().c_str();
            variant.specialization = specializations_.back().data();
            variant.config = configs_.back().data();
            variant.params = params_.back().data();
            variant.param_count = static_cast<std::uint16_t>(params_.back().size());
            variant.grid[0] = {grid_x, 3};
            variant.grid[1] = {grid_one, 1};
            variant.grid[2] = {grid_one, 1};
            variant.images = images_.back().data();
            variant.image_count = 2;
            variants_.push_back(variant);
          }
  kernel.library = "testlib";
  kernel.name = "add_kernel";
  kernel.grid_text[0] = "cdiv(n_elements, BLOCK_SIZE)";
  kernel.grid_text[1] = "1";
  kernel.grid_text[2] = "1";
  kernel.args = args_.data();
  kernel.arg_count = static_cast<std::uint16_t>(args_.size());
  kernel.fields = fields_.data();
  kernel.field_count = static_cast<std::uint16_t>(fields_.size());
  kernel.variants = variants_.data();
  kernel.variant_count = static_cast<std::uint32_t>(variants_.size());
}

}  // namespace taot::testing
