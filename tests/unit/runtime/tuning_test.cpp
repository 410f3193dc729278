// Tuned tables: both file formats and every error they name, the check against a kernel, the
// lookup (nearest and floor, against a brute-force reference), per-device sets, loading while
// other threads read, $TAOT_TUNING_DIR, and Kernel / C ABI loading.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "taot/c_api.h"
#include "taot/runtime.h"
#include "taot/tuning_file.h"
#include "test_table.h"
#include "tuning.h"

namespace taot::testing {
namespace {

using table::TuningMatch;

template <class T>
std::string error_of(const Expected<T>& result) {
  return result.ok() ? "(no error)" : result.status().message();
}

Expected<TuningFile> parse(const std::string& text, const std::string& source = "tables/t.json") {
  return parse_tuning_file(text, source);
}

// A kernel with a tuning key (M, or M and N) and config fields of every kind.
struct TunedKernel {
  explicit TunedKernel(std::uint16_t key_count = 1) {
    kernel.library = "lib";
    kernel.name = "matmul";
    kernel.args = args;
    kernel.arg_count = 3;
    kernel.fields = fields;
    kernel.field_count = 7;
    kernel.tuning_key = key;
    kernel.tuning_key_count = key_count;
  }
  table::Arg args[3] = {{"x", table::ArgKind::pointer, nullptr, 0, false, 0, nullptr, 0, false, false},
                        {"M", table::ArgKind::int_scalar, nullptr, 0, false, 0, nullptr, 0, false, false},
                        {"N", table::ArgKind::int_scalar, nullptr, 0, false, 0, nullptr, 0, false, false}};
  table::TuningKeyPart key[2] = {{1, false}, {2, false}};
  std::int64_t block_m[4] = {16, 32, 64, 128};
  std::int64_t block_k[2] = {128, 256};
  std::int64_t warps[2] = {4, 8};
  double scale[2] = {0.5, 1.0};
  std::int64_t even[2] = {0, 1};
  std::int64_t dtypes[2] = {TAOT_DTYPE_FP16, TAOT_DTYPE_BF16};
  const char* acts[2] = {"relu", "gelu"};
  table::ConfigField fields[7] = {
      {"BLOCK_SIZE_M", table::FieldKind::int_value, block_m, nullptr, 4, 0, nullptr, false},
      {"BLOCK_SIZE_K", table::FieldKind::int_value, block_k, nullptr, 2, 0, nullptr, false},
      {"num_warps", table::FieldKind::int_value, warps, nullptr, 2, 0, nullptr, false},
      {"SCALE", table::FieldKind::float_value, nullptr, scale, 2, 0, nullptr, false},
      {"EVEN", table::FieldKind::bool_value, even, nullptr, 2, 0, nullptr, false},
      {"DTYPE", table::FieldKind::dtype_value, dtypes, nullptr, 2, 0, nullptr, false},
      {"ACT", table::FieldKind::string_value, nullptr, nullptr, 2, 0, acts, false},
  };
  table::KernelTable kernel{};
};

constexpr std::uint16_t kUnset = table::kUnsetValue;

// ---- taot's format ----

TEST(TuningFile, ReadsTaotFormat) {
  Expected<TuningFile> file = parse(R"({
    "schema": "taot.tuning", "schema_version": 1, "kernel": "matmul", "device": "NVIDIA H100 80GB HBM3",
    "match": "floor", "key": ["M", "N"], "library": "lib", "triton_version": "3.6.0", "note": "by hand",
    "measured": {"when": "today"},
    "entries": [
      {"key": [64, 128], "config": {"BLOCK_SIZE_M": 64, "num_warps": 4, "SCALE": 0.5, "EVEN": true,
                                    "DTYPE": "bf16", "ACT": "gelu"}, "measured": {"us": 12.5}},
      {"key": [1, 2], "config": {}}
    ]})");
  ASSERT_TRUE(file.ok()) << error_of(file);
  EXPECT_EQ(file->format, TuningFormat::taot);
  EXPECT_EQ(file->kernel, "matmul");
  EXPECT_EQ(file->device, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(file->match, TuningMatch::floor);
  EXPECT_EQ(file->key, (std::vector<std::string>{"M", "N"}));
  ASSERT_EQ(file->entries.size(), 2u);
  EXPECT_EQ(file->entries[0].key, (std::vector<std::int64_t>{64, 128}));
  const std::vector<TuningField>& config = file->entries[0].config;
  ASSERT_EQ(config.size(), 6u);
  EXPECT_EQ(config[0].name, "BLOCK_SIZE_M");  // file order
  EXPECT_EQ(config[0].value.integer, 64);
  EXPECT_EQ(config[2].value.kind, TuningValue::Kind::real);
  EXPECT_EQ(config[2].value.real, 0.5);
  EXPECT_EQ(config[3].value.kind, TuningValue::Kind::boolean);
  EXPECT_EQ(config[3].value.integer, 1);
  EXPECT_EQ(config[4].value.kind, TuningValue::Kind::text);
  EXPECT_EQ(config[4].value.text, "bf16");
  EXPECT_TRUE(file->entries[1].config.empty());
}

TEST(TuningFile, TaotFormatDefaultsAndDeviceOverride) {
  const std::string text = R"({"schema": "taot.tuning", "schema_version": 1, "kernel": "matmul", "key": ["M"],
                               "entries": [{"key": [1], "config": {"num_warps": 4}}]})";
  Expected<TuningFile> file = parse(text);
  ASSERT_TRUE(file.ok()) << error_of(file);
  EXPECT_EQ(file->device, "");  // any device
  EXPECT_EQ(file->match, TuningMatch::nearest);
  Expected<TuningFile> given = parse_tuning_file(text, "t.json", "NVIDIA H200");
  ASSERT_TRUE(given.ok());
  EXPECT_EQ(given->device, "NVIDIA H200");
}

