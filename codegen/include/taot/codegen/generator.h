// The code generator: turns a checked Manifest into the sources of a C++ kernel library
// (docs/generated-api.md describes them): <lib>.h, <lib>_c.h, <lib>.cpp, <lib>_cubins.cpp and
// CMakeLists.txt. Output is deterministic: the same manifest gives byte-identical files.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "taot/codegen/errors.h"
#include "taot/codegen/manifest.h"

namespace taot::codegen {

// One generated file, in memory.
struct GeneratedFile {
  std::string name;     // file name inside the output folder, e.g. "vector_add.h"
  std::string content;
};

// Renders every file of the library in memory, in a fixed order (header, C header, source, tables,
// cubins, CMakeLists.txt). Reads each distinct cubin once (images with equal cubin_sha256 share one
// embedded array) and fails, naming the file, if it cannot be read or no longer has its
// manifest sha256, and, naming the image, if an image's cubin does not take the parameters the
// runtime will pass it (check_launch_abi in taot/codegen/launch_check.h). Thread-safe.
// With `python`, also <lib>_python.cpp and its part of CMakeLists.txt (a module holding the
// tables, which taot's Python binding, taot._native, turns into kernel objects).
// Each kernel's tuned tables are baked from the files its manifest entry lists, then those in
// `tuning_files` for it (kernel name -> files); a bad table fails naming its file.
Expected<std::vector<GeneratedFile>> render_library(
    const Manifest& manifest, bool python = false,
    const std::map<std::string, std::vector<std::filesystem::path>>& tuning_files = {});

struct GenerateOptions {
  std::filesystem::path output_dir;  // created if missing
  bool python = false;               // also generate the Python module (loaded through taot._native)
  // Tuned-table files per kernel name (`taot gen --tuning`, made by assign_tuning_files in
  // taot/codegen/tuning.h), baked with the files the manifest lists for the kernel.
  std::map<std::string, std::vector<std::filesystem::path>> tuning_files{};
};

struct FileStatus {
  std::filesystem::path path;  // output_dir / name
  bool changed = false;        // false: the file already had this content and was left alone
};

struct GenerateResult {
  std::vector<FileStatus> files;  // every generated file, in render_library's order

  // The paths of the files that were written.
  std::vector<std::filesystem::path> changed() const;
};

// Renders the library and writes each file whose content differs from what is on disk (to a
// temporary file in the same folder, then renamed over it); files with equal content keep their
// mtime. Fails with a message naming the file on any I/O error; files written before the error
// stay written. Not safe to run concurrently on the same output folder.
Expected<GenerateResult> generate(const Manifest& manifest, const GenerateOptions& options);

// Writes `content` to `path` unless the file already holds exactly that; returns whether it wrote.
// Writes to a temporary file beside `path` and renames it, so readers never see a partial file.
Expected<bool> write_if_changed(const std::filesystem::path& path, std::string_view content);

}  // namespace taot::codegen
