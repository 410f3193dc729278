// Test fixtures for taot::codegen: a temporary folder, and a manifest.json with fake cubins
// (random bytes with correct SHA-256s) that exercises every kind of argument and config field.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace taot::codegen::testing {

// A fresh folder under the system temp dir, removed with its content on destruction (kept when
// the environment variable TAOT_KEEP_TEST_FILES is set, for debugging).
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const noexcept { return path_; }

 private:
  std::filesystem::path path_;
};

std::string read_file(const std::filesystem::path& path);
void write_file(const std::filesystem::path& path, std::string_view content);

// The library "demo" (schema 2) with four kernels, each with its own targets:
//  add_kernel: pointers x_ptr/y_ptr/out_ptr (fp32|fp16), n_elements (i32|i64), scale (fp32),
//    flag (bool), constexprs BLOCK_SIZE (int), ACC_TYPE (dtype), EPS (float), option num_warps;
//    4 variants x 2 targets (sm_80, sm_90a); two images hold byte-identical cubins.
//  odd_names: arguments named new (a keyword), stream and config (the wrappers' own names), a
//    constexpr/config field named int; a grid over an i64 argument with every unary/binary op
//    kind; grid text with characters that need escaping.
//  noop: no call arguments and no config fields.
//  features (schema 2): x_ptr (fp32), bias_ptr (fp16, None in variants 0 and 2), n (i32), string
//    constexpr ACTIVATION {"gelu", "relu"}, launch-only n_rows (i32), grid min(n_rows, num_sms),
//    a tuning key and a heuristic; variant 1 has only an sm_90a image, variant 2 only sm_80.
// The cubins are written under `dir`/artifacts; their bytes start with sequences that need care
// in string literals (NUL before a digit, "??/", quotes, backslashes).
class ManifestBuilder {
 public:
  explicit ManifestBuilder(std::filesystem::path dir);

  nlohmann::json json;  // edit freely before write()

  // Writes dir/manifest.json and returns its path.
  std::filesystem::path write() const;
  // The path of the cubin of kernel k, variant v, image i.
  std::filesystem::path cubin_path(std::size_t kernel, std::size_t variant, std::size_t image) const;
  const std::filesystem::path& dir() const noexcept { return dir_; }

 private:
  nlohmann::json image(const std::string& variant_id, const std::string& target, const std::string& function,
                       std::size_t size, unsigned seed, int num_warps);
  std::filesystem::path dir_;
};

}  // namespace taot::codegen::testing
