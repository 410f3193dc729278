// The generated library must compile: its sources as C++17 and C++20 with -Wall -Wextra -Werror
// (gcc, and clang where installed), its C header as C99, a user's C++20 file calling the API, and
// the generated CMakeLists.txt; and the embedded arrays must hold exactly the cubin bytes. Only
// the runtime's headers are used (the runtime library is not linked).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cstdlib>
#include <sstream>

#include "manifest_builder.h"
#include "taot/codegen/generator.h"
#include "taot/codegen/manifest.h"

namespace taot::codegen {
namespace {

using testing::ManifestBuilder;
using testing::TempDir;

std::string shell_quoted(const std::filesystem::path& path) { return fmt::format("'{}'", path.string()); }

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  std::stringstream stream(text);
  for (std::string part; std::getline(stream, part, separator);) {
    if (!part.empty()) parts.push_back(part);
  }
  return parts;
}

class GeneratedCodeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string(TAOT_TEST_CUDA_INCLUDE).empty()) GTEST_SKIP() << "cuda.h not found (CUDAToolkit)";
    Expected<Manifest> manifest = read_manifest(builder.write());
    ASSERT_TRUE(manifest.ok()) << manifest.status().message();
    Expected<GenerateResult> result = generate(*manifest, {out});
    ASSERT_TRUE(result.ok()) << result.status().message();
  }

  std::string include_flags() const {
    std::string flags = " -I" + shell_quoted(out) + " -I" + shell_quoted(TAOT_TEST_RUNTIME_INCLUDE);
    for (const std::string& dir : split(TAOT_TEST_CUDA_INCLUDE, '|')) flags += " -I" + shell_quoted(dir);
    return flags;
  }

  // Runs `command` in a shell; on failure, fails the test showing the command and its output.
  void run(const std::string& command) {
    const auto log = dir.path() / "command.log";
    const int status = std::system((command + " > " + shell_quoted(log) + " 2>&1").c_str());
    std::string output;
    if (std::filesystem::exists(log)) output = testing::read_file(log);
    EXPECT_EQ(status, 0) << command << "\n" << output;
  }

  void compile_cxx(const std::string& compiler, const std::string& standard, const std::filesystem::path& source) {
    run(compiler + " -std=" + standard + " -Wall -Wextra -Wpedantic -Wshadow -Werror" + include_flags() + " -c " +
        shell_quoted(source) + " -o " + shell_quoted(dir.path() / (source.stem().string() + "_" + standard + ".o")));
  }

  TempDir dir;
  ManifestBuilder builder{dir.path()};
  std::filesystem::path out = dir.path() / "generated";
};

TEST_F(GeneratedCodeTest, SourcesCompileAsCxx17AndCxx20WithGcc) {
  for (const char* standard : {"c++17", "c++20"}) {
    compile_cxx(TAOT_TEST_CXX, standard, out / "demo.cpp");
    compile_cxx(TAOT_TEST_CXX, standard, out / "demo_tables.cpp");
    compile_cxx(TAOT_TEST_CXX, standard, out / "demo_cubins.cpp");
  }
}

TEST_F(GeneratedCodeTest, SourcesCompileWithClang) {
  if (std::string(TAOT_TEST_CLANGXX).empty()) GTEST_SKIP() << "clang++ not installed";
  for (const char* standard : {"c++17", "c++20"}) {
    compile_cxx(TAOT_TEST_CLANGXX, standard, out / "demo.cpp");
    compile_cxx(TAOT_TEST_CLANGXX, standard, out / "demo_tables.cpp");
    compile_cxx(TAOT_TEST_CLANGXX, standard, out / "demo_cubins.cpp");
  }
}

