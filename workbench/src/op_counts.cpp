// Counting operations per stage.
#include "taot/workbench/op_counts.h"

#include <cctype>

#include "taot/workbench/source_map.h"
#include "text_util.h"

namespace taot::workbench {

namespace {

bool is_lower_word(char c) { return std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) || c == '_'; }

// After an optional `%a, %b:2 = ` result list.
std::string_view after_results(std::string_view text) {
  if (!text.starts_with("%")) return text;
  const std::size_t equals = text.find(" = ");
  return equals == std::string_view::npos ? std::string_view() : text.substr(equals + 3);
}

// `dialect.op` (two or more lower-case words joined by dots) at the start of `text`, or "".
std::string_view dialect_op(std::string_view text) {
  std::size_t end = 0;
  bool dotted = false;
  while (end < text.size() && (is_lower_word(text[end]) || text[end] == '.')) {
    dotted = dotted || text[end] == '.';
    ++end;
  }
  const std::string_view op = text.substr(0, end);
  if (!dotted || op.front() == '.' || op.back() == '.' || std::isdigit(static_cast<unsigned char>(op.front())))
    return {};
  return op;
}

void count_mlir(std::string_view line, OpCounts& counts) {
  const std::string_view text = trim(line);
  if (text.empty() || text.front() == '#' || text.front() == '}' || text.front() == '^' || text.front() == ')' ||
      text.starts_with("//"))
    return;
  if (text.starts_with("module")) {
    ++counts["module"];
    return;
  }
  const std::string_view rest = after_results(text);
  if (rest.starts_with("\"")) {  // generic form: "tt.reduce"(%x) ...
    const std::size_t close = rest.find('"', 1);
    if (close != std::string_view::npos && !dialect_op(rest.substr(1, close - 1)).empty())
      ++counts[std::string(rest.substr(1, close - 1))];
    return;
  }
  const std::string_view op = dialect_op(rest);
  if (!op.empty()) ++counts[std::string(op)];
}

// LLVM IR: instructions inside `define ... {` bodies.
void count_llvm(const std::vector<std::string_view>& lines, OpCounts& counts) {
  bool in_function = false;
  for (std::string_view line : lines) {
    const std::string_view text = trim(line);
    if (line.starts_with("define ")) {
      in_function = true;
      continue;
    }
    if (!in_function) continue;
    if (line.starts_with("}")) {
      in_function = false;
      continue;
    }
    if (text.empty() || text.front() == ';') continue;
    std::string_view rest = after_results(text);
    const std::size_t space = rest.find(' ');
    const std::string_view first = rest.substr(0, space);
    if (first.empty() || first.back() == ':') continue;  // a block label
    for (std::string_view prefix : {"tail ", "musttail ", "notail "})
      if (rest.starts_with(prefix)) rest.remove_prefix(prefix.size());
    std::size_t end = 0;
    while (end < rest.size() && (std::islower(static_cast<unsigned char>(rest[end])) || rest[end] == '_')) ++end;
    const std::string op(rest.substr(0, end));
    if (op.empty()) continue;
    if (op != "call" && op != "invoke") {
      ++counts[op];
      continue;
    }
    const std::size_t callee = rest.find(" @");
    const std::size_t assembly = rest.find(" asm ");
    if (assembly != std::string_view::npos && (callee == std::string_view::npos || assembly < callee)) {
      ++counts[op + " asm"];
    } else if (callee != std::string_view::npos) {
      std::size_t name_end = callee + 2;
      while (name_end < rest.size() && rest[name_end] != '(' && rest[name_end] != ' ') ++name_end;
      ++counts[op + " " + std::string(rest.substr(callee + 1, name_end - callee - 1))];
    } else {
      ++counts[op];
    }
  }
}

// PTX: an instruction's opcode with its modifiers, predicate (`@%p1`, `@!%p1`) dropped.
void count_ptx(std::string_view line, OpCounts& counts) {
  std::string_view text = trim(line);
  if (const std::size_t comment = text.find("//"); comment != std::string_view::npos) text = trim(text.substr(0, comment));
  if (text.empty() || (!std::islower(static_cast<unsigned char>(text.front())) && text.front() != '@')) return;
  if (text.front() == '@') {
    const std::size_t space = text.find_first_of(" \t");
    if (space == std::string_view::npos) return;
    text = trim_left(text.substr(space));
  }
  std::size_t end = 0;
  while (end < text.size() && (is_lower_word(text[end]) || text[end] == '.')) ++end;
  if (end == 0 || (end < text.size() && text[end] == ':')) return;  // a label
  if (end < text.size() && !is_space(text[end]) && text[end] != ';') return;
  ++counts[std::string(text.substr(0, end))];
}

// SASS: `/*0040*/  @!P0 LDG.E.128 R16, desc[UR4][R2.64] ;`.
void count_sass(std::string_view line, OpCounts& counts) {
  std::string_view text = trim(line);
  if (!text.starts_with("/*")) return;
  const std::size_t close = text.find("*/");
  if (close == std::string_view::npos) return;
  text = trim_left(text.substr(close + 2));
  if (text.starts_with("{")) text = trim_left(text.substr(1));  // dual-issue pairs of older GPUs
  if (text.starts_with("@")) {
    const std::size_t space = text.find_first_of(" \t");
    if (space == std::string_view::npos) return;
    text = trim_left(text.substr(space));
  }
  std::size_t end = 0;
  while (end < text.size() && !is_space(text[end]) && text[end] != ';') ++end;
  if (end == 0 || !std::isupper(static_cast<unsigned char>(text.front()))) return;
  ++counts[std::string(text.substr(0, end))];
}

// AMDGCN: an instruction's mnemonic with its encoding suffix (`v_add_f32_e32`, `buffer_load_dword`,
// `s_waitcnt`); directives, labels, comments and the metadata block are no instructions.
void count_amdgcn(const std::vector<std::string_view>& lines, OpCounts& counts) {
  bool in_metadata = false;
  for (std::string_view line : lines) {
    std::string_view text = trim(line);
    if (text.starts_with(".amdgpu_metadata")) in_metadata = true;
    if (text.starts_with(".end_amdgpu_metadata")) in_metadata = false;
    if (in_metadata) continue;
    if (const std::size_t comment = text.find(';'); comment != std::string_view::npos) text = trim(text.substr(0, comment));
    if (text.empty() || !std::islower(static_cast<unsigned char>(text.front()))) continue;
    std::size_t end = 0;
    while (end < text.size() && is_lower_word(text[end])) ++end;
    if (end < text.size() && !is_space(text[end])) continue;  // a label (`name:`) or a dotted word
    ++counts[std::string(text.substr(0, end))];
  }
}

}  // namespace

