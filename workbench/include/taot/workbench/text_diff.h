// Line diffs: Myers' O((N+M)D) algorithm in its linear-space form (the middle-snake recursion), and
// a unified diff of two texts as `diff -u` prints it. Also dropping location noise from a stage's
// text before diffing two variants (their locations and addresses differ where the code does not).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "taot/workbench/stages.h"

namespace taot::workbench {

enum class EditKind { keep, remove, insert };

// One line of an edit script: keep line a_index (== line b_index), remove line a_index of a, or
// insert line b_index of b.
struct Edit {
  EditKind kind = EditKind::keep;
  std::size_t a_index = 0;
  std::size_t b_index = 0;
};

// A shortest edit script turning `a` into `b` (removals before insertions within a change). Pure.
std::vector<Edit> diff_lines(const std::vector<std::string_view>& a, const std::vector<std::string_view>& b);

// The unified diff of two texts with `context` lines around each change, headed `--- a_name` and
// `+++ b_name`; empty when the texts have the same lines. Pure.
std::string unified_diff(std::string_view a, std::string_view b, std::string_view a_name, std::string_view b_name,
                         std::size_t context = 3);

// `text` without what makes the same code differ between two builds: MLIR `loc(...)` and `#loc`
// aliases, LLVM `!dbg` attachments and debug metadata, PTX and AMDGCN `.loc`/`.file` lines and
// debug sections (AMDGCN's `.Ltmp` labels too), SASS line-info comments and instruction addresses.
// Pure.
std::string without_locations(Stage stage, std::string_view text);

}  // namespace taot::workbench
