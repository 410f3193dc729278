// Spelling values as C/C++ source text: string literals, comment text, numbers, embedded bytes.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace taot::codegen::detail {

// A double-quoted string literal valid in C99 and C++17/20 with any bytes in `text`: printable
// ASCII stays as is, except `"`, `\` and `?` (no trigraphs); every other byte is a 3-digit octal
// escape (an escape never swallows a following digit).
std::string c_string_literal(std::string_view text);

// `text` made safe inside a // or /* */ comment in C and C++ alike: control characters become
// spaces, "/*", "*/" and "??" (a trigraph in C99) get a space inside, and backslashes (which
// could splice the next line into a // comment) become slashes.
std::string comment_text(std::string_view text);

// `bytes` as a sequence of adjacent string literals, one per line of at most about
// `line_width` characters, each line starting with `indent`; no trailing newline. The literal's
// array holds `bytes` plus the terminating NUL.
std::string bytes_literal(std::string_view bytes, std::string_view indent, std::size_t line_width = 100);

// Integer and floating-point literals that read back as exactly the value given.
std::string int64_literal(std::int64_t value);
std::string uint64_literal(std::uint64_t value);
std::string double_literal(double value);

}  // namespace taot::codegen::detail