OpCounts count_ops(Stage stage, std::string_view text) {
  OpCounts counts;
  const std::vector<std::string_view> lines = split_lines(text);
  switch (stage) {
    case Stage::ttir:
    case Stage::ttgir:
      for (std::string_view line : lines) count_mlir(line, counts);
      break;
    case Stage::llir: count_llvm(lines, counts); break;
    case Stage::ptx:
      for (std::string_view line : lines) count_ptx(line, counts);
      break;
    case Stage::sass:
      for (std::string_view line : lines) count_sass(line, counts);
      break;
    case Stage::amdgcn: count_amdgcn(lines, counts); break;
  }
  return counts;
}

std::vector<OpCountRow> side_by_side(const OpCounts& a, const OpCounts& b) {
  std::vector<OpCountRow> rows;
  auto left = a.begin();
  auto right = b.begin();
  while (left != a.end() || right != b.end()) {
    if (right == b.end() || (left != a.end() && left->first < right->first)) {
      rows.push_back({left->first, left->second, 0});
      ++left;
    } else if (left == a.end() || right->first < left->first) {
      rows.push_back({right->first, 0, right->second});
      ++right;
    } else {
      rows.push_back({left->first, left->second, right->second});
      ++left;
      ++right;
    }
  }
  return rows;
}

}  // namespace taot::workbench