TEST_F(GeneratedCodeTest, CHeaderCompilesAsC99) {
  const auto source = dir.path() / "use_c.c";
  testing::write_file(source,
                      "#include \"demo_c.h\"\n"
                      "taot_status launch_all(CUstream stream, taot_ptr x, taot_ptr y, taot_ptr out, int64_t n);\n"
                      "taot_status launch_all(CUstream stream, taot_ptr x, taot_ptr y, taot_ptr out, int64_t n) {\n"
                      "  taot_status status = demo_add_kernel(stream, x, y, out, n, 1.5f, true);\n"
                      "  if (status != TAOT_OK) return status;\n"
                      "  status = demo_odd_names(stream, x, n, 2.0, false, 3);\n"
                      "  if (status != TAOT_OK) return status;\n"
                      "  if (taot_kernel_variant_count(demo_add_kernel_handle()) != 4) return TAOT_INTERNAL;\n"
                      "  status = demo_features(stream, x, y, 7, 100);\n"
                      "  if (status != TAOT_OK) return status;\n"
                      "  const int64_t grid[3] = {4, 1, 1};\n"
                      "  taot_config_value gelu = {\"ACTIVATION\", 0, 0.0, \"gelu\"};\n"
                      "  taot_launch_options options = TAOT_LAUNCH_OPTIONS_INIT;\n"
                      "  options.config = &gelu;\n"
                      "  options.config_count = 1;\n"
                      "  options.grid = grid;\n"
                      "  taot_arg args[4] = {{{0}, 0}};\n"
                      "  status = taot_launch_ex(demo_features_handle(), stream, args, 4, &options);\n"
                      "  if (status != TAOT_OK) return status;\n"
                      "  return demo_noop(stream);\n"
                      "}\n");
  run(std::string(TAOT_TEST_CC) + " -std=c99 -Wall -Wextra -Werror" + include_flags() + " -c " + shell_quoted(source) +
      " -o " + shell_quoted(dir.path() / "use_c.o"));
}

TEST_F(GeneratedCodeTest, UserCodeCompilesAgainstTheHeader) {
  const auto source = dir.path() / "use_cpp.cpp";
  testing::write_file(source,
                      "#include \"demo.h\"\n"
                      "#include <cstddef>\n"
                      "taot::Status use(CUstream stream, float* x, taot::fp16_t* y, float* out, std::int64_t n) {\n"
                      "  taot::Status status = demo::add_kernel(stream, x, y, out, n, 0.5f, true);\n"
                      "  if (!status.ok()) return status;\n"
                      "  status = demo::add_kernel(stream, x, y, out, n, 0.5f, true,\n"
                      "                            {.BLOCK_SIZE = 1024, .ACC_TYPE = taot::DType::fp32});\n"
                      "  if (!status.ok()) return status;\n"
                      "  status = demo::odd_names(stream, taot::Ptr(y, taot::DType::bf16), n, 1.0, false, 3, {.int_ = true});\n"
                      "  if (!status.ok()) return status;\n"
                      "  std::size_t count = 0;\n"
                      "  for (const taot::VariantInfo& variant : demo::add_kernel_variants()) count += variant.index();\n"
                      "  status = demo::add_kernel_variant(count % 4, stream, x, y, out, n, 0.5f, false);\n"
                      "  if (!status.ok()) return status;\n"
                      "  taot::Kernel& kernel = demo::noop_kernel();\n"
                      "  static_cast<void>(kernel.handle());\n"
                      "  status = demo::noop(stream, {});\n"
                      "  if (!status.ok()) return status;\n"
                      "  status = demo::features(stream, x, taot::Ptr(nullptr, taot::DType::fp16), 7, 100,\n"
                      "                          {.ACTIVATION = \"gelu\"}, taot::Grid{4});\n"
                      "  if (!status.ok()) return status;\n"
                      "  status = demo::features(stream, x, y, 7, 100, {}, {2, 1, 1});\n"
                      "  if (!status.ok()) return status;\n"
                      "  status = demo::features_variant(1, stream, x, y, 7, 100, taot::Grid{0});\n"
                      "  if (!status.ok()) return status;\n"
                      "  return demo::preload();\n"
                      "}\n");
  compile_cxx(TAOT_TEST_CXX, "c++20", source);
}

