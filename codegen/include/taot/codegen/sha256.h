// SHA-256 (FIPS 180-4) of bytes and files, as the manifest's cubin_sha256 uses it; computed by
// OpenSSL's libcrypto (EVP), which this header keeps out of its includers' sight.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "taot/codegen/errors.h"

struct evp_md_ctx_st;  // OpenSSL's EVP_MD_CTX

namespace taot::codegen {

// Incremental SHA-256. Owns one OpenSSL digest context; move-only; not thread-safe.
// A failure inside OpenSSL (no memory for the context, a provider that cannot be loaded) is kept
// by the object and returned by finish(), so update() needs no check of its own.
class Sha256 {
 public:
  using Digest = std::array<std::uint8_t, 32>;

  Sha256() noexcept;
  void update(std::span<const std::byte> bytes) noexcept;
  void update(std::string_view bytes) noexcept;
  // The digest of everything updated so far, or TAOT_INTERNAL naming the OpenSSL call that failed.
  // Ends the hash: a later update() or finish() (or one on a moved-from object) gives an error.
  Expected<Digest> finish();

 private:
  struct ContextDeleter {
    void operator()(evp_md_ctx_st* context) const noexcept;  // EVP_MD_CTX_free
  };
  void record_failure(const char* call) noexcept;

  std::unique_ptr<evp_md_ctx_st, ContextDeleter> context_;
  const char* failed_call_ = nullptr;  // the first OpenSSL call that failed, if any
  unsigned long openssl_error_ = 0;    // its code from OpenSSL's error queue (0 when none was queued)
};

// Lower-case hex of a digest (64 characters).
std::string to_hex(const Sha256::Digest& digest);
// Lower-case hex SHA-256 of `bytes`, or TAOT_INTERNAL if OpenSSL fails.
Expected<std::string> sha256_hex(std::string_view bytes);

// The bytes of a file and their SHA-256; an error names the file if it cannot be read or hashed.
struct FileContent {
  std::string bytes;
  std::string sha256;  // lower-case hex
};
Expected<FileContent> read_file_with_sha256(const std::filesystem::path& path);

}  // namespace taot::codegen
