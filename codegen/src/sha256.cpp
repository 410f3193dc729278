// SHA-256 through OpenSSL's libcrypto (EVP_sha256), with its failures turned into Status values;
// and whole-file reading with its hash.
#include "taot/codegen/sha256.h"

#include <openssl/err.h>
#include <openssl/evp.h>

#include <fstream>
#include <iterator>

namespace taot::codegen {
namespace {

// "SHA-256: CALL failed (OPENSSL REASON)", the reason read from OpenSSL's error code if it gave one.
Status openssl_failure(const char* call, unsigned long openssl_error) {
  std::string message = std::string("SHA-256: ") + call + " failed";
  if (openssl_error != 0) {
    char reason[256];
    ERR_error_string_n(openssl_error, reason, sizeof reason);
    message += std::string(" (") + reason + ")";
  }
  return Status::error(TAOT_INTERNAL, std::move(message));
}

// The oldest error OpenSSL queued on this thread (the cause), leaving the queue empty for others.
unsigned long take_openssl_error() noexcept {
  const unsigned long error = ERR_get_error();
  ERR_clear_error();
  return error;
}

}  // namespace

void Sha256::ContextDeleter::operator()(evp_md_ctx_st* context) const noexcept { EVP_MD_CTX_free(context); }

Sha256::Sha256() noexcept : context_(EVP_MD_CTX_new()) {
  if (!context_) {
    record_failure("EVP_MD_CTX_new");
  } else if (EVP_DigestInit_ex(context_.get(), EVP_sha256(), nullptr) != 1) {
    record_failure("EVP_DigestInit_ex(EVP_sha256())");
  }
}

void Sha256::record_failure(const char* call) noexcept {
  if (failed_call_ != nullptr) return;  // keep the first
  failed_call_ = call;
  openssl_error_ = take_openssl_error();
}

void Sha256::update(std::span<const std::byte> bytes) noexcept {
  if (failed_call_ != nullptr || bytes.empty()) return;
  if (!context_) return record_failure("update after finish() or a move");
  if (EVP_DigestUpdate(context_.get(), bytes.data(), bytes.size()) != 1) record_failure("EVP_DigestUpdate");
}

void Sha256::update(std::string_view bytes) noexcept { update(std::as_bytes(std::span(bytes))); }

Expected<Sha256::Digest> Sha256::finish() {
  if (failed_call_ == nullptr && !context_) record_failure("finish() after finish() or a move");
  if (failed_call_ != nullptr) return openssl_failure(failed_call_, openssl_error_);
  Digest digest;
  unsigned int size = 0;
  const int finished = EVP_DigestFinal_ex(context_.get(), digest.data(), &size);
  context_.reset();
  if (finished != 1 || size != digest.size()) {
    record_failure("EVP_DigestFinal_ex");
    return openssl_failure(failed_call_, openssl_error_);
  }
  return digest;
}

std::string to_hex(const Sha256::Digest& digest) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(2 * digest.size());
  for (std::uint8_t byte : digest) {
    hex.push_back(kDigits[byte >> 4]);
    hex.push_back(kDigits[byte & 15]);
  }
  return hex;
}

Expected<std::string> sha256_hex(std::string_view bytes) {
  Sha256::Digest digest;
  unsigned int size = 0;
  if (EVP_Digest(bytes.data(), bytes.size(), digest.data(), &size, EVP_sha256(), nullptr) != 1 ||
      size != digest.size()) {
    return openssl_failure("EVP_Digest(EVP_sha256())", take_openssl_error());
  }
  return to_hex(digest);
}

Expected<FileContent> read_file_with_sha256(const std::filesystem::path& path) {
  std::error_code error;
  if (!std::filesystem::is_regular_file(path, error)) {
    return input_error(path.generic_string() + ": " +
                 (std::filesystem::exists(path, error) ? "not a regular file" : "file not found"));
  }
  std::ifstream stream(path, std::ios::binary);
  if (!stream) return input_error(path.generic_string() + ": cannot open for reading");
  FileContent content;
  content.bytes.assign(std::istreambuf_iterator<char>(stream), std::istreambuf_iterator<char>());
  if (stream.bad()) return input_error(path.generic_string() + ": read failed");
  Expected<std::string> sha256 = sha256_hex(content.bytes);
  if (!sha256.ok()) return std::move(sha256).take_status().with_context(path.generic_string());
  content.sha256 = std::move(*sha256);
  return content;
}

}  // namespace taot::codegen
