// Small string helpers shared by the workbench's parsers.
#pragma once

#include <string_view>

namespace taot::workbench {

inline bool is_space(char c) noexcept { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }
inline std::string_view trim_left(std::string_view text) noexcept {
  while (!text.empty() && is_space(text.front())) text.remove_prefix(1);
  return text;
}
inline std::string_view trim_right(std::string_view text) noexcept {
  while (!text.empty() && is_space(text.back())) text.remove_suffix(1);
  return text;
}
inline std::string_view trim(std::string_view text) noexcept { return trim_left(trim_right(text)); }

}  // namespace taot::workbench
