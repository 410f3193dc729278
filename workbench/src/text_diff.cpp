// Myers' diff (linear space) and unified output.
#include "taot/workbench/text_diff.h"

#include <fmt/format.h>

#include <algorithm>
#include <unordered_map>

#include "taot/workbench/source_map.h"
#include "text_util.h"

namespace taot::workbench {

namespace {

// Marks the lines of a that are removed and the lines of b that are inserted, with the middle-snake
// recursion of Myers (1986), section 4b, over lines interned as integers.
class Differ {
 public:
  Differ(const std::vector<int>& a, const std::vector<int>& b)
      : a_(a), b_(b), removed_(a.size(), false), inserted_(b.size(), false) {
    const std::size_t size = a.size() + b.size() + 3;
    forward_.resize(2 * size + 1);
    backward_.resize(2 * size + 1);
    offset_ = static_cast<std::ptrdiff_t>(size);
  }

  void run() { compare(0, static_cast<std::ptrdiff_t>(a_.size()), 0, static_cast<std::ptrdiff_t>(b_.size())); }
  const std::vector<bool>& removed() const { return removed_; }
  const std::vector<bool>& inserted() const { return inserted_; }

 private:
  struct Snake {
    std::ptrdiff_t x0, y0, x1, y1;  // the snake runs from (x0, y0) to (x1, y1), both relative
  };

  void compare(std::ptrdiff_t a_low, std::ptrdiff_t a_high, std::ptrdiff_t b_low, std::ptrdiff_t b_high) {
    while (a_low < a_high && b_low < b_high && a_[a_low] == b_[b_low]) ++a_low, ++b_low;
    while (a_low < a_high && b_low < b_high && a_[a_high - 1] == b_[b_high - 1]) --a_high, --b_high;
    if (a_low == a_high) {
      for (std::ptrdiff_t y = b_low; y < b_high; ++y) inserted_[y] = true;
      return;
    }
    if (b_low == b_high) {
      for (std::ptrdiff_t x = a_low; x < a_high; ++x) removed_[x] = true;
      return;
    }
    const Snake snake = middle_snake(a_low, a_high, b_low, b_high);
    const bool progress = !(snake.x0 == 0 && snake.y0 == 0 && snake.x1 == a_high - a_low && snake.y1 == b_high - b_low) &&
                          !(snake.x0 == 0 && snake.y0 == 0 && snake.x1 == 0 && snake.y1 == 0) &&
                          !(snake.x0 == a_high - a_low && snake.y0 == b_high - b_low);
    if (!progress) {  // cannot happen after trimming; kept so that recursion always ends
      for (std::ptrdiff_t x = a_low; x < a_high; ++x) removed_[x] = true;
      for (std::ptrdiff_t y = b_low; y < b_high; ++y) inserted_[y] = true;
      return;
    }
    compare(a_low, a_low + snake.x0, b_low, b_low + snake.y0);
    compare(a_low + snake.x1, a_high, b_low + snake.y1, b_high);
  }

  std::ptrdiff_t& forward(std::ptrdiff_t k) { return forward_[static_cast<std::size_t>(k + offset_)]; }
  std::ptrdiff_t& backward(std::ptrdiff_t k) { return backward_[static_cast<std::size_t>(k + offset_)]; }

  // The middle snake of an optimal path through a[a_low, a_high) x b[b_low, b_high). Forward
  // diagonals are k = x - y; backward ones c = (n - x) - (m - y) in the reversed problem, with
  // furthest reaches counted from the end.
  Snake middle_snake(std::ptrdiff_t a_low, std::ptrdiff_t a_high, std::ptrdiff_t b_low, std::ptrdiff_t b_high) {
    const std::ptrdiff_t n = a_high - a_low;
    const std::ptrdiff_t m = b_high - b_low;
    const std::ptrdiff_t delta = n - m;
    const bool odd = (delta & 1) != 0;
    const std::ptrdiff_t limit = (n + m + 1) / 2;
    forward(1) = 0;
    backward(1) = 0;
    for (std::ptrdiff_t d = 0; d <= limit; ++d) {
      for (std::ptrdiff_t k = -d; k <= d; k += 2) {
        std::ptrdiff_t x = (k == -d || (k != d && forward(k - 1) < forward(k + 1))) ? forward(k + 1) : forward(k - 1) + 1;
        std::ptrdiff_t y = x - k;
        const std::ptrdiff_t x0 = x, y0 = y;
        while (x < n && y < m && a_[a_low + x] == b_[b_low + y]) ++x, ++y;
        forward(k) = x;
        const std::ptrdiff_t c = delta - k;
        if (odd && c >= -(d - 1) && c <= d - 1 && forward(k) + backward(c) >= n) return {x0, y0, x, y};
      }
      for (std::ptrdiff_t c = -d; c <= d; c += 2) {
        std::ptrdiff_t u = (c == -d || (c != d && backward(c - 1) < backward(c + 1))) ? backward(c + 1) : backward(c - 1) + 1;
        std::ptrdiff_t v = u - c;
        const std::ptrdiff_t u0 = u, v0 = v;
        while (u < n && v < m && a_[a_high - 1 - u] == b_[b_high - 1 - v]) ++u, ++v;
        backward(c) = u;
        const std::ptrdiff_t k = delta - c;
        if (!odd && k >= -d && k <= d && forward(k) + backward(c) >= n) return {n - u, m - v, n - u0, m - v0};
      }
    }
    return {0, 0, 0, 0};  // unreachable: the searches meet by d = ceil((n + m) / 2)
  }

