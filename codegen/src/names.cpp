// Identifier rules for generated code (see names.h).
#include "names.h"

#include <algorithm>
#include <string_view>
#include <unordered_set>

namespace taot::codegen::detail {
namespace {

const std::unordered_set<std::string_view>& reserved_words() {
  static const std::unordered_set<std::string_view> words = {
      // C++20 keywords and alternative tokens.
      "alignas", "alignof", "and", "and_eq", "asm", "auto", "bitand", "bitor", "bool", "break",
      "case", "catch", "char", "char8_t", "char16_t", "char32_t", "class", "compl", "concept",
      "const", "consteval", "constexpr", "constinit", "const_cast", "continue", "co_await",
      "co_return", "co_yield", "decltype", "default", "delete", "do", "double", "dynamic_cast",
      "else", "enum", "explicit", "export", "extern", "false", "float", "for", "friend", "goto",
      "if", "inline", "int", "long", "mutable", "namespace", "new", "noexcept", "not", "not_eq",
      "nullptr", "operator", "or", "or_eq", "private", "protected", "public", "register",
      "reinterpret_cast", "requires", "return", "short", "signed", "sizeof", "static",
      "static_assert", "static_cast", "struct", "switch", "template", "this", "thread_local",
      "throw", "true", "try", "typedef", "typeid", "typename", "union", "unsigned", "using",
      "virtual", "void", "volatile", "wchar_t", "while", "xor", "xor_eq",
      // C11 keywords C++ lacks.
      "restrict", "_Alignas", "_Alignof", "_Atomic", "_Bool", "_Complex", "_Generic",
      "_Imaginary", "_Noreturn", "_Static_assert", "_Thread_local",
      // Standard macros that would expand in a declaration.
      "NULL", "offsetof", "errno", "assert", "complex", "imaginary", "noreturn",
  };
  return words;
}

}  // namespace

bool is_identifier(std::string_view name) noexcept {
  if (name.empty()) return false;
  auto is_alpha = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; };
  if (!is_alpha(name[0])) return false;
  return std::all_of(name.begin() + 1, name.end(),
                     [&](char c) { return is_alpha(c) || (c >= '0' && c <= '9'); });
}

bool is_reserved_word(std::string_view name) noexcept { return reserved_words().count(name) != 0; }

std::string cpp_member_name(std::string_view name) {
  std::string member(name);
  if (is_reserved_word(name)) member += '_';
  return member;
}

}  // namespace taot::codegen::detail
