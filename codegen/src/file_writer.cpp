// write_if_changed: replace a file's content atomically, and only when it differs.
#include <fmt/format.h>

#include <exception>
#include <fstream>
#include <iterator>
#include <random>

#include "taot/codegen/generator.h"

namespace taot::codegen {
namespace {

bool has_content(const std::filesystem::path& path, std::string_view content) {
  std::error_code error;
  const auto size = std::filesystem::file_size(path, error);
  if (error || size != content.size()) return false;
  std::ifstream stream(path, std::ios::binary);
  if (!stream) return false;
  const std::string existing((std::istreambuf_iterator<char>(stream)), std::istreambuf_iterator<char>());
  return !stream.bad() && existing == content;
}

// A name beside `path` that no other writer uses: ".<name>.<random>.tmp".
std::filesystem::path temporary_path(const std::filesystem::path& path) {
  std::random_device entropy;
  const unsigned long long token = (static_cast<unsigned long long>(entropy()) << 32) ^ entropy();
  return path.parent_path() / fmt::format(".{}.{:016x}.tmp", path.filename().string(), token);
}

}  // namespace

Expected<bool> write_if_changed(const std::filesystem::path& path, std::string_view content) {
  if (has_content(path, content)) return false;
  std::filesystem::path temporary;
  try {
    temporary = temporary_path(path);
  } catch (const std::exception& error) {  // std::random_device without an entropy source
    return input_error(fmt::format("{}: cannot pick a temporary file name: {}", path.generic_string(), error.what()));
  }
  {
    std::ofstream stream(temporary, std::ios::binary | std::ios::trunc);
    if (!stream) return input_error(fmt::format("{}: cannot create {}", path.generic_string(), temporary.generic_string()));
    stream.write(content.data(), static_cast<std::streamsize>(content.size()));
    stream.close();
    if (!stream) {
      std::error_code ignored;
      std::filesystem::remove(temporary, ignored);
      return input_error(fmt::format("{}: write failed (disk full?)", path.generic_string()));
    }
  }
  std::error_code error;
  std::filesystem::rename(temporary, path, error);
  if (error) {
    std::error_code ignored;
    std::filesystem::remove(temporary, ignored);
    return input_error(fmt::format("{}: cannot replace the file: {}", path.generic_string(), error.message()));
  }
  return true;
}

}  // namespace taot::codegen
