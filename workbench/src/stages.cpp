// Stage names and reading stage files (zlib for gzip).
#include "taot/workbench/stages.h"

#include <zlib.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>

#include "text_util.h"

namespace taot::workbench {

namespace {

// Every stage once, in the enum's order: its name and whose images have it (both vendors: no vendor).
struct StageEntry {
  Stage stage;
  std::string_view name;
  std::optional<table::Vendor> vendor;
};

constexpr std::array<StageEntry, 6> kStageTable = {{
    {Stage::ttir, "ttir", std::nullopt},
    {Stage::ttgir, "ttgir", std::nullopt},
    {Stage::llir, "llir", std::nullopt},
    {Stage::ptx, "ptx", table::Vendor::nvidia},
    {Stage::sass, "sass", table::Vendor::nvidia},
    {Stage::amdgcn, "amdgcn", table::Vendor::amd},
}};

constexpr std::array<Stage, kStageTable.size()> kStages = [] {
  std::array<Stage, kStageTable.size()> stages{};
  for (std::size_t index = 0; index < kStageTable.size(); ++index) stages[index] = kStageTable[index].stage;
  return stages;
}();

constexpr bool in_enum_order() {
  for (std::size_t index = 0; index < kStageTable.size(); ++index)
    if (static_cast<std::size_t>(kStageTable[index].stage) != index) return false;
  return true;
}
static_assert(in_enum_order() && static_cast<std::size_t>(Stage::amdgcn) + 1 == kStageTable.size(),
              "kStageTable has one entry per Stage, in the enum's order");

const StageEntry& entry_of(Stage stage) noexcept { return kStageTable[static_cast<std::size_t>(stage)]; }

Expected<std::string> read_bytes(const std::filesystem::path& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) return usage_error("cannot read " + path.string() + ": " + std::strerror(errno));
  std::string bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  if (file.bad()) return usage_error("cannot read " + path.string());
  return bytes;
}

// gzip (one or more members) to text with zlib's automatic header detection.
Expected<std::string> gunzip(const std::string& compressed, const std::filesystem::path& path) {
  z_stream stream{};
  if (inflateInit2(&stream, 15 + 32) != Z_OK) return usage_error("cannot decompress " + path.string() + ": zlib failed");
  std::string text;
  std::array<char, 1 << 16> chunk;
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(compressed.data()));
  stream.avail_in = static_cast<uInt>(compressed.size());
  int result = Z_OK;
  while (true) {
    stream.next_out = reinterpret_cast<Bytef*>(chunk.data());
    stream.avail_out = static_cast<uInt>(chunk.size());
    result = inflate(&stream, Z_NO_FLUSH);
    text.append(chunk.data(), chunk.size() - stream.avail_out);
    if (result == Z_STREAM_END) {
      if (stream.avail_in == 0) break;
      inflateReset(&stream);  // another gzip member follows
      continue;
    }
    if (result != Z_OK) break;
  }
  inflateEnd(&stream);
  if (result != Z_STREAM_END)
    return usage_error("cannot decompress " + path.string() + ": not gzip data or truncated" +
                       (stream.msg ? std::string(" (") + stream.msg + ")" : std::string()));
  return text;
}

}  // namespace

std::span<const Stage> all_stages() noexcept { return kStages; }

std::string_view stage_name(Stage stage) noexcept { return entry_of(stage).name; }

std::optional<Stage> stage_from_name(std::string_view name) noexcept {
  for (Stage stage : kStages)
    if (stage_name(stage) == name) return stage;
  return std::nullopt;
}

std::string stage_names() {
  std::string names;
  for (Stage stage : kStages) {
    if (!names.empty()) names += ", ";
    names += stage_name(stage);
  }
  return names;
}

std::vector<std::string> stage_name_list() {
  std::vector<std::string> names;
  for (Stage stage : kStages) names.emplace_back(stage_name(stage));
  return names;
}

bool stage_of_vendor(Stage stage, table::Vendor vendor) noexcept {
  const std::optional<table::Vendor> only = entry_of(stage).vendor;
  return !only || *only == vendor;
}

std::string stage_names(table::Vendor vendor) {
  std::string names;
  for (Stage stage : kStages) {
    if (!stage_of_vendor(stage, vendor)) continue;
    if (!names.empty()) names += ", ";
    names += stage_name(stage);
  }
  return names;
}

std::string_view vendor_title(table::Vendor vendor) noexcept { return vendor == table::Vendor::amd ? "AMD" : "NVIDIA"; }

std::optional<Stage> stage_of_file(const std::filesystem::path& path) noexcept {
  std::string name = path.filename().string();
  if (name.ends_with(".gz")) name.resize(name.size() - 3);
  const std::string extension = std::filesystem::path(name).extension().string();
  if (extension == ".cubin" || extension == ".sass") return Stage::sass;
  if (extension == ".ll") return Stage::llir;
  if (extension.size() > 1) return stage_from_name(std::string_view(extension).substr(1));
  return std::nullopt;
}

Expected<std::string> read_text_file(const std::filesystem::path& path) {
  const std::string name = path.filename().string();
  if (name.ends_with(".xz"))
    return usage_error(path.string() + " is xz-compressed (an older taot kept IR so); decompress it with `xz -dk` "
                                       "or rebuild the library, which keeps IR gzip-compressed");
  Expected<std::string> bytes = read_bytes(path);
  if (!bytes.ok() || !name.ends_with(".gz")) return bytes;
  return gunzip(*bytes, path);
}

}  // namespace taot::workbench
