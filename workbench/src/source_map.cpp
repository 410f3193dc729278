// Source locations per stage, and interleaving source lines with a stage's text.
#include "taot/workbench/source_map.h"

#include <fmt/format.h>

#include <cctype>
#include <charconv>
#include <fstream>
#include <functional>
#include <unordered_map>

#include "text_util.h"

namespace taot::workbench {

namespace {

using Locations = std::vector<SourceFrames>;

std::optional<std::uint32_t> parse_number(std::string_view text, std::size_t& at) {
  std::uint32_t value = 0;
  auto [end, error] = std::from_chars(text.data() + at, text.data() + text.size(), value);
  if (error != std::errc()) return std::nullopt;
  at = static_cast<std::size_t>(end - text.data());
  return value;
}

// A double-quoted string starting at `at` (which is the quote); MLIR/LLVM escapes `\"`, `\\` and
// `\XX` (hex) are decoded.
std::optional<std::string> parse_quoted(std::string_view text, std::size_t& at) {
  if (at >= text.size() || text[at] != '"') return std::nullopt;
  std::string value;
  for (std::size_t index = at + 1; index < text.size(); ++index) {
    const char c = text[index];
    if (c == '"') {
      at = index + 1;
      return value;
    }
    if (c == '\\' && index + 1 < text.size()) {
      const char next = text[index + 1];
      if ((next == '"' || next == '\\')) {
        value += next;
        ++index;
        continue;
      }
      if (index + 2 < text.size() && std::isxdigit(static_cast<unsigned char>(next)) &&
          std::isxdigit(static_cast<unsigned char>(text[index + 2]))) {
        value += static_cast<char>(std::stoi(std::string(text.substr(index + 1, 2)), nullptr, 16));
        index += 2;
        continue;
      }
    }
    value += c;
  }
  return std::nullopt;
}

// ---- MLIR ----

class MlirLocations {
 public:
  explicit MlirLocations(const std::vector<std::string_view>& lines) {
    for (std::string_view line : lines) {
      if (!line.starts_with("#loc")) continue;
      const std::size_t equals = line.find(" = loc(");
      if (equals == std::string_view::npos) continue;
      const std::string_view name = line.substr(0, equals);
      const std::string_view body = line.substr(equals + 7);
      if (body.empty() || body.back() != ')') continue;
      aliases_[std::string(name)] = body.substr(0, body.size() - 1);
    }
  }

  // The location of an op line: the `loc(...)` that ends it.
  SourceFrames of_line(std::string_view line) {
    line = trim_right(line);
    if (line.empty() || line.back() != ')' || trim(line).starts_with("#")) return {};
    // Walk back from the final ')' to its '(' and check that "loc" precedes it.
    int depth = 0;
    bool in_string = false;
    for (std::size_t index = line.size(); index-- > 0;) {
      const char c = line[index];
      if (c == '"' && (index == 0 || line[index - 1] != '\\')) in_string = !in_string;
      if (in_string) continue;
      if (c == ')') ++depth;
      if (c == '(' && --depth == 0) {
        if (index < 3 || line.substr(index - 3, 3) != "loc") return {};
        std::string_view body = line.substr(index + 1, line.size() - index - 2);
        std::size_t at = 0;
        return parse(body, at, 0);
      }
    }
    return {};
  }

 private:
  static constexpr int kMaxDepth = 64;

  SourceFrames alias(const std::string& name, int depth) {
    if (auto found = resolved_.find(name); found != resolved_.end()) return found->second;
    auto body = aliases_.find(name);
    if (body == aliases_.end() || depth > kMaxDepth) return {};
    std::size_t at = 0;
    SourceFrames frames = parse(body->second, at, depth + 1);
    resolved_[name] = frames;
    return frames;
  }

  static void skip_spaces(std::string_view text, std::size_t& at) {
    while (at < text.size() && text[at] == ' ') ++at;
  }

  // Skips a balanced bracketed group starting at `at` (which is the opening bracket).
  static void skip_group(std::string_view text, std::size_t& at, char open, char close) {
    int depth = 0;
    for (; at < text.size(); ++at) {
      if (text[at] == open) ++depth;
      if (text[at] == close && --depth == 0) {
        ++at;
        return;
      }
    }
  }