  const std::vector<int>& a_;
  const std::vector<int>& b_;
  std::vector<bool> removed_;
  std::vector<bool> inserted_;
  std::vector<std::ptrdiff_t> forward_;
  std::vector<std::ptrdiff_t> backward_;
  std::ptrdiff_t offset_ = 0;
};

std::string hunk_range(std::size_t start, std::size_t count) {
  // diff -u: 1-based first line; an empty range names the line before it.
  if (count == 1) return std::to_string(start + 1);
  return fmt::format("{},{}", count == 0 ? start : start + 1, count);
}

// Removes every ` loc(...)` (balanced) from an MLIR line.
std::string strip_mlir_locs(std::string_view line) {
  std::string out;
  std::size_t at = 0;
  while (true) {
    const std::size_t found = line.find(" loc(", at);
    if (found == std::string_view::npos) break;
    out.append(line.substr(at, found - at));
    std::size_t index = found + 5;
    int depth = 1;
    bool in_string = false;
    for (; index < line.size() && depth > 0; ++index) {
      const char c = line[index];
      if (c == '"' && line[index - 1] != '\\') in_string = !in_string;
      if (in_string) continue;
      if (c == '(') ++depth;
      if (c == ')') --depth;
    }
    at = index;
  }
  out.append(line.substr(at));
  return out;
}

}  // namespace

std::vector<Edit> diff_lines(const std::vector<std::string_view>& a, const std::vector<std::string_view>& b) {
  std::unordered_map<std::string_view, int> ids;
  auto intern = [&ids](const std::vector<std::string_view>& lines) {
    std::vector<int> interned;
    interned.reserve(lines.size());
    for (std::string_view line : lines) interned.push_back(ids.emplace(line, static_cast<int>(ids.size())).first->second);
    return interned;
  };
  const std::vector<int> a_ids = intern(a);
  const std::vector<int> b_ids = intern(b);
  Differ differ(a_ids, b_ids);
  differ.run();
  std::vector<Edit> edits;
  std::size_t x = 0, y = 0;
  while (x < a.size() || y < b.size()) {
    if (x < a.size() && differ.removed()[x]) {
      edits.push_back({EditKind::remove, x++, y});
    } else if (y < b.size() && differ.inserted()[y]) {
      edits.push_back({EditKind::insert, x, y++});
    } else {
      edits.push_back({EditKind::keep, x++, y++});
    }
  }
  return edits;
}

std::string unified_diff(std::string_view a, std::string_view b, std::string_view a_name, std::string_view b_name,
                         std::size_t context) {
  const std::vector<std::string_view> a_lines = split_lines(a);
  const std::vector<std::string_view> b_lines = split_lines(b);
  const std::vector<Edit> edits = diff_lines(a_lines, b_lines);
  std::string out;
  std::size_t index = 0;
  while (index < edits.size()) {
    // The next change, and the hunk around it: changes closer than 2 * context lines join.
    while (index < edits.size() && edits[index].kind == EditKind::keep) ++index;
    if (index == edits.size()) break;
    const std::size_t start = index >= context ? index - context : 0;
    std::size_t end = index;
    std::size_t last_change = index;
    while (end < edits.size()) {
      if (edits[end].kind != EditKind::keep) last_change = end;
      if (end - last_change > 2 * context) break;
      ++end;
    }
    end = std::min(edits.size(), last_change + context + 1);
    std::size_t a_count = 0, b_count = 0;
    for (std::size_t at = start; at < end; ++at) {
      if (edits[at].kind != EditKind::insert) ++a_count;
      if (edits[at].kind != EditKind::remove) ++b_count;
    }
    if (out.empty()) out += fmt::format("--- {}\n+++ {}\n", a_name, b_name);
    out += fmt::format("@@ -{} +{} @@\n", hunk_range(edits[start].a_index, a_count), hunk_range(edits[start].b_index, b_count));
    for (std::size_t at = start; at < end; ++at) {
      const Edit& edit = edits[at];
      switch (edit.kind) {
        case EditKind::keep: out += " "; out += a_lines[edit.a_index]; break;
        case EditKind::remove: out += "-"; out += a_lines[edit.a_index]; break;
        case EditKind::insert: out += "+"; out += b_lines[edit.b_index]; break;
      }
      out += "\n";
    }
    index = end;
  }
  return out;
}

std::string without_locations(Stage stage, std::string_view text) {
  std::string out;
  out.reserve(text.size());
  bool in_debug_section = false;
  for (std::string_view line : split_lines(text)) {
    const std::string_view trimmed = trim(line);
    switch (stage) {
      case Stage::ttir:
      case Stage::ttgir:
        if (trimmed.starts_with("#loc")) continue;
        out += strip_mlir_locs(line);
        break;
      case Stage::llir: {
        if (line.starts_with("!") && line.find("!DI") != std::string_view::npos) continue;
        std::string kept(line);
        for (std::size_t at = kept.find(", !dbg !"); at != std::string::npos; at = kept.find(", !dbg !", at)) {
          std::size_t end = at + 8;
          while (end < kept.size() && std::isdigit(static_cast<unsigned char>(kept[end]))) ++end;
          kept.erase(at, end - at);
        }
        for (std::size_t at = kept.find(" !dbg !"); at != std::string::npos; at = kept.find(" !dbg !", at)) {
          std::size_t end = at + 7;
          while (end < kept.size() && std::isdigit(static_cast<unsigned char>(kept[end]))) ++end;
          kept.erase(at, end - at);
        }
        out += kept;
        break;
      }
      case Stage::ptx:
        if (trimmed.starts_with(".section") && trimmed.find(".debug_") != std::string_view::npos) {
          in_debug_section = trimmed.find('}') == std::string_view::npos;
          continue;
        }
        if (in_debug_section) {
          if (trimmed.starts_with("}")) in_debug_section = false;
          continue;
        }
        if (trimmed.starts_with(".loc") || trimmed.starts_with(".file") || trimmed.starts_with("$L__func_begin") ||
            trimmed.starts_with("$L__func_end") || trimmed.starts_with("$L__tmp"))
          continue;
        {
          // `.loc` comments after instructions name the source too: `// vector_add.py:12:16`.
          std::string_view kept = line;
          if (const std::size_t comment = kept.find("// "); comment != std::string_view::npos &&
                                                            kept.find(".py:", comment) != std::string_view::npos)
            kept = trim_right(kept.substr(0, comment));
          out += kept;
        }
        break;
      case Stage::amdgcn:
        // Debug sections run to the next section; `.Ltmp` labels only mark where locations change.
        if (trimmed.starts_with(".section") || trimmed.starts_with(".text") || trimmed.starts_with(".data"))
          in_debug_section = trimmed.starts_with(".section") && trimmed.find(".debug_") != std::string_view::npos;
        if (in_debug_section) continue;
        if (trimmed.starts_with(".loc\t") || trimmed.starts_with(".loc ") || trimmed.starts_with(".file") ||
            trimmed.starts_with(".Ltmp"))
          continue;
        out += line;
        break;
      case Stage::sass: {
        if (trimmed.starts_with("//##")) continue;
        std::string_view kept = line;
        if (trimmed.starts_with("/*")) {
          const std::size_t close = trimmed.find("*/");
          if (close != std::string_view::npos) kept = trim_left(trimmed.substr(close + 2));
          out += "        ";
        }
        // a trailing `/* 0x... */` encoding comment (nvdisasm -hex) goes too
        if (const std::size_t encoding = kept.find("/* 0x"); encoding != std::string_view::npos)
          kept = trim_right(kept.substr(0, encoding));
        out += kept;
        break;
      }
    }
    out += "\n";
  }
  return out;
}

}  // namespace taot::workbench