TEST_F(GeneratedCodeTest, EmbeddedBytesEqualTheCubins) {
  // A main that compares every embedded array with its cubin file, byte for byte.
  const Expected<Manifest> manifest = read_manifest(builder.dir() / "manifest.json");
  ASSERT_TRUE(manifest.ok());
  std::string checks;
  std::vector<std::string> seen;
  for (const Kernel& kernel : manifest->kernels) {
    for (const Variant& variant : kernel.variants) {
      for (const Image& image : variant.images) {
        if (std::find(seen.begin(), seen.end(), image.cubin_sha256) != seen.end()) continue;
        checks += "  failures += check(demo::detail::cubin_" + std::to_string(seen.size()) + ", \"" +
                  image.cubin_path.string() + "\");\n";
        seen.push_back(image.cubin_sha256);
      }
    }
  }
  const auto main_source = dir.path() / "check_cubins.cpp";
  testing::write_file(main_source,
                      "#include <cstdio>\n#include <cstring>\n#include <fstream>\n#include <iterator>\n"
                      "#include <string>\n"
                      "namespace demo::detail {\n" +
                          [&] {
                            std::string decls;
                            for (std::size_t i = 0; i < seen.size(); ++i) {
                              decls += "extern const char cubin_" + std::to_string(i) + "[];\n";
                            }
                            return decls;
                          }() +
                          "}\n"
                          "static int check(const char* embedded, const char* path) {\n"
                          "  std::ifstream file(path, std::ios::binary);\n"
                          "  const std::string bytes((std::istreambuf_iterator<char>(file)), "
                          "std::istreambuf_iterator<char>());\n"
                          "  if (bytes.empty() || std::memcmp(embedded, bytes.data(), bytes.size()) != 0 ||\n"
                          "      embedded[bytes.size()] != '\\0' ||\n"
                          "      reinterpret_cast<std::uintptr_t>(embedded) % 16 != 0) {\n"
                          "    std::printf(\"mismatch: %s\\n\", path);\n"
                          "    return 1;\n"
                          "  }\n"
                          "  return 0;\n"
                          "}\n"
                          "int main() {\n"
                          "  int failures = 0;\n" +
                          checks +
                          "  return failures;\n"
                          "}\n");
  const auto binary = dir.path() / "check_cubins";
  run(std::string(TAOT_TEST_CXX) + " -std=c++17 -O1 -Wall -Wextra -Werror " + shell_quoted(main_source) + " " +
      shell_quoted(out / "demo_cubins.cpp") + " -o " + shell_quoted(binary));
  run(shell_quoted(binary));
}

TEST_F(GeneratedCodeTest, GeneratedCMakeListsBuildsStaticAndShared) {
  // A project standing in for the lead's: taot::runtime is an interface target with the headers,
  // exported so that the library's install rules can name it.
  const auto project = dir.path() / "project";
  std::string cuda_dirs;
  for (const std::string& include : split(TAOT_TEST_CUDA_INCLUDE, '|')) cuda_dirs += " \"" + include + "\"";
  testing::write_file(project / "CMakeLists.txt",
                      "cmake_minimum_required(VERSION 3.20)\n"
                      "project(use_demo LANGUAGES CXX)\n"
                      "add_library(taot_runtime_headers INTERFACE)\n"
                      "target_include_directories(taot_runtime_headers INTERFACE \"" +
                          std::string(TAOT_TEST_RUNTIME_INCLUDE) + "\"" + cuda_dirs +
                          ")\n"
                          "add_library(taot::runtime ALIAS taot_runtime_headers)\n"
                          "install(TARGETS taot_runtime_headers EXPORT fake_taot)\n"
                          "install(EXPORT fake_taot DESTINATION lib/cmake/fake_taot)\n"
                          "include(\"" TAOT_TEST_LIBRARY_CMAKE "\")\n"
                          "add_subdirectory(\"" +
                          out.string() + "\" demo)\n");
  for (const char* shared : {"OFF", "ON"}) {
    const auto build = dir.path() / (std::string("build_") + shared);
    run(std::string(TAOT_TEST_CMAKE) + " -S " + shell_quoted(project) + " -B " + shell_quoted(build) +
        " -DCMAKE_CXX_FLAGS='-Wall -Wextra -Werror' -Ddemo_shared=" + shared);
    run(std::string(TAOT_TEST_CMAKE) + " --build " + shell_quoted(build));
    const bool built = std::filesystem::exists(build / "demo" / (std::string(shared) == "ON" ? "libdemo.so" : "libdemo.a"));
    EXPECT_TRUE(built) << "shared=" << shared;
  }
}

}  // namespace
}  // namespace taot::codegen
