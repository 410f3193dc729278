// SHA-256 (FIPS 180-4) of bytes and files, as the manifest's cubin_sha256 uses it.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>

#include "taot/codegen/errors.h"

namespace taot::codegen {

// Incremental SHA-256. Not thread-safe; cheap to create.
class Sha256 {
 public:
  using Digest = std::array<std::uint8_t, 32>;

  Sha256() noexcept;
  void update(std::span<const std::byte> bytes) noexcept;
  void update(std::string_view bytes) noexcept;
  // The digest of everything updated so far; the object must not be used afterwards.
  Digest finish() noexcept;

 private:
  void compress(const std::uint8_t* block) noexcept;
  std::array<std::uint32_t, 8> state_;
  std::array<std::uint8_t, 64> buffer_;
  std::size_t buffered_ = 0;
  std::uint64_t total_bytes_ = 0;
};

// Lower-case hex of a digest (64 characters).
std::string to_hex(const Sha256::Digest& digest);
// Lower-case hex SHA-256 of `bytes`.
std::string sha256_hex(std::string_view bytes);

// The bytes of a file and their SHA-256; an error names the file if it cannot be read.
struct FileContent {
  std::string bytes;
  std::string sha256;  // lower-case hex
};
Expected<FileContent> read_file_with_sha256(const std::filesystem::path& path);

}  // namespace taot::codegen
