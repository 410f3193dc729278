// Test fixtures for taot::codegen (see manifest_builder.h).
#include "manifest_builder.h"

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <limits>
#include <random>
#include <stdexcept>
#include <vector>

#include "taot/codegen/sha256.h"

namespace taot::codegen::testing {

using Json = nlohmann::json;

TempDir::TempDir() {
  std::random_device entropy;
  path_ = std::filesystem::temp_directory_path() /
          ("taot_codegen_test_" + std::to_string(entropy()) + "_" + std::to_string(entropy()));
  std::filesystem::create_directories(path_);
}

TempDir::~TempDir() {
  if (std::getenv("TAOT_KEEP_TEST_FILES") != nullptr) return;
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream stream(path, std::ios::binary);
  if (!stream) throw std::runtime_error("cannot read " + path.string());
  return std::string((std::istreambuf_iterator<char>(stream)), std::istreambuf_iterator<char>());
}

void write_file(const std::filesystem::path& path, std::string_view content) {
  std::filesystem::create_directories(path.parent_path());
  std::ofstream stream(path, std::ios::binary | std::ios::trunc);
  stream.write(content.data(), static_cast<std::streamsize>(content.size()));
  if (!stream) throw std::runtime_error("cannot write " + path.string());
}

namespace {

// Random bytes after a prefix of the sequences a string-literal writer can get wrong.
std::string fake_cubin(std::size_t size, unsigned seed) {
  std::string bytes = "\x7f" "ELF";
  for (char c : {'\0', '1', '\0', '7', '\0', '8'}) bytes.push_back(c);
  bytes += "?\?/?\?=?\?(\"\\?\n\r\t\xff" "0";
  std::mt19937 random(seed);
  while (bytes.size() < size) bytes.push_back(static_cast<char>(random() & 0xff));
  return bytes;
}

Json pointer_arg(const std::string& name) {
  return {{"name", name}, {"kind", "pointer"}, {"dtypes", {"fp32", "fp16"}}};
}

Json lit(std::int64_t value) { return {{"op", "lit"}, {"value", value}}; }
Json arg(const std::string& name) { return {{"op", "arg"}, {"name", name}}; }
Json op(const std::string& name) { return {{"op", name}}; }

}  // namespace

Json ManifestBuilder::image(const std::string& variant_id, const std::string& target, const std::string& function,
                            std::size_t size, unsigned seed, int num_warps) {
  const std::string dir = "artifacts/" + variant_id + "/" + target;
  const std::string cubin = dir + "/" + function + ".cubin";
  const std::string bytes = fake_cubin(size, seed);
  write_file(dir_ / cubin, bytes);
  const bool arch_specific = target.back() == 'a';
  return {
      {"target", target},
      {"arch", target.find("90") != std::string::npos ? 90 : 80},
      {"arch_specific", arch_specific},
      {"dir", dir},
      {"cubin", cubin},
      {"cubin_sha256", sha256_hex(bytes).value()},
      {"function_name", function},
      {"num_warps", num_warps},
      {"num_ctas", 1},
      {"num_stages", 3},
      {"shared", 2048 + seed},
      {"global_scratch_size", 0},
      {"global_scratch_align", 1},
      {"profile_scratch_size", 0},
      {"profile_scratch_align", 1},
      {"launch_cooperative_grid", false},
      {"launch_pdl", arch_specific},
      {"cluster_dims", {1, 1, 1}},
      {"tmem_size", 0},
      {"maxnreg", nullptr},
      {"artifacts", {{"ptx", dir + "/" + function + ".ptx"}, {"ttir", dir + "/" + function + ".ttir"}}},
  };
}

ManifestBuilder::ManifestBuilder(std::filesystem::path dir) : dir_(std::move(dir)) {
  Json add_variants = Json::array();
  unsigned seed = 1;
  const char* dtypes[] = {"fp32", "fp16"};
  const int blocks[] = {256, 1024};
  for (int d = 0; d < 2; ++d) {
    for (int b = 0; b < 2; ++b) {
      const std::string dtype = dtypes[d];
      const int block = blocks[b];
      const bool small_n = d == 1 && b == 0;  // one variant specializes n_elements == 1
      const std::string id = "add_kernel_" + dtype + "_B" + std::to_string(block);
      Json params = {"x_ptr", "y_ptr", "out_ptr"};
      if (!small_n) params.push_back("n_elements");
      params.push_back("scale");
      params.push_back("flag");
      Json variant = {
          {"id", id},
          {"hash", "hash-" + id},
          {"specialization",
           {{{"arg", "x_ptr"}, {"dtype", dtype}, {"align", 16}},
            {{"arg", "y_ptr"}, {"dtype", dtype}, {"align", 16}},
            {{"arg", "out_ptr"}, {"dtype", dtype}, {"align", b == 0 ? 0 : 16}},
            {{"arg", "n_elements"}, {"type", d == 0 ? "i32" : "i64"}, {"hint", small_n ? 1 : 16}},
            {{"arg", "scale"}, {"type", "fp32"}},
            {{"arg", "flag"}, {"type", "i1"}}}},
          {"config", {{"BLOCK_SIZE", block}, {"ACC_TYPE", dtype}, {"EPS", d == 0 ? 0.5 : 1e-6}, {"num_warps", 4 * (b + 1)}}},
          {"params", params},
          {"grid", {{arg("n_elements"), lit(block), op("cdiv")}, {lit(1)}, {lit(1)}}},
          {"images",
           {image(id, "sm_80", "add_kernel", 3000 + 500 * seed, seed, 4 * (b + 1)),
            image(id, "sm_90a", "add_kernel", 3100 + 500 * seed, seed + 100, 4 * (b + 1))}},
      };
      ++seed;
      add_variants.push_back(std::move(variant));
    }
  }
  // The last variant's sm_80 cubin is byte-identical to the previous variant's: embedded once.
  {
    Json& previous = add_variants[2]["images"][0];
    Json& last = add_variants[3]["images"][0];
    write_file(dir_ / last["cubin"].get<std::string>(), read_file(dir_ / previous["cubin"].get<std::string>()));
    last["cubin_sha256"] = previous["cubin_sha256"];
  }

  Json add_kernel = {
      {"name", "add_kernel"},
      {"function", "add_kernel"},
      {"source", "../examples/demo/demo.py"},
      {"source_hash", "feedface"},
      {"targets", {"sm_80", "sm_90a"}},
      {"grid", {"cdiv(n_elements, BLOCK_SIZE)", "1", "1"}},
      {"args",
       {pointer_arg("x_ptr"),
        pointer_arg("y_ptr"),
        pointer_arg("out_ptr"),
        {{"name", "n_elements"}, {"kind", "int"}, {"types", {"i32", "i64"}}},
        {{"name", "scale"}, {"kind", "float"}, {"types", {"fp32"}}},
        {{"name", "flag"}, {"kind", "bool"}},
        {{"name", "BLOCK_SIZE"}, {"kind", "constexpr"}},
        {{"name", "ACC_TYPE"}, {"kind", "constexpr"}},
        {{"name", "EPS"}, {"kind", "constexpr"}}}},
      {"config",
       {{{"name", "BLOCK_SIZE"}, {"kind", "int"}, {"values", {256, 1024}}, {"default", 1024}},
        {{"name", "ACC_TYPE"}, {"kind", "dtype"}, {"values", {"fp32", "fp16"}}, {"default", "fp32"}},
        {{"name", "EPS"}, {"kind", "float"}, {"values", {1e-6, 0.5}}, {"default", 0.5}},
        {{"name", "num_warps"}, {"kind", "int"}, {"values", {4, 8}}, {"default", 4}}}},
      {"variants", add_variants},
  };

  Json odd_names = {
      {"name", "odd_names"},
      {"function", "_odd_kernel"},
      {"source", "C:\\kernels\\odd.py"},
      {"source_hash", "beef"},
      {"targets", {"sm_90a"}},
      {"grid", {"-(-(stream * 2 + 3)) /* \"quoted\" ?\?/ */", "max(stream, 4)", "1 \\"}},
      {"args",
       {{{"name", "new"}, {"kind", "pointer"}, {"dtypes", {"bf16"}}},
        {{"name", "stream"}, {"kind", "int"}, {"types", {"i64"}}},
        {{"name", "config"}, {"kind", "float"}, {"types", {"fp64"}}},
        {{"name", "stream_"}, {"kind", "bool"}},
        {{"name", "grid"}, {"kind", "int"}, {"types", {"i32"}}},
        {{"name", "int"}, {"kind", "constexpr"}}}},
      {"config", {{{"name", "int"}, {"kind", "bool"}, {"values", {false, true}}, {"default", true}}}},
      {"variants",
       {{{"id", "odd_names_0"},
         {"hash", "h"},
         {"specialization",
          {{{"arg", "new"}, {"dtype", "bf16"}, {"align", 0}},
           {{"arg", "stream"}, {"type", "i64"}, {"hint", 0}},
           {{"arg", "config"}, {"type", "fp64"}},
           {{"arg", "stream_"}, {"type", "i1"}},
           {{"arg", "grid"}, {"type", "i32"}, {"hint", 0}}}},
         {"config", {{"int", true}}},
         {"params", {"new", "stream", "config", "stream_", "grid"}},
         {"grid",
          {{arg("stream"), lit(2), op("mul"), lit(3), op("add"), op("neg"), op("neg"), lit(5), op("sub"), lit(7),
            op("div"), lit(9), op("mod"), lit(1), op("min")},
           {arg("stream"), lit(4), op("max")},
           {lit(std::numeric_limits<std::int64_t>::min()), lit(0), op("mul"), lit(1), op("add")}}},
         {"images", {image("odd_names_0", "sm_90a", "_odd_kernel", 777, 50, 8)}}}}},
  };

  Json noop = {
      {"name", "noop"},
      {"function", "noop_kernel"},
      {"source", "noop.py"},
      {"source_hash", "0"},
      {"targets", {"sm_80"}},
      {"grid", {"1", "1", "1"}},
      {"args", {{{"name", "N"}, {"kind", "constexpr"}}}},
      {"config", Json::array()},
      {"variants",
       {{{"id", "noop_0"},
         {"hash", "h0"},
         {"specialization", Json::array()},
         {"config", Json::object()},
         {"params", Json::array()},
         {"grid", {{lit(1)}, {lit(1)}, {lit(1)}}},
         {"images", {image("noop_0", "sm_80", "noop_kernel", 64, 60, 1)}}}}},
  };

  // features: what schema 2 added. bias_ptr may be None (variants 0 and 2 compile it None),
  // n_rows is launch-only, ACTIVATION a string constexpr, the grid reads num_sms; variant 1 has
  // only an sm_90a image and variant 2 only an sm_80 one.
  Json feature_variants = Json::array();
  const struct {
    bool none;
    const char* activation;
    std::vector<std::string> targets;
  } feature_choices[] = {{true, "gelu", {"sm_80", "sm_90a"}}, {false, "relu", {"sm_90a"}}, {true, "relu", {"sm_80"}}};
  for (std::size_t v = 0; v < std::size(feature_choices); ++v) {
    const auto& choice = feature_choices[v];
    const std::string id = "features_" + std::to_string(v);
    Json bias = {{"arg", "bias_ptr"}, {"dtype", "fp16"}, {"align", 0}};
    if (choice.none) bias["none"] = true;
    Json params = choice.none ? Json{"x_ptr", "n"} : Json{"x_ptr", "bias_ptr", "n"};
    Json images = Json::array();
    for (const std::string& target : choice.targets)
      images.push_back(image(id, target, "features_kernel", 500 + 10 * v, static_cast<unsigned>(70 + v), 4));
    feature_variants.push_back({
        {"id", id},
        {"hash", "h" + id},
        {"specialization",
         {{{"arg", "x_ptr"}, {"dtype", "fp32"}, {"align", 16}},
          bias,
          {{"arg", "n"}, {"type", "i32"}, {"hint", 0}},
          {{"arg", "n_rows"}, {"type", "i32"}, {"hint", 0}}}},
        {"config", {{"ACTIVATION", choice.activation}, {"num_warps", 4}}},
        {"params", params},
        {"grid", {{arg("n_rows"), {{"op", "num_sms"}}, op("min")}, {lit(1)}, {lit(1)}}},
        {"images", images},
    });
  }
  Json features = {
      {"name", "features"},
      {"function", "features_kernel"},
      {"source", "features.py"},
      {"source_hash", "f"},
      {"targets", {"sm_80", "sm_90a"}},
      {"grid", {"min(n_rows, num_sms)", "1", "1"}},
      {"tuning_key", {"n"}},
      {"autotune", {{"at_first_call", true}, {"fields", {"num_warps", "ACTIVATION"}}, {"reset_to_zero", {"x_ptr"}}}},
      {"parameters", {"x_ptr", "bias_ptr", "n", "ACTIVATION", "EVEN"}},  // EVEN: kept at its default
      {"heuristics",
       {{{"field", "num_warps"},
         {"expression", "4 if n < 4096 else 8"},
         {"program",
          {{{"op", "arg"}, {"name", "n"}}, {{"op", "lit"}, {"value", 4096}}, {{"op", "lt"}}, {{"op", "jz"}, {"to", 6}},
           {{"op", "lit"}, {"value", 4}}, {{"op", "jmp"}, {"to", 7}}, {{"op", "lit"}, {"value", 8}}}}}}},
      {"requires",
       {{{"expression", "bias_ptr is None or n % 2 == 0"},
         {"program",
          {{{"op", "isnone"}, {"name", "bias_ptr"}}, {{"op", "jnz"}, {"to", 9}}, {{"op", "arg"}, {"name", "n"}},
           {{"op", "lit"}, {"value", 2}}, {{"op", "mod"}}, {{"op", "not"}}, {{"op", "jnz"}, {"to", 9}},
           {{"op", "lit"}, {"value", 0}}, {{"op", "jmp"}, {"to", 10}}, {{"op", "lit"}, {"value", 1}}}}}}},
      {"args",
       {{{"name", "x_ptr"}, {"kind", "pointer"}, {"dtypes", {"fp32"}}, {"output", true}},
        {{"name", "bias_ptr"}, {"kind", "pointer"}, {"dtypes", {"fp16"}}, {"none", true}},
        {{"name", "n"}, {"kind", "int"}, {"types", {"i32"}}},
        {{"name", "ACTIVATION"}, {"kind", "constexpr"}},
        {{"name", "n_rows"}, {"kind", "int"}, {"types", {"i32"}}, {"launch_only", true}}}},
      {"config",
       {{{"name", "ACTIVATION"}, {"kind", "string"}, {"values", {"gelu", "relu"}}, {"default", "relu"}, {"required", true}},
        {{"name", "num_warps"}, {"kind", "int"}, {"values", {4}}, {"default", 4}}}},
      {"variants", feature_variants},
      {"tuning", {"tables/features_h100.json"}},
  };
  // A tuned table for features on the H100 (binning), with a device name that needs escaping in C.
  std::filesystem::create_directories(dir_ / "tables");
  write_file(dir_ / "tables/features_h100.json",
             R"({"schema": "taot.tuning", "schema_version": 1, "kernel": "features",
                 "device": "NVIDIA H100 80GB HBM3", "match": "floor", "key": ["n"],
                 "entries": [{"key": [4096], "config": {"ACTIVATION": "gelu"}},
                             {"key": [1], "config": {"ACTIVATION": "relu", "num_warps": 4}}]})");

  json = {
      {"schema", "taot.manifest"},
      {"schema_version", 2},
      {"triton_version", "3.6.0"},
      {"library", "demo"},
      {"spec", "../examples/demo/demo.toml"},
      {"targets", {"sm_80", "sm_90a"}},
      {"kernels", {add_kernel, odd_names, noop, features}},
  };
}

std::filesystem::path ManifestBuilder::write() const {
  const std::filesystem::path path = dir_ / "manifest.json";
  write_file(path, json.dump(2) + "\n");
  return path;
}

std::filesystem::path ManifestBuilder::cubin_path(std::size_t kernel, std::size_t variant, std::size_t image) const {
  return dir_ / json["kernels"][kernel]["variants"][variant]["images"][image]["cubin"].get<std::string>();
}

}  // namespace taot::codegen::testing
