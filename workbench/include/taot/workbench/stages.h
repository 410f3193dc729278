// The compile stages a workbench command shows (Triton's IR stages and the cubin's SASS) and reading
// a stage's file, plain or gzip-compressed as `taot build` keeps them.
#pragma once

#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "taot/workbench/errors.h"

namespace taot::workbench {

// In compile order. ttir/ttgir are MLIR, llir LLVM IR, ptx PTX, sass the cubin disassembled.
enum class Stage { ttir, ttgir, llir, ptx, sass };

// Every stage, in compile order.
std::span<const Stage> all_stages() noexcept;
// "ttir", "ttgir", "llir", "ptx", "sass".
std::string_view stage_name(Stage stage) noexcept;
// The stage of a name as stage_name() writes it, or nothing.
std::optional<Stage> stage_from_name(std::string_view name) noexcept;
// "ttir, ttgir, llir, ptx, sass", for messages.
std::string stage_names();
// The stage a file holds, by its name: `k.ttgir`, `k.ttgir.gz`, `k.llir`, `k.ll`, `k.ptx(.gz)`,
// `k.cubin` (sass), `k.sass`; nothing for another name.
std::optional<Stage> stage_of_file(const std::filesystem::path& path) noexcept;

// The text of a file: plain, or gzip-compressed when its name ends in `.gz`. Fails naming the file
// when it cannot be read or decompressed (an `.xz` file, which older taot builds wrote, is named as
// such). Thread-safe.
Expected<std::string> read_text_file(const std::filesystem::path& path);

}  // namespace taot::workbench