  // One location expression at `at`: #alias, "file":L:C, "name"(loc), callsite(callee at caller),
  // fused[a, b, ...] (fused<...>[...]) or unknown.
  SourceFrames parse(std::string_view text, std::size_t& at, int depth) {
    if (depth > kMaxDepth) return {};
    skip_spaces(text, at);
    if (at >= text.size()) return {};
    if (text[at] == '#') {
      std::size_t end = at + 1;
      while (end < text.size() && (std::isalnum(static_cast<unsigned char>(text[end])) || text[end] == '_')) ++end;
      const std::string name(text.substr(at, end - at));
      at = end;
      return alias(name, depth);
    }
    if (text[at] == '"') {
      std::optional<std::string> quoted = parse_quoted(text, at);
      if (!quoted) return {};
      if (at < text.size() && text[at] == ':') {
        ++at;
        std::optional<std::uint32_t> line = parse_number(text, at);
        if (at < text.size() && text[at] == ':') {
          ++at;
          (void)parse_number(text, at);
        }
        if (!line || *line == 0) return {};
        return {SourceLocation{*quoted, *line}};
      }
      if (at < text.size() && text[at] == '(') {
        ++at;
        SourceFrames inner = parse(text, at, depth + 1);
        skip_spaces(text, at);
        if (at < text.size() && text[at] == ')') ++at;
        return inner;
      }
      return {};  // a name without a child location
    }
    if (text.substr(at).starts_with("callsite(")) {
      at += 9;
      SourceFrames frames = parse(text, at, depth + 1);
      skip_spaces(text, at);
      if (text.substr(at).starts_with("at ")) {
        at += 3;
        SourceFrames caller = parse(text, at, depth + 1);
        frames.insert(frames.end(), caller.begin(), caller.end());
      }
      skip_spaces(text, at);
      if (at < text.size() && text[at] == ')') ++at;
      return frames;
    }
    if (text.substr(at).starts_with("fused")) {
      at += 5;
      if (at < text.size() && text[at] == '<') skip_group(text, at, '<', '>');
      if (at >= text.size() || text[at] != '[') return {};
      ++at;
      SourceFrames first;
      while (at < text.size()) {
        SourceFrames part = parse(text, at, depth + 1);
        if (first.empty()) first = std::move(part);
        skip_spaces(text, at);
        if (at < text.size() && text[at] == ',') {
          ++at;
          continue;
        }
        if (at < text.size() && text[at] == ']') ++at;
        break;
      }
      return first;
    }
    return {};  // unknown
  }

