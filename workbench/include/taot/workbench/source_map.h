// Which Python source line each line of a stage's text comes from, and the text with those source
// lines shown before the IR they produced. Locations per stage:
//   ttir, ttgir: MLIR `loc(...)` at the end of an op, `#locN = loc("file":line:col)` aliases, name,
//                call-site (inlined code) and fused locations;
//   llir:        `!dbg !N` -> `!DILocation(line: L, scope: ..., inlinedAt: ...)` -> the scope's `!DIFile`;
//   ptx:         `.loc FILE LINE COL` with `.file FILE "path"`, inlining from the comment LLVM writes
//                after it (`// standard.py:170:27 @[ kernel.py:17:39 ]`);
//   amdgcn:      the same directives, `.file FILE "directory" "name"` (maybe `md5 0x...` after),
//                and the comment after `.loc` starts with `;`;
//   sass:        nvdisasm's line-info comments (`//## File "path", line L [inlined at "path", line M]`).
// Inlined code has several frames; the one shown is the innermost outside Triton's own language
// library (triton/language/), so that a `tl.max` shows the kernel's line that called it.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "taot/workbench/stages.h"

namespace taot::workbench {

struct SourceLocation {
  std::string file;        // as the IR records it (taot build percent-encodes unusual characters)
  std::uint32_t line = 0;  // 1-based
  bool operator==(const SourceLocation&) const = default;
};

// Where a line comes from: innermost frame first, then the places it was inlined at; empty when
// the line has no location.
using SourceFrames = std::vector<SourceLocation>;

// The frames of every line of `text` (split at '\n'; one entry per line). Pure; never fails (what
// it cannot parse has no location).
std::vector<SourceFrames> line_locations(Stage stage, std::string_view text);

// The frame shown for a line: the innermost outside triton/language/, else the innermost. Null
// when `frames` is empty.
const SourceLocation* shown_frame(const SourceFrames& frames);

// nvdisasm's line-info comment for `frames` (`//## File "a", line 3 inlined at "b", line 9`), or
// `//## no source line` when empty; what line_locations(Stage::sass, ...) reads.
std::string sass_marker(const SourceFrames& frames);

// Reads the lines of Python source files, each file once. A file the IR names that is no longer
// there is looked for by its name among `fallbacks` (the kernel's source as the manifest names it:
// the library may have moved). Not thread-safe.
class SourceFiles {
 public:
  explicit SourceFiles(std::vector<std::filesystem::path> fallbacks = {});
  // Line `line` of `file` without its line break, or nothing when the file or line is not there.
  std::optional<std::string> line_text(const std::string& file, std::uint32_t line);

 private:
  const std::vector<std::string>* lines_of(const std::string& file);
  std::vector<std::filesystem::path> fallbacks_;
  std::map<std::string, std::optional<std::vector<std::string>>> cache_;
};

// nvdisasm -gp output (line info as lines of the PTX embedded in the cubin, `//## File
// ".nv_debug_ptx_txt", line N`) with each such comment replaced by sass_marker() of the frames of
// line N of `ptx`, the PTX the cubin was built from: source lines with their inlining, which
// nvdisasm -gi does not show for Triton's cubins. Pure.
std::string sass_with_ptx_locations(std::string_view sass, std::string_view ptx);

// `text` with a comment before each line whose shown frame differs from the last one shown:
// `// vector_add.py:12  x = tl.load(x_ptr + offsets, mask=in_bounds)` (`;` in LLVM IR and AMDGCN), indented as
// that line, ending `[standard.py:170]` when the innermost frame is another. For sass, nvdisasm's
// line-info comments are replaced by these.
std::string interleave_source(Stage stage, std::string_view text, SourceFiles& files);

// Splits at '\n' (a final line break ends the last line; it does not start an empty one).
std::vector<std::string_view> split_lines(std::string_view text);

}  // namespace taot::workbench
