// Which names the generated C and C++ code may use: identifier syntax, keywords, and the trailing
// underscore given to config fields and arguments that are keywords.
#pragma once

#include <string>
#include <string_view>

namespace taot::codegen::detail {

// [A-Za-z_][A-Za-z0-9_]*
bool is_identifier(std::string_view name) noexcept;

// True for the keywords of C++20 and C11, C++'s alternative tokens (and, or, ...) and the standard
// macros the generated code can see (NULL, offsetof, and C's bool/true/false): names that cannot
// be used as-is for a function, parameter or member in both languages.
bool is_reserved_word(std::string_view name) noexcept;

// The member or parameter name of a config field or argument: `name` itself, or `name` + "_" when
// `name` is a reserved word (a constexpr named `new` becomes the member `new_`).
std::string cpp_member_name(std::string_view name);

}  // namespace taot::codegen::detail