// ---- vLLM's format ----

constexpr const char* kVllmText = R"({
  "triton_version": "3.3.0",
  "1": {"BLOCK_SIZE_M": 16, "BLOCK_SIZE_N": 32, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 1, "num_warps": 4, "num_stages": 4},
  "2": {"BLOCK_SIZE_M": 16, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 128, "GROUP_SIZE_M": 1, "num_warps": 4, "num_stages": 3},
  "1024": {"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 128, "GROUP_SIZE_M": 16, "num_warps": 8, "num_stages": 4}
})";

TEST(TuningFile, ReadsVllmFormat) {
  Expected<TuningFile> file = parse(kVllmText, "configs/E=8,N=14336,device_name=NVIDIA_H100_80GB_HBM3.json");
  ASSERT_TRUE(file.ok()) << error_of(file);
  EXPECT_EQ(file->format, TuningFormat::vllm);
  EXPECT_EQ(file->device, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(file->match, TuningMatch::nearest);
  EXPECT_TRUE(file->key.empty());
  ASSERT_EQ(file->entries.size(), 3u);  // "triton_version" is not an entry
  EXPECT_EQ(file->entries[2].key, (std::vector<std::int64_t>{1024}));
  ASSERT_EQ(file->entries[2].config.size(), 6u);
  EXPECT_EQ(file->entries[2].config[3].name, "GROUP_SIZE_M");
  EXPECT_EQ(file->entries[2].config[3].value.integer, 16);
}

TEST(TuningFile, VllmDeviceFromFileName) {
  const std::string entry = R"({"1": {"num_warps": 4}})";
  auto device = [&](const std::string& source) {
    Expected<TuningFile> file = parse(entry, source);
    return file.ok() ? file->device : "error: " + error_of(file);
  };
  EXPECT_EQ(device("E=8,N=14336,device_name=NVIDIA_H100_80GB_HBM3.json"), "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(device("/a/b/E=64,N=1280,device_name=NVIDIA_H200,dtype=fp8_w8a8,block_shape=[128,128].json"),
            "NVIDIA H200");
  EXPECT_EQ(device("E=16,N=1024,device_name=NVIDIA_A100-SXM4-80GB,dtype=int8_w8a16.json"), "NVIDIA A100-SXM4-80GB");
  EXPECT_EQ(device("E=8,N=14336.json"), "");  // no device: any
  EXPECT_EQ(device("table.json"), "");
  EXPECT_EQ(device("not_device_name=X.json"), "");  // only a whole part counts
  Expected<TuningFile> given = parse_tuning_file(entry, "E=8,device_name=NVIDIA_H100_80GB_HBM3.json", "NVIDIA H200");
  ASSERT_TRUE(given.ok());
  EXPECT_EQ(given->device, "NVIDIA H200");
}

// ---- what parsing refuses ----

TEST(TuningFile, ParseErrorsNameTheSourceTheEntryAndTheValue) {
  struct Case {
    const char* text;
    const char* message;
  };
  const std::string head = R"({"schema": "taot.tuning", "schema_version": 1, "kernel": "matmul", "key": ["M"], )";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"1": {"num_warps": 4},})",
       "tables/t.json: not valid JSON: parse error at line 1, column 24: syntax error while parsing object key - "
       "unexpected '}'; expected string literal"},
      {"{\n  \"1\": {\"num_warps\": 4}\n  \"2\": {}\n}",
       "tables/t.json: not valid JSON: parse error at line 3, column 5: syntax error while parsing object - "
       "unexpected string literal; expected '}'"},
      {R"([1, 2])",
       "tables/t.json: the file holds [1,2]; expected a table: an object with \"schema\": \"taot.tuning\", or "
       "vLLM's {\"<M>\": {config}, ...}"},
      {R"({"M=1": {"num_warps": 4}})",
       "tables/t.json: entry \"M=1\": the key is not an integer (vLLM tables map M, as text, to a config)"},
      {R"({"1.5": {"num_warps": 4}})",
       "tables/t.json: entry \"1.5\": the key is not an integer (vLLM tables map M, as text, to a config)"},
      {R"({"16": {"num_warps": {"value": 4}}})",
       "tables/t.json: entry \"16\": num_warps is an object; a config value is an int, a float, a bool or a string"},
      {R"({"16": {"num_warps": [4, 8]}})",
       "tables/t.json: entry \"16\": num_warps is [4,8]; a config value is an int, a float, a bool or a string"},
      {R"({"16": {"num_warps": null}})",
       "tables/t.json: entry \"16\": num_warps is null; a config value is an int, a float, a bool or a string"},
      {R"({"16": {"num_warps": 18446744073709551615}})",
       "tables/t.json: entry \"16\": num_warps=18446744073709551615 is out of range (64-bit ints)"},
      {R"({"16": 4})",
       "tables/t.json: entry \"16\": the config is 4; expected an object of field values"},
      {R"({"16": {"num_warps": 4}, "16": {"num_warps": 8}})", "tables/t.json: entry \"16\" is given twice"},
      {R"({"16": {"num_warps": 4, "num_warps": 8}})",
       "tables/t.json: entry \"16\": \"num_warps\" is given twice"},
      {R"({})", "tables/t.json: the table has no entries"},
      {R"({"triton_version": "3.3.0"})", "tables/t.json: the table has no entries"},
      {R"({"schema": "vllm", "1": {}})", "tables/t.json: schema is \"vllm\"; expected \"taot.tuning\""},
      {R"({"schema": "taot.tuning", "schema_version": 2})",
       "tables/t.json: schema_version is 2; this taot reads version 1"},
      {R"({"schema": "taot.tuning"})", "tables/t.json: \"schema_version\" is missing: expected 1"},
      {head + R"("kernal": "x", "entries": [{"key": [1], "config": {}}]})",
       "tables/t.json: unknown key \"kernal\"; the keys are schema, schema_version, kernel, device, match, key, "
       "entries (and, informational: library, library_id, triton_version, measured, note)"},
      {R"({"schema": "taot.tuning", "schema_version": 1, "key": ["M"], "entries": []})",
       "tables/t.json: \"kernel\" is missing: the kernel's name"},
      {R"({"schema": "taot.tuning", "schema_version": 1, "kernel": 3, "key": ["M"], "entries": []})",
       "tables/t.json: \"kernel\" is 3; expected the kernel's name"},
      {head + R"("match": "closest", "entries": [{"key": [1], "config": {}}]})",
       "tables/t.json: match is \"closest\"; expected \"nearest\" or \"floor\""},
      {R"({"schema": "taot.tuning", "schema_version": 1, "kernel": "matmul", "key": [], "entries": []})",
       "tables/t.json: \"key\" is []; expected a non-empty list of the tuning key's argument names, such as [\"M\"]"},
      {R"({"schema": "taot.tuning", "schema_version": 1, "kernel": "matmul", "key": ["M", "M"], "entries": []})",
       "tables/t.json: \"key\" names \"M\" twice"},
      {head + R"("entries": []})",
       "tables/t.json: \"entries\" is []; expected a non-empty list of {\"key\": [...], \"config\": {...}}"},
      {head + R"("entries": [{"key": [1], "config": {}}, {"key": [2, 3], "config": {}}]})",
       "tables/t.json: entries[1]: the key is [2,3]; expected a list of 1 integers (M)"},
      {head + R"("entries": [{"key": [1.5], "config": {}}]})",
       "tables/t.json: entries[0]: the key holds 1.5; expected integers (M)"},
      {head + R"("entries": [{"key": ["64"], "config": {}}]})",
       "tables/t.json: entries[0]: the key holds \"64\"; expected integers (M)"},
      {head + R"("entries": [{"key": [64]}]})", "tables/t.json: entries[0]: \"config\" is missing"},
      {head + R"("entries": [{"key": [64], "config": {}, "time": 3}]})",
       "tables/t.json: entries[0]: unknown key \"time\"; an entry has key, config (and, informational: measured)"},
      {head + R"("entries": [{"key": [64], "config": {"ACT": {"name": "relu"}}}]})",
       "tables/t.json: entry M=64: ACT is an object; a config value is an int, a float, a bool or a string"},
      {head + R"("entries": [{"key": [1], "config": {}}, {"key": [64], "config": {"A": 1, "A": 2}}]})",
       "tables/t.json: entries[1].config: \"A\" is given twice"},
      {head + R"("kernel": "again", "entries": [{"key": [1], "config": {}}]})",
       "tables/t.json: \"kernel\" is given twice"},
  };
  for (const auto& [text, message] : cases) {
    Expected<TuningFile> file = parse(text);
    EXPECT_EQ(error_of(file), message) << text;
    if (!file.ok()) {
      EXPECT_EQ(file.status().code(), TAOT_INVALID_ARGUMENT);
    }
  }
}

