// The compile stages a workbench command shows (Triton's IR stages, NVIDIA's PTX and the cubin's
// SASS, AMD's GCN assembly), whose images have each, and reading a stage's file, plain or
// gzip-compressed as `taot build` keeps them.
#pragma once

#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "taot/kernel_table.h"
#include "taot/workbench/errors.h"

namespace taot::workbench {

// In compile order: ttir/ttgir are MLIR and llir LLVM IR, for every image; then NVIDIA's ptx (PTX)
// and sass (the cubin disassembled); then AMD's amdgcn (the GCN assembly the .hsaco is made from).
enum class Stage { ttir, ttgir, llir, ptx, sass, amdgcn };

// Every stage, in the order above.
std::span<const Stage> all_stages() noexcept;
// "ttir", "ttgir", "llir", "ptx", "sass", "amdgcn".
std::string_view stage_name(Stage stage) noexcept;
// The stage of a name as stage_name() writes it, or nothing.
std::optional<Stage> stage_from_name(std::string_view name) noexcept;
// "ttir, ttgir, llir, ptx, sass, amdgcn", for messages.
std::string stage_names();
// The same as a list, for a command line option's choices.
std::vector<std::string> stage_name_list();

// Whether images of `vendor` have `stage`: ttir, ttgir and llir every image; ptx and sass NVIDIA's;
// amdgcn AMD's.
bool stage_of_vendor(Stage stage, table::Vendor vendor) noexcept;
// The stages of `vendor`'s images, for messages: "ttir, ttgir, llir, ptx, sass" (NVIDIA) or
// "ttir, ttgir, llir, amdgcn" (AMD).
std::string stage_names(table::Vendor vendor);
// "NVIDIA", "AMD", for messages.
std::string_view vendor_title(table::Vendor vendor) noexcept;

// The stage a file holds, by its name: `k.ttgir`, `k.ttgir.gz`, `k.llir`, `k.ll`, `k.ptx(.gz)`,
// `k.amdgcn(.gz)`, `k.cubin` (sass), `k.sass`; nothing for another name.
std::optional<Stage> stage_of_file(const std::filesystem::path& path) noexcept;

// The text of a file: plain, or gzip-compressed when its name ends in `.gz`. Fails naming the file
// when it cannot be read or decompressed (an `.xz` file, which older taot builds wrote, is named as
// such). Thread-safe.
Expected<std::string> read_text_file(const std::filesystem::path& path);

}  // namespace taot::workbench
