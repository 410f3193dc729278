// Spelling values as C/C++ source text (see literals.h).
#include "literals.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>

namespace taot::codegen::detail {
namespace {

bool is_plain(unsigned char byte) noexcept {
  return byte >= 0x20 && byte < 0x7f && byte != '"' && byte != '\\' && byte != '?';
}

void append_byte(std::string& out, unsigned char byte) {
  if (is_plain(byte)) {
    out.push_back(static_cast<char>(byte));
    return;
  }
  out.push_back('\\');
  out.push_back(static_cast<char>('0' + (byte >> 6)));
  out.push_back(static_cast<char>('0' + ((byte >> 3) & 7)));
  out.push_back(static_cast<char>('0' + (byte & 7)));
}

}  // namespace

std::string c_string_literal(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 2);
  out.push_back('"');
  for (char c : text) append_byte(out, static_cast<unsigned char>(c));
  out.push_back('"');
  return out;
}

std::string comment_text(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte == 0x7f) c = ' ';
    if (c == '\\') c = '/';
    const char previous = out.empty() ? ' ' : out.back();
    if ((c == '/' && previous == '*') || (c == '*' && previous == '/') || (c == '?' && previous == '?')) {
      out.push_back(' ');
    }
    out.push_back(c);
  }
  return out;
}

std::string bytes_literal(std::string_view bytes, std::string_view indent, std::size_t line_width) {
  std::string out;
  out.reserve(bytes.size() * 4 + (bytes.size() / line_width + 1) * (indent.size() + 3));
  std::size_t line_start = 0;
  auto open_line = [&] {
    if (!out.empty()) out.push_back('\n');
    line_start = out.size();
    out.append(indent);
    out.push_back('"');
  };
  open_line();
  for (char c : bytes) {
    if (out.size() - line_start >= line_width) {
      out.push_back('"');
      open_line();
    }
    append_byte(out, static_cast<unsigned char>(c));
  }
  out.push_back('"');
  return out;
}

std::string int64_literal(std::int64_t value) {
  // -9223372036854775808 is the negation of a literal too large for long long: spell it out.
  if (value == std::numeric_limits<std::int64_t>::min()) return "(-9223372036854775807 - 1)";
  return fmt::format("{}", value);
}

std::string uint64_literal(std::uint64_t value) {
  return value > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()) ? fmt::format("{}u", value)
                                                                                       : fmt::format("{}", value);
}

std::string double_literal(double value) {
  // fmt's shortest round-trip form; add ".0" where it would read as an integer.
  std::string text = fmt::format("{}", value);
  if (text.find_first_of(".eE") == std::string::npos) text += ".0";
  return text;
}

}  // namespace taot::codegen::detail