TEST(TuningFile, ReadingAMissingFileNamesIt) {
  Expected<TuningFile> file = read_tuning_file("/nonexistent/tables/x.json");
  EXPECT_EQ(error_of(file), "/nonexistent/tables/x.json: cannot read the tuning file (missing or unreadable)");
}

TEST(TuningFile, SameDeviceNameTreatsUnderscoresAsSpaces) {
  EXPECT_TRUE(same_device_name("NVIDIA H100 80GB HBM3", "NVIDIA_H100_80GB_HBM3"));
  EXPECT_TRUE(same_device_name("NVIDIA_H200", "NVIDIA H200"));
  EXPECT_FALSE(same_device_name("NVIDIA H100", "NVIDIA H100 80GB HBM3"));
  EXPECT_FALSE(same_device_name("NVIDIA H100", "NVIDIA H200"));
  EXPECT_TRUE(same_device_name("", ""));
}

// ---- the check against a kernel ----

Expected<detail::OwnedTable> resolve(const std::string& text, const TunedKernel& kernel,
                                     const std::string& source = "tables/x.json") {
  Expected<TuningFile> file = parse_tuning_file(text, source);
  if (!file.ok()) return std::move(file).take_status();
  return detail::resolve_tuning(*file, kernel.kernel);
}

std::string taot_table(const std::string& entries, const std::string& key = R"(["M"])",
                       const std::string& kernel = "matmul") {
  return R"({"schema": "taot.tuning", "schema_version": 1, "kernel": ")" + kernel + R"(", "key": )" + key +
         R"(, "entries": [)" + entries + "]}";
}

