// Tuned-table files, read into plain values: taot's own format and vLLM's; and their check
// against a kernel's tuning key and compiled config values. The runtime resolves them against a
// kernel's table (run-time loading); the code generator against the manifest (tables baked into
// a library). docs/tuning.md describes both formats.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "taot/kernel_table.h"
#include "taot/status.h"

namespace taot {

// A config value as a file writes it: an int (a JSON integer), a bool (true/false, `integer` 1
// or 0), a float, or a string (a dtype name or a string field's value).
struct TuningValue {
  enum class Kind : std::uint8_t { integer, boolean, real, text };
  Kind kind = Kind::integer;
  std::int64_t integer = 0;
  double real = 0.0;
  std::string text;
};

struct TuningField {
  std::string name;
  TuningValue value;
};

struct TuningEntry {
  std::vector<std::int64_t> key;     // one value per key name (vLLM: one value)
  std::vector<TuningField> config;   // in file order, no name twice
};

enum class TuningFormat : std::uint8_t { taot, vllm };

// One file's table, not yet checked against a kernel.
struct TuningFile {
  std::string source;                 // where it came from, for messages
  TuningFormat format = TuningFormat::taot;
  std::string kernel;                 // taot format: the kernel it is for; vLLM: ""
  std::string library;                // taot format, when recorded: the library the table was made for
  std::string library_id;             // taot format, when recorded: the build it was timed on (autotune.h)
  std::string device;                 // "" for any device
  table::TuningMatch match = table::TuningMatch::nearest;
  std::vector<std::string> key;       // taot: the key's argument names; vLLM: empty (one value)
  std::vector<TuningEntry> entries;   // in file order, at least one
};

inline constexpr std::string_view kTuningSchema = "taot.tuning";
inline constexpr int kTuningSchemaVersion = 1;

// Reads `text` (from `source`, which messages name). The format is taot's when the top-level
// object has a "schema" key (which must be "taot.tuning"), else vLLM's: {"<M>": {"BLOCK_SIZE_M":
// 64, ...}, ...}, its device taken from `source`'s file name ("device_name=NVIDIA_H100_80GB_HBM3",
// underscores read as spaces) unless `device` is given. Errors name the source, the entry and the
// value: bad JSON (line and column), a key that is not an integer, a config value that is an object
// or list, a name given twice, a wrong schema or version (naming both), a table with no entries.
Expected<TuningFile> parse_tuning_file(std::string_view text, const std::string& source, std::string_view device = {});

// Reads the file at `path` as parse_tuning_file does (messages name `path`).
Expected<TuningFile> read_tuning_file(const std::string& path, std::string_view device = {});

// `file` in taot's format (parse_tuning_file reads it back): schema, kernel, library and
// library_id when set, device, match, key and entries, each config's values as their kinds write
// them. Two-space indented JSON, one line per entry.
std::string tuning_file_text(const TuningFile& file);

// Whether device name `a` is `b`, with '_' and ' ' the same character (vLLM's file names).
bool same_device_name(std::string_view a, std::string_view b) noexcept;

// What a table is checked against, whichever model it comes from (the runtime's KernelTable, the
// code generator's manifest): the kernel's name, its tuning key and its config fields with their
// compiled values (ints, bools and dtypes as `integer`, dtypes as taot_dtype values; floats as
// `real`; strings as `text`).
struct TuningTarget {
  struct Field {
    std::string name;
    table::FieldKind kind = table::FieldKind::int_value;
    std::vector<TuningValue> values;  // at most 65535
  };
  std::string kernel;
  std::vector<std::string> key;  // the tuning key's argument names, in order
  std::vector<Field> fields;
};

// A table checked against a kernel: entries sorted by key (lexicographically), no key twice; each
// config one value index per field of the kernel, or table::kUnsetValue for a field not given.
struct ResolvedTuning {
  std::string device;
  std::string source;
  table::TuningMatch match = table::TuningMatch::nearest;
  std::uint32_t entry_count = 0;
  std::size_t key_count = 0;
  std::size_t field_count = 0;
  std::vector<std::int64_t> keys;      // entry_count x key_count
  std::vector<std::uint16_t> configs;  // entry_count x field_count

  // A view for lookups; valid while this lives and is not changed.
  table::TunedTable view() const noexcept {
    return {device.c_str(), source.c_str(), match, entry_count, keys.data(), configs.data()};
  }
};

// Checks `file` against `target`: the file's kernel (taot format) must be target.kernel; its key
// names must be target.key (vLLM files: target.key must be one argument); every config field must
// be one of target.fields and every value a compiled one; no key twice. Errors name the source,
// the entry by its key, the field, the value and the compiled values, as in
// "tables/x.json: entry M=64: BLOCK_SIZE_K=64 was not compiled; compiled values: 128".
Expected<ResolvedTuning> resolve_tuning_file(const TuningFile& file, const TuningTarget& target);

}  // namespace taot