  std::unordered_map<std::string, std::string_view> aliases_;
  std::unordered_map<std::string, SourceFrames> resolved_;
};

Locations mlir_locations(const std::vector<std::string_view>& lines) {
  MlirLocations parser(lines);
  Locations locations;
  locations.reserve(lines.size());
  for (std::string_view line : lines) locations.push_back(parser.of_line(line));
  return locations;
}

// ---- LLVM IR ----

// The value after `key: ` in a metadata node's field list, where key is a whole field name.
std::optional<std::string_view> field(std::string_view node, std::string_view key) {
  for (std::size_t at = node.find(key); at != std::string_view::npos; at = node.find(key, at + 1)) {
    const bool starts_field = at > 0 && (node[at - 1] == '(' || node[at - 1] == ' ');
    const std::size_t value = at + key.size();
    if (!starts_field || value + 1 >= node.size() || node[value] != ':' || node[value + 1] != ' ') continue;
    std::string_view rest = node.substr(value + 2);
    if (!rest.empty() && rest.front() == '"') return rest;
    const std::size_t end = rest.find_first_of(",)");
    return rest.substr(0, end);
  }
  return std::nullopt;
}

std::optional<std::uint32_t> number_field(std::string_view node, std::string_view key) {
  std::optional<std::string_view> value = field(node, key);
  if (!value) return std::nullopt;
  std::size_t at = 0;
  return parse_number(*value, at);
}

std::optional<std::string> string_field(std::string_view node, std::string_view key) {
  std::optional<std::string_view> value = field(node, key);
  if (!value) return std::nullopt;
  std::size_t at = 0;
  return parse_quoted(*value, at);
}

// "!12" -> "12".
std::optional<std::string_view> reference(std::optional<std::string_view> value) {
  if (!value || value->size() < 2 || value->front() != '!') return std::nullopt;
  return value->substr(1);
}

Locations llvm_locations(const std::vector<std::string_view>& lines) {
  std::unordered_map<std::string_view, std::string_view> nodes;  // "12" -> "!DILocation(...)"
  for (std::string_view line : lines) {
    if (!line.starts_with("!")) continue;
    const std::size_t equals = line.find(" = ");
    if (equals == std::string_view::npos) continue;
    std::string_view body = line.substr(equals + 3);
    if (body.starts_with("distinct ")) body = body.substr(9);
    nodes[line.substr(1, equals - 1)] = body;
  }
  std::unordered_map<std::string_view, std::optional<std::string>> file_of_scope;
  std::function<std::optional<std::string>(std::string_view, int)> scope_file =
      [&](std::string_view id, int depth) -> std::optional<std::string> {
    if (depth > 64) return std::nullopt;
    if (auto known = file_of_scope.find(id); known != file_of_scope.end()) return known->second;
    auto node = nodes.find(id);
    std::optional<std::string> file;
    if (node != nodes.end()) {
      const std::string_view body = node->second;
      if (body.starts_with("!DIFile(")) {
        std::optional<std::string> name = string_field(body, "filename");
        std::optional<std::string> directory = string_field(body, "directory");
        if (name && !name->empty())
          file = (directory && !directory->empty() && name->front() != '/') ? *directory + "/" + *name : *name;
      } else if (std::optional<std::string_view> file_id = reference(field(body, "file"))) {
        file = scope_file(*file_id, depth + 1);
      } else if (std::optional<std::string_view> scope = reference(field(body, "scope"))) {
        file = scope_file(*scope, depth + 1);
      }
    }
    file_of_scope[id] = file;
    return file;
  };
  // The frames of node `id`: a DILocation and the places it was inlined at; a DISubprogram's line.
  std::unordered_map<std::string_view, SourceFrames> frames_of_node;
  std::function<SourceFrames(std::string_view, int)> frames_of = [&](std::string_view id, int depth) -> SourceFrames {
    if (depth > 64) return {};
    if (auto known = frames_of_node.find(id); known != frames_of_node.end()) return known->second;
    SourceFrames frames;
    if (auto node = nodes.find(id); node != nodes.end()) {
      const std::string_view body = node->second;
      std::optional<std::uint32_t> number = number_field(body, "line");
      std::optional<std::string> file;
      if (body.starts_with("!DILocation(")) {
        if (std::optional<std::string_view> scope = reference(field(body, "scope"))) file = scope_file(*scope, 0);
      } else {
        file = scope_file(id, 0);
      }
      if (number && file && *number > 0) {
        frames.push_back({*file, *number});
        if (std::optional<std::string_view> inlined = reference(field(body, "inlinedAt"))) {
          SourceFrames callers = frames_of(*inlined, depth + 1);
          frames.insert(frames.end(), callers.begin(), callers.end());
        }
      }
    }
    frames_of_node[id] = frames;
    return frames;
  };
  Locations locations;
  locations.reserve(lines.size());
  for (std::string_view line : lines) {
    SourceFrames frames;
    const std::size_t dbg = line.find("!dbg !");
    if (dbg != std::string_view::npos && !line.starts_with("!")) {
      std::string_view id = line.substr(dbg + 6);
      std::size_t end = 0;
      while (end < id.size() && std::isdigit(static_cast<unsigned char>(id[end]))) ++end;
      frames = frames_of(id.substr(0, end), 0);
    }
    locations.push_back(std::move(frames));
  }
  return locations;
}

// ---- PTX and AMDGCN ----

// The inlining chain LLVM writes after `.loc` (after `;` in AMDGCN):
// `// standard.py:170:27 @[ standard.py:191:40 @[ k.py:17:39 ] ]`
// (file names without folders): the frames after the first.
SourceFrames inlined_at_comment(std::string_view comment, const std::unordered_map<std::uint32_t, std::string>& files) {
  SourceFrames frames;
  std::size_t at = comment.find("@[ ");
  while (at != std::string_view::npos) {
    at += 3;
    const std::size_t end = comment.find_first_of(" ]", at);
    const std::string_view item = comment.substr(at, end == std::string_view::npos ? std::string_view::npos : end - at);
    // name:line:col
    const std::size_t last = item.rfind(':');
    const std::size_t middle = last == std::string_view::npos || last == 0 ? std::string_view::npos : item.rfind(':', last - 1);
    if (middle == std::string_view::npos) break;
    const std::string_view name = item.substr(0, middle);
    std::size_t number_at = middle + 1;
    std::optional<std::uint32_t> number = parse_number(item, number_at);
    if (!number) break;
    std::string file(name);
    for (const auto& [index, path] : files)
      if (std::filesystem::path(path).filename() == std::filesystem::path(file).filename()) {
        file = path;
        break;
      }
    frames.push_back({file, *number});
    at = comment.find("@[ ", at);
  }
  return frames;
}

bool skip_spaces_and_commas(std::string_view text, std::size_t& at) {
  const std::size_t start = at;
  while (at < text.size() && (std::isspace(static_cast<unsigned char>(text[at])) || text[at] == ',')) ++at;
  return at > start;
}

// `.file N "path"`, or `.file N "directory" "name"` (AMDGCN; then maybe `md5 0x...`): N and the
// path; nothing for another line (the ELF `.file "name"` has no number).
std::optional<std::pair<std::uint32_t, std::string>> file_directive(std::string_view text) {
  if (!text.starts_with(".file")) return std::nullopt;
  std::size_t at = 5;
  if (!skip_spaces_and_commas(text, at)) return std::nullopt;
  std::optional<std::uint32_t> number = parse_number(text, at);
  skip_spaces_and_commas(text, at);
  std::optional<std::string> first = parse_quoted(text, at);
  if (!number || !first) return std::nullopt;
  skip_spaces_and_commas(text, at);
  std::optional<std::string> name = parse_quoted(text, at);
  if (!name) return std::pair{*number, *first};
  if (name->starts_with("/") || first->empty()) return std::pair{*number, *name};
  return std::pair{*number, *first + (first->ends_with("/") ? "" : "/") + *name};
}

// A new function, a section or data ends the last `.loc`'s reach.
bool ends_location(Stage stage, std::string_view line, std::string_view text) {
  if (text.starts_with(".section")) return true;
  if (stage == Stage::ptx)
    return line.starts_with("}") || text.starts_with(".visible") || text.starts_with(".entry") ||
           text.starts_with(".func");
  return text.starts_with(".globl") || text.starts_with(".type") || text.starts_with(".Lfunc_end") ||
         text.starts_with(".amdhsa_kernel") || text.starts_with(".amdgpu_metadata");
}

// PTX and AMDGCN assembly: `.file` and `.loc FILE LINE COL` directives as LLVM writes both, with the
// inlining chain in the comment after `.loc` (`//` in PTX, `;` in AMDGCN).
Locations assembly_locations(Stage stage, const std::vector<std::string_view>& lines) {
  const std::string_view comment_lead = stage == Stage::ptx ? "//" : ";";
  std::unordered_map<std::uint32_t, std::string> files;
  for (std::string_view line : lines)
    if (auto file = file_directive(trim(line))) files[file->first] = std::move(file->second);
  Locations locations;
  locations.reserve(lines.size());
  SourceFrames current;
  for (std::string_view line : lines) {
    const std::string_view text = trim(line);
    if (text.starts_with(".loc") && text.size() > 4 && std::isspace(static_cast<unsigned char>(text[4]))) {
      std::size_t at = 4;
      while (at < text.size() && std::isspace(static_cast<unsigned char>(text[at]))) ++at;
      std::optional<std::uint32_t> file = parse_number(text, at);
      while (at < text.size() && std::isspace(static_cast<unsigned char>(text[at]))) ++at;
      std::optional<std::uint32_t> number = parse_number(text, at);
      current.clear();
      if (file && number && *number > 0)
        if (auto name = files.find(*file); name != files.end()) {
          current.push_back({name->second, *number});
          if (const std::size_t comment = text.find(comment_lead); comment != std::string_view::npos) {
            SourceFrames callers = inlined_at_comment(text.substr(comment), files);
            current.insert(current.end(), callers.begin(), callers.end());
          }
        }
    } else if (ends_location(stage, line, text)) {
      current.clear();
    }
    const bool code = !text.empty() && !text.starts_with(comment_lead) && !text.starts_with(".file");
    locations.push_back(code ? current : SourceFrames());
  }
  return locations;
}

// ---- SASS (nvdisasm -g/-gi) ----

bool is_sass_marker(std::string_view line) { return trim(line).starts_with("//## "); }

// `//## File "path", line 12` then any ` inlined at "path", line 30`.
SourceFrames parse_sass_marker(std::string_view line) {
  const std::string_view text = trim(line);
  SourceFrames frames;
  std::size_t at = 0;
  std::string_view lead = "//## File ";
  while (text.substr(at).starts_with(lead)) {
    at += lead.size();
    std::optional<std::string> file = parse_quoted(text, at);
    if (!file) break;
    while (at < text.size() && (text[at] == ',' || text[at] == ' ')) ++at;
    if (!text.substr(at).starts_with("line ")) break;
    at += 5;
    std::optional<std::uint32_t> number = parse_number(text, at);
    if (!number) break;
    if (*number > 0 && !file->empty()) frames.push_back({*file, *number});
    while (at < text.size() && (text[at] == ',' || text[at] == ' ')) ++at;
    lead = "inlined at ";
  }
  return frames;
}

Locations sass_locations(const std::vector<std::string_view>& lines) {
  Locations locations;
  locations.reserve(lines.size());
  SourceFrames current;
  for (std::string_view line : lines) {
    const std::string_view text = trim(line);
    if (is_sass_marker(line)) {
      current = parse_sass_marker(line);
      locations.emplace_back();
      continue;
    }
    if (text.starts_with("//-----") || text.starts_with(".section")) current.clear();
    locations.push_back(text.starts_with("/*") ? current : SourceFrames());
  }
  return locations;
}

bool in_triton_language(const std::string& file) { return file.find("/triton/language/") != std::string::npos; }

// Decodes %XX escapes (taot build percent-encodes unusual characters of kernel file names).
std::string percent_decoded(std::string_view text) {
  std::string decoded;
  for (std::size_t index = 0; index < text.size(); ++index) {
    if (text[index] == '%' && index + 2 < text.size() &&
        std::isxdigit(static_cast<unsigned char>(text[index + 1])) &&
        std::isxdigit(static_cast<unsigned char>(text[index + 2]))) {
      decoded += static_cast<char>(std::stoi(std::string(text.substr(index + 1, 2)), nullptr, 16));
      index += 2;
    } else {
      decoded += text[index];
    }
  }
  return decoded;
}

std::string_view comment_marker(Stage stage) { return stage == Stage::llir || stage == Stage::amdgcn ? ";" : "//"; }

}  // namespace

std::vector<std::string_view> split_lines(std::string_view text) {
  std::vector<std::string_view> lines;
  std::size_t start = 0;
  while (start < text.size()) {
    const std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) {
      lines.push_back(text.substr(start));
      break;
    }
    lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

const SourceLocation* shown_frame(const SourceFrames& frames) {
  for (const SourceLocation& frame : frames)
    if (!in_triton_language(frame.file)) return &frame;
  return frames.empty() ? nullptr : &frames.front();
}

std::string sass_marker(const SourceFrames& frames) {
  if (frames.empty()) return "//## no source line";
  std::string marker = "//## File";
  for (std::size_t index = 0; index < frames.size(); ++index) {
    if (index > 0) marker += " inlined at";
    marker += fmt::format(" \"{}\", line {}", frames[index].file, frames[index].line);
  }
  return marker;
}

std::vector<SourceFrames> line_locations(Stage stage, std::string_view text) {
  const std::vector<std::string_view> lines = split_lines(text);
  switch (stage) {
    case Stage::ttir:
    case Stage::ttgir: return mlir_locations(lines);
    case Stage::llir: return llvm_locations(lines);
    case Stage::ptx:
    case Stage::amdgcn: return assembly_locations(stage, lines);
    case Stage::sass: return sass_locations(lines);
  }
  return Locations(lines.size());
}

SourceFiles::SourceFiles(std::vector<std::filesystem::path> fallbacks) : fallbacks_(std::move(fallbacks)) {}

const std::vector<std::string>* SourceFiles::lines_of(const std::string& file) {
  auto cached = cache_.find(file);
  if (cached == cache_.end()) {
    std::optional<std::vector<std::string>> lines;
    const std::filesystem::path recorded(percent_decoded(file));
    std::vector<std::filesystem::path> candidates = {recorded};
    for (const std::filesystem::path& fallback : fallbacks_)
      if (fallback.filename() == recorded.filename()) candidates.push_back(fallback);
    for (const std::filesystem::path& candidate : candidates) {
      std::ifstream stream(candidate);
      if (!stream) continue;
      lines.emplace();
      for (std::string line; std::getline(stream, line);) {
        if (!line.empty() && line.back() == '\r') line.pop_back();
        lines->push_back(std::move(line));
      }
      break;
    }
    cached = cache_.emplace(file, std::move(lines)).first;
  }
  return cached->second ? &*cached->second : nullptr;
}

std::optional<std::string> SourceFiles::line_text(const std::string& file, std::uint32_t line) {
  const std::vector<std::string>* lines = lines_of(file);
  if (lines == nullptr || line == 0 || line > lines->size()) return std::nullopt;
  return (*lines)[line - 1];
}

std::string sass_with_ptx_locations(std::string_view sass, std::string_view ptx) {
  const Locations ptx_frames = line_locations(Stage::ptx, ptx);
  constexpr std::string_view kPtxMarker = "//## File \".nv_debug_ptx_txt\", line ";
  std::string out;
  out.reserve(sass.size() + sass.size() / 2);
  for (std::string_view line : split_lines(sass)) {
    const std::string_view text = trim(line);
    if (text.starts_with(kPtxMarker)) {
      std::size_t at = kPtxMarker.size();
      std::optional<std::uint32_t> number = parse_number(text, at);
      const SourceFrames none;
      const SourceFrames& frames = number && *number >= 1 && *number <= ptx_frames.size() ? ptx_frames[*number - 1] : none;
      out += line.substr(0, line.size() - trim_left(line).size());
      out += sass_marker(frames);
    } else {
      out += line;
    }
    out += "\n";
  }
  return out;
}

std::string interleave_source(Stage stage, std::string_view text, SourceFiles& files) {
  const std::vector<std::string_view> lines = split_lines(text);
  const Locations locations = line_locations(stage, text);
  std::string out;
  out.reserve(text.size() + text.size() / 4);
  std::optional<std::pair<SourceLocation, SourceLocation>> shown;  // (shown frame, innermost)
  auto file_name = [](const std::string& file) {
    return std::filesystem::path(percent_decoded(file)).filename().string();
  };
  for (std::size_t index = 0; index < lines.size(); ++index) {
    const std::string_view line = lines[index];
    if (stage == Stage::sass && is_sass_marker(line)) continue;
    const SourceFrames& frames = locations[index];
    const SourceLocation* frame = shown_frame(frames);
    if (frame != nullptr && !trim(line).starts_with("}") &&
        (!shown || shown->first != *frame || shown->second != frames.front())) {
      const std::string_view indent = line.substr(0, line.size() - trim_left(line).size());
      std::optional<std::string> source = files.line_text(frame->file, frame->line);
      out += indent;
      out += comment_marker(stage);
      out += fmt::format(" {}:{}", file_name(frame->file), frame->line);
      if (source) {
        out += "  ";
        out += trim(*source);
      }
      if (frames.front() != *frame)
        out += fmt::format("  [{}:{}]", file_name(frames.front().file), frames.front().line);
      out += "\n";
      shown.emplace(*frame, frames.front());
    }
    out += line;
    out += "\n";
  }
  return out;
}

}  // namespace taot::workbench