TEST(TuningResolve, SortsEntriesAndIndexesValues) {
  TunedKernel kernel;
  Expected<detail::OwnedTable> table = resolve(taot_table(
      R"({"key": [64], "config": {"BLOCK_SIZE_K": 128, "num_warps": 8, "SCALE": 1, "EVEN": false, "DTYPE": "bf16", "ACT": "gelu"}},
         {"key": [1], "config": {"BLOCK_SIZE_M": 16, "SCALE": 0.5, "EVEN": 1}})"),
      kernel);
  ASSERT_TRUE(table.ok()) << error_of(table);
  EXPECT_EQ(table->entry_count, 2u);
  EXPECT_EQ(table->keys, (std::vector<std::int64_t>{1, 64}));
  EXPECT_EQ(table->configs, (std::vector<std::uint16_t>{0, kUnset, kUnset, 0, 1, kUnset, kUnset,  //
                                                         kUnset, 0, 1, 1, 0, 1, 1}));
  EXPECT_EQ(table->source, "tables/x.json");
  const table::TunedTable view = table->view();
  EXPECT_EQ(view.entry_count, 2u);
  EXPECT_EQ(view.keys[1], 64);
  EXPECT_STREQ(view.device, "");
}

TEST(TuningResolve, VllmTableTakesTheOneArgumentKey) {
  TunedKernel kernel;
  Expected<detail::OwnedTable> table = resolve(R"({"4096": {"BLOCK_SIZE_M": 128}, "16": {"BLOCK_SIZE_M": 32}})",
                                               kernel, "E=8,N=14336,device_name=NVIDIA_H100_80GB_HBM3.json");
  ASSERT_TRUE(table.ok()) << error_of(table);
  EXPECT_EQ(table->device, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(table->keys, (std::vector<std::int64_t>{16, 4096}));
  EXPECT_EQ(table->configs[0], 1);
  EXPECT_EQ(table->configs[7], 3);
}

TEST(TuningResolve, ErrorsNameTheFileTheKeyTheFieldAndTheCompiledValues) {
  TunedKernel kernel;
  TunedKernel two_dimensional(2);
  TunedKernel keyless(0);
  EXPECT_EQ(resolve(taot_table(R"({"key": [64], "config": {"BLOCK_SIZE_K": 64}})"), kernel).status().code(),
            TAOT_INVALID_ARGUMENT);
  auto resolve = [](const std::string& text, const TunedKernel& kernel) {
    return error_of(::taot::testing::resolve(text, kernel));
  };
  const std::vector<std::pair<std::string, std::string>> cases = {
      {resolve(taot_table(R"({"key": [64], "config": {"BLOCK_SIZE_K": 64}})"), kernel),
       "tables/x.json: entry M=64: BLOCK_SIZE_K=64 was not compiled; compiled values: 128, 256"},
      {resolve(taot_table(R"({"key": [64, 8], "config": {"BLOCK_SIZE_K": 64}})", R"(["M", "N"])"), two_dimensional),
       "tables/x.json: entry M=64, N=8: BLOCK_SIZE_K=64 was not compiled; compiled values: 128, 256"},
      {resolve(R"({"64": {"BLOCK_SIZE_N": 64}})", kernel),
       "tables/x.json: entry M=64: BLOCK_SIZE_N is not a config field of kernel \"matmul\"; the fields are: "
       "BLOCK_SIZE_M, BLOCK_SIZE_K, num_warps, SCALE, EVEN, DTYPE, ACT"},
      {resolve(taot_table(R"({"key": [1], "config": {"SCALE": 0.25}})"), kernel),
       "tables/x.json: entry M=1: SCALE=0.25 was not compiled; compiled values: 0.5, 1"},
      {resolve(taot_table(R"({"key": [1], "config": {"DTYPE": "fp32"}})"), kernel),
       "tables/x.json: entry M=1: DTYPE=fp32 was not compiled; compiled values: fp16, bf16"},
      {resolve(taot_table(R"({"key": [1], "config": {"DTYPE": "float"}})"), kernel),
       "tables/x.json: entry M=1: DTYPE=float was not compiled; compiled values: fp16, bf16"},
      {resolve(taot_table(R"({"key": [1], "config": {"ACT": "silu"}})"), kernel),
       "tables/x.json: entry M=1: ACT=\"silu\" was not compiled; compiled values: \"relu\", \"gelu\""},
      {resolve(taot_table(R"({"key": [1], "config": {"num_warps": "4"}})"), kernel),
       "tables/x.json: entry M=1: num_warps takes an int; got \"4\""},
      {resolve(taot_table(R"({"key": [1], "config": {"num_warps": 4.0}})"), kernel),
       "tables/x.json: entry M=1: num_warps takes an int; got 4"},
      {resolve(taot_table(R"({"key": [1], "config": {"num_warps": true}})"), kernel),
       "tables/x.json: entry M=1: num_warps takes an int; got true"},
      {resolve(taot_table(R"({"key": [1], "config": {"EVEN": 2}})"), kernel),
       "tables/x.json: entry M=1: EVEN takes a bool; got 2"},
      {resolve(taot_table(R"({"key": [1], "config": {"DTYPE": 3}})"), kernel),
       "tables/x.json: entry M=1: DTYPE takes a dtype name; got 3"},
      {resolve(taot_table(R"({"key": [1], "config": {"SCALE": "half"}})"), kernel),
       "tables/x.json: entry M=1: SCALE takes a float; got \"half\""},
      {resolve(R"({"16": {"num_warps": 4}, "016": {"num_warps": 8}})", kernel),
       "tables/x.json: entry M=16 is given twice"},
      {resolve(taot_table(R"({"key": [4], "config": {}}, {"key": [4], "config": {}})"), kernel),
       "tables/x.json: entry M=4 is given twice"},
      {resolve(taot_table(R"({"key": [1], "config": {}})", R"(["M"])", "softmax"), kernel),
       "tables/x.json: the table is for kernel \"softmax\", not \"matmul\""},
      {resolve(taot_table(R"({"key": [1], "config": {}})", R"(["N"])"), kernel),
       "tables/x.json: the table's key is [N]; the tuning key of kernel \"matmul\" is [M]"},
      {resolve(taot_table(R"({"key": [1], "config": {}})"), two_dimensional),
       "tables/x.json: the table's key is [M]; the tuning key of kernel \"matmul\" is [M, N]"},
      {resolve(R"({"16": {"num_warps": 4}})", two_dimensional),
       "tables/x.json: a vLLM table is keyed by one argument; the tuning key of kernel \"matmul\" is [M, N]"},
      {resolve(R"({"16": {"num_warps": 4}})", keyless),
       "tables/x.json: a vLLM table is keyed by one argument; kernel \"matmul\" has no tuning key (the spec's "
       "tuning_key, or @triton.autotune's key)"},
  };
  for (const auto& [result, message] : cases) EXPECT_EQ(result, message);
}

// ---- lookup ----

struct Table {
  std::vector<std::int64_t> keys;
  std::size_t key_count;
  TuningMatch match;
  table::TunedTable view() const {
    return {"", "test", match, static_cast<std::uint32_t>(keys.size() / key_count), keys.data(), nullptr};
  }
  std::size_t lookup(std::vector<std::int64_t> key) const { return detail::lookup_entry(view(), key_count, key.data()); }
};

TEST(TuningLookup, NearestPicksTheSmallerKeyOnATie) {
  const Table table{{1, 2, 4, 8, 16, 64, 1024}, 1, TuningMatch::nearest};
  EXPECT_EQ(table.lookup({-5}), 0u);    // below the range: the first
  EXPECT_EQ(table.lookup({1}), 0u);
  EXPECT_EQ(table.lookup({3}), 1u);     // 2 and 4 tie: 2
  EXPECT_EQ(table.lookup({6}), 2u);     // 4 and 8 tie: 4
  EXPECT_EQ(table.lookup({7}), 3u);
  EXPECT_EQ(table.lookup({40}), 4u);    // 16 and 64 tie: 16
  EXPECT_EQ(table.lookup({41}), 5u);
  EXPECT_EQ(table.lookup({544}), 5u);   // 64 and 1024 tie: 64
  EXPECT_EQ(table.lookup({545}), 6u);
  EXPECT_EQ(table.lookup({1 << 30}), 6u);  // above the range: the last
  const Table single{{32}, 1, TuningMatch::nearest};
  EXPECT_EQ(single.lookup({1}), 0u);
  EXPECT_EQ(single.lookup({100}), 0u);
}

TEST(TuningLookup, FloorPicksTheLargestKeyNotAbove) {
  const Table table{{16, 64, 256}, 1, TuningMatch::floor};
  EXPECT_EQ(table.lookup({1}), 0u);  // below the first: the first
  EXPECT_EQ(table.lookup({16}), 0u);
  EXPECT_EQ(table.lookup({63}), 0u);
  EXPECT_EQ(table.lookup({64}), 1u);
  EXPECT_EQ(table.lookup({255}), 1u);
  EXPECT_EQ(table.lookup({256}), 2u);
  EXPECT_EQ(table.lookup({100000}), 2u);
}

TEST(TuningLookup, TwoDimensionsChooseInKeyOrder) {
  // M 16: N 128, 512; M 64: N 256; M 128: N 64, 1024.
  const std::vector<std::int64_t> keys = {16, 128, 16, 512, 64, 256, 128, 64, 128, 1024};
  const Table nearest{keys, 2, TuningMatch::nearest};
  EXPECT_EQ(nearest.lookup({20, 300}), 0u);   // M 16; N 300 is nearer 128 (172) than 512 (212)
  EXPECT_EQ(nearest.lookup({20, 320}), 0u);   // N 320: 128 and 512 tie: 128
  EXPECT_EQ(nearest.lookup({20, 321}), 1u);
  EXPECT_EQ(nearest.lookup({60, 1}), 2u);     // M 64 holds only N 256
  EXPECT_EQ(nearest.lookup({96, 2000}), 2u);  // M 64 and 128 tie: 64 (N is then 256 whatever it asks)
  EXPECT_EQ(nearest.lookup({97, 2000}), 4u);
  EXPECT_EQ(nearest.lookup({5000, 500}), 3u); // N 500 is nearer 64 (436) than 1024 (524)
  const Table floor{keys, 2, TuningMatch::floor};
  EXPECT_EQ(floor.lookup({1, 1}), 0u);
  EXPECT_EQ(floor.lookup({63, 511}), 0u);
  EXPECT_EQ(floor.lookup({63, 512}), 1u);
  EXPECT_EQ(floor.lookup({127, 1}), 2u);
  EXPECT_EQ(floor.lookup({128, 1023}), 3u);
  EXPECT_EQ(floor.lookup({128, 1024}), 4u);
}

// The rule as written: per dimension, among the entries matching the dimensions already chosen,
// the value with the smallest |key - value| and then the smaller key (nearest), or the largest key
// not above the value, else the smallest (floor).
std::size_t reference_lookup(const Table& table, const std::vector<std::int64_t>& key) {
  const std::size_t count = table.keys.size() / table.key_count;
  std::vector<std::size_t> candidates(count);
  for (std::size_t e = 0; e < count; ++e) candidates[e] = e;
  for (std::size_t d = 0; d < table.key_count; ++d) {
    auto at = [&](std::size_t e) { return table.keys[e * table.key_count + d]; };
    std::int64_t best = at(candidates[0]);
    for (std::size_t e : candidates) {
      const std::int64_t value = at(e);
      if (table.match == TuningMatch::nearest) {
        auto distance = [](std::int64_t a, std::int64_t b) {  // |a - b|, which fits in 64 unsigned bits
          return a > b ? std::uint64_t(a) - std::uint64_t(b) : std::uint64_t(b) - std::uint64_t(a);
        };
        const std::uint64_t gap = distance(value, key[d]), best_gap = distance(best, key[d]);
        if (gap < best_gap || (gap == best_gap && value < best)) best = value;
      } else {
        const bool fits = value <= key[d], best_fits = best <= key[d];
        if ((fits && (!best_fits || value > best)) || (!fits && !best_fits && value < best)) best = value;
      }
    }
    std::vector<std::size_t> kept;
    for (std::size_t e : candidates)
      if (at(e) == best) kept.push_back(e);
    candidates = kept;
  }
  return candidates.at(0);
}

Table random_table(std::mt19937_64& random, std::size_t key_count, TuningMatch match, std::int64_t span) {
  std::uniform_int_distribution<std::int64_t> value(-span, span);
  std::uniform_int_distribution<std::size_t> size(1, 40);
  std::vector<std::vector<std::int64_t>> rows(size(random));
  for (auto& row : rows) {
    row.resize(key_count);
    for (std::int64_t& v : row) v = value(random) / (key_count > 1 ? span / 4 + 1 : 1) * (key_count > 1 ? 8 : 1);
  }
  std::sort(rows.begin(), rows.end());
  rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
  Table table{{}, key_count, match};
  for (const auto& row : rows) table.keys.insert(table.keys.end(), row.begin(), row.end());
  return table;
}

TEST(TuningLookup, AgreesWithABruteForceReference) {
  std::mt19937_64 random(20240611);
  for (std::size_t key_count : {1, 2, 3}) {
    for (TuningMatch match : {TuningMatch::nearest, TuningMatch::floor}) {
      for (int round = 0; round < 60; ++round) {
        const std::int64_t span = round % 3 == 0 ? 20 : 5000;
        const Table table = random_table(random, key_count, match, span);
        std::uniform_int_distribution<std::int64_t> value(-span - 10, span + 10);
        for (int probe = 0; probe < 200; ++probe) {
          std::vector<std::int64_t> key(key_count);
          for (std::int64_t& v : key) v = value(random);
          ASSERT_EQ(table.lookup(key), reference_lookup(table, key))
              << "key_count " << key_count << ", round " << round << ", probe " << probe;
        }
      }
    }
  }
}

TEST(TuningLookup, ExtremeValuesDoNotOverflow) {
  constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min();
  constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
  const Table table{{kMin, 0, kMax}, 1, TuningMatch::nearest};
  for (std::int64_t value : {kMin, kMin + 1, std::int64_t{-1}, std::int64_t{0}, std::int64_t{1}, kMax - 1, kMax,
                             kMin / 2, kMin / 2 - 1, kMax / 2, kMax / 2 + 1})
    EXPECT_EQ(table.lookup({value}), reference_lookup(table, {value})) << value;
}

// ---- per-device sets ----

detail::OwnedTable owned(const std::string& device, std::int64_t key, const std::string& source = "loaded.json") {
  detail::OwnedTable table;
  table.device = device;
  table.source = source;
  table.entry_count = 1;
  table.key_count = 1;
  table.field_count = 1;
  table.keys = {key};
  table.configs = {0};
  return table;
}

struct BakedTables {
  BakedTables() {
    kernel.tuned = tuned;
    kernel.tuned_count = 2;
  }
  std::int64_t h100_keys[1] = {100};
  std::int64_t any_keys[1] = {1};
  std::uint16_t configs[1] = {0};
  table::TunedTable tuned[2] = {{"NVIDIA H100 80GB HBM3", "baked_h100.json", TuningMatch::nearest, 1, h100_keys, configs},
                                {"", "baked_any.json", TuningMatch::nearest, 1, any_keys, configs}};
  table::KernelTable kernel{};
};

TEST(TuningSet, PicksTheDeviceTableElseTheAnyDeviceTable) {
  BakedTables baked;
  std::unique_ptr<detail::TuningSet> set = detail::TuningSet::baked(baked.kernel);
  ASSERT_FALSE(set->empty());
  EXPECT_STREQ(set->for_device("NVIDIA H100 80GB HBM3")->source, "baked_h100.json");
  EXPECT_STREQ(set->for_device("NVIDIA_H100_80GB_HBM3")->source, "baked_h100.json");
  EXPECT_STREQ(set->for_device("NVIDIA H200")->source, "baked_any.json");
  EXPECT_STREQ(set->for_device("")->source, "baked_any.json");  // no context: the any-device table

  table::KernelTable none{};
  std::unique_ptr<detail::TuningSet> empty = detail::TuningSet::baked(none);
  EXPECT_TRUE(empty->empty());
  EXPECT_EQ(empty->for_device("NVIDIA H100 80GB HBM3"), nullptr);
  std::unique_ptr<detail::TuningSet> only_h200 = detail::TuningSet::with(*empty, owned("NVIDIA_H200", 5));
  EXPECT_EQ(only_h200->for_device("NVIDIA H100 80GB HBM3"), nullptr);  // no table: the next step
  EXPECT_EQ(only_h200->for_device("NVIDIA H200")->keys[0], 5);
}

TEST(TuningSet, ALoadedTableReplacesTheOneForItsDevice) {
  BakedTables baked;
  detail::TuningHolder holder(baked.kernel);
  const detail::TuningSet& first = holder.current();
  holder.load(owned("NVIDIA_H100_80GB_HBM3", 7, "h100.json"));  // vLLM's spelling of the same device
  EXPECT_EQ(holder.current().size(), 2u);
  EXPECT_STREQ(holder.current().for_device("NVIDIA H100 80GB HBM3")->source, "h100.json");
  EXPECT_EQ(holder.current().for_device("NVIDIA H100 80GB HBM3")->keys[0], 7);
  EXPECT_STREQ(holder.current().for_device("NVIDIA A100")->source, "baked_any.json");
  // The replaced set is unchanged for whoever still reads it.
  EXPECT_STREQ(first.for_device("NVIDIA H100 80GB HBM3")->source, "baked_h100.json");

  holder.load(owned("", 9, "any.json"));
  holder.load(owned("NVIDIA H200", 11, "h200.json"));
  EXPECT_EQ(holder.current().size(), 3u);
  EXPECT_STREQ(holder.current().for_device("NVIDIA A100")->source, "any.json");
  EXPECT_STREQ(holder.current().for_device("NVIDIA H200")->source, "h200.json");
  holder.load(owned("NVIDIA H100 80GB HBM3", 8, "h100_again.json"));
  EXPECT_EQ(holder.current().for_device("NVIDIA H100 80GB HBM3")->keys[0], 8);

  holder.reset();
  EXPECT_EQ(&holder.current(), &first);
  EXPECT_STREQ(holder.current().for_device("NVIDIA H100 80GB HBM3")->source, "baked_h100.json");
  EXPECT_STREQ(holder.current().for_device("NVIDIA H200")->source, "baked_any.json");
}

// Readers take current() and look up while a writer loads and resets: run under ThreadSanitizer
// (scripts/sanitize.sh tsan), a missing barrier between building a set and publishing it shows.
TEST(TuningSet, LoadingWhileOtherThreadsLookUpIsSafe) {
  BakedTables baked;
  detail::TuningHolder holder(baked.kernel);
  std::atomic<bool> done{false};
  std::atomic<int> started{0};
  std::atomic<std::int64_t> seen{0};
  std::vector<std::thread> readers;
  for (int r = 0; r < 4; ++r) {
    readers.emplace_back([&, r] {
      const char* device = r % 2 ? "NVIDIA H100 80GB HBM3" : "NVIDIA H200";
      std::int64_t sum = 0;
      ++started;
      for (int lookups = 0; lookups < 1000 || !done.load(std::memory_order_acquire); ++lookups) {
        const table::TunedTable* tuned = holder.current().for_device(device);
        const std::int64_t key = 100 + r;
        const std::size_t entry = detail::lookup_entry(*tuned, 1, &key);
        sum += tuned->keys[entry] + tuned->configs[entry];
      }
      seen += sum;
    });
  }
  while (started.load() < 4) std::this_thread::yield();
  for (int round = 0; round < 200; ++round) {
    detail::OwnedTable table;
    table.device = round % 2 ? "NVIDIA H100 80GB HBM3" : "";
    table.source = "round.json";
    table.entry_count = 3;
    table.key_count = 1;
    table.field_count = 1;
    table.keys = {round, round + 50, round + 100};
    table.configs = {0, 1, 0};
    holder.load(std::move(table));
    if (round % 50 == 49) holder.reset();
  }
  done.store(true, std::memory_order_release);
  for (std::thread& reader : readers) reader.join();
  EXPECT_GT(seen.load(), 0);
}

// ---- $TAOT_TUNING_DIR ----

class TemporaryFolder {
 public:
  TemporaryFolder() {
    path_ = std::filesystem::temp_directory_path() /
            ("taot_tuning_test_" + std::to_string(std::random_device{}()) + std::to_string(counter_++));
    std::filesystem::create_directories(path_);
  }
  ~TemporaryFolder() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  const std::filesystem::path& path() const { return path_; }
  void write(const std::filesystem::path& relative, const std::string& text) const {
    std::filesystem::create_directories((path_ / relative).parent_path());
    std::ofstream(path_ / relative) << text;
  }

 private:
  static inline int counter_ = 0;
  std::filesystem::path path_;
};

class ScopedEnvironment {
 public:
  ScopedEnvironment(const char* name, const std::string& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old, had_ = true;
    setenv(name, value.c_str(), 1);
  }
  ~ScopedEnvironment() {
    if (had_) setenv(name_, old_.c_str(), 1);
    else unsetenv(name_);
  }

 private:
  const char* name_;
  std::string old_;
  bool had_ = false;
};

TEST(TuningDirectory, LoadsEveryJsonFileOfTheKernelsFolderInNameOrder) {
  TemporaryFolder folder;
  TunedKernel kernel;
  // Two tables for the H100: the later name wins. A file that is not .json is left alone.
  folder.write("lib/matmul/a.json", R"({"1": {"BLOCK_SIZE_M": 16}, "device_name_is_not_in_name": {}})");
  folder.write("lib/matmul/E=8,device_name=NVIDIA_H100_80GB_HBM3.json", R"({"1": {"BLOCK_SIZE_M": 32}})");
  folder.write("lib/matmul/F=8,device_name=NVIDIA_H100_80GB_HBM3.json", R"({"1": {"BLOCK_SIZE_M": 64}})");
  folder.write("lib/matmul/notes.txt", "not a table");
  folder.write("lib/other/x.json", "not even JSON");
  {
    // a.json is bad: its second key is no integer; the error names it and the variable.
    ScopedEnvironment environment("TAOT_TUNING_DIR", folder.path().string());
    detail::TuningHolder holder(kernel.kernel);
    const Status status = detail::load_tuning_directory(holder, kernel.kernel);
    EXPECT_EQ(status.message(), "$TAOT_TUNING_DIR: " + (folder.path() / "lib/matmul/a.json").string() +
                                    ": entry \"device_name_is_not_in_name\": the key is not an integer (vLLM "
                                    "tables map M, as text, to a config)");
  }
  folder.write("lib/matmul/a.json", R"({"1": {"BLOCK_SIZE_M": 16}})");
  ScopedEnvironment environment("TAOT_TUNING_DIR", folder.path().string());
  detail::TuningHolder holder(kernel.kernel);
  ASSERT_TRUE(detail::load_tuning_directory(holder, kernel.kernel).ok());
  EXPECT_EQ(holder.current().size(), 2u);
  EXPECT_EQ(holder.current().for_device("NVIDIA H100 80GB HBM3")->configs[0], 2);  // BLOCK_SIZE_M 64
  EXPECT_EQ(holder.current().for_device("NVIDIA H200")->configs[0], 0);            // a.json: any device
}

TEST(TuningDirectory, NoVariableOrNoFolderLoadsNothing) {
  TunedKernel kernel;
  TemporaryFolder folder;
  for (const std::string& value : {std::string(), folder.path().string()}) {
    ScopedEnvironment environment("TAOT_TUNING_DIR", value);
    detail::TuningHolder holder(kernel.kernel);
    EXPECT_TRUE(detail::load_tuning_directory(holder, kernel.kernel).ok());
    EXPECT_TRUE(holder.current().empty());
  }
}

// ---- Kernel and the C ABI ----

TEST(KernelTuning, LoadsChecksAndResets) {
  AddKernelTable table;
  const table::TuningKeyPart key[] = {{3, false}};  // n_elements
  table.kernel.tuning_key = key;
  table.kernel.tuning_key_count = 1;
  Kernel kernel(table.kernel);
  EXPECT_TRUE(kernel.load_tuning_text(R"({"1000": {"BLOCK_SIZE": 256}})", "inline.json").ok());
  const Status bad = kernel.load_tuning_text(R"({"1000": {"BLOCK_SIZE": 512}})", "inline.json");
  EXPECT_EQ(bad.message(), "testlib::add_kernel: inline.json: entry n_elements=1000: BLOCK_SIZE=512 was not compiled; "
                           "compiled values: 256, 1024");
  EXPECT_EQ(kernel.load_tuning_text("{", "broken.json").message(),
            "testlib::add_kernel: broken.json: not valid JSON: parse error at line 1, column 2: syntax error while "
            "parsing object key - unexpected end of input; expected string literal");
  EXPECT_EQ(kernel.load_tuning("/nonexistent.json").message(),
            "testlib::add_kernel: /nonexistent.json: cannot read the tuning file (missing or unreadable)");
  TemporaryFolder folder;
  folder.write("E=1,device_name=NVIDIA_H200.json", R"({"1": {"num_warps": 8}})");
  EXPECT_TRUE(kernel.load_tuning((folder.path() / "E=1,device_name=NVIDIA_H200.json").string()).ok());
  EXPECT_TRUE(kernel.load_tuning((folder.path() / "E=1,device_name=NVIDIA_H200.json").string(), "NVIDIA H100").ok());
  EXPECT_TRUE(kernel.reset_tuning().ok());
}

TEST(KernelTuning, CApiLoadsAndResetsAndSetsTheLastError) {
  AddKernelTable table;
  const table::TuningKeyPart key[] = {{3, false}};
  table.kernel.tuning_key = key;
  table.kernel.tuning_key_count = 1;
  Kernel kernel(table.kernel);
  TemporaryFolder folder;
  folder.write("good.json", R"({"schema": "taot.tuning", "schema_version": 1, "kernel": "add_kernel", "key": ["n_elements"],
                                "match": "floor", "entries": [{"key": [1], "config": {"BLOCK_SIZE": 1024}}]})");
  folder.write("other.json", R"({"schema": "taot.tuning", "schema_version": 1, "kernel": "softmax", "key": ["n_elements"],
                                 "entries": [{"key": [1], "config": {}}]})");
  const std::string good = (folder.path() / "good.json").string();
  const std::string other = (folder.path() / "other.json").string();
  EXPECT_EQ(taot_kernel_load_tuning(kernel.handle(), good.c_str(), nullptr), TAOT_OK) << taot_last_error();
  EXPECT_EQ(taot_kernel_load_tuning(kernel.handle(), good.c_str(), "NVIDIA H100 80GB HBM3"), TAOT_OK);
  EXPECT_EQ(taot_kernel_load_tuning(kernel.handle(), other.c_str(), nullptr), TAOT_INVALID_ARGUMENT);
  EXPECT_EQ(std::string(taot_last_error()),
            "testlib::add_kernel: " + other + ": the table is for kernel \"softmax\", not \"add_kernel\"");
  EXPECT_EQ(taot_kernel_load_tuning(kernel.handle(), nullptr, nullptr), TAOT_INVALID_ARGUMENT);
  EXPECT_STREQ(taot_last_error(), "testlib::add_kernel: the tuning file's path is null");
  EXPECT_EQ(taot_kernel_load_tuning(nullptr, good.c_str(), nullptr), TAOT_INVALID_ARGUMENT);
  EXPECT_STREQ(taot_last_error(), "the kernel handle is null");
  EXPECT_EQ(taot_kernel_reset_tuning(kernel.handle()), TAOT_OK);
  EXPECT_EQ(taot_kernel_reset_tuning(nullptr), TAOT_INVALID_ARGUMENT);
}

}  // namespace
}  // namespace taot::testing
