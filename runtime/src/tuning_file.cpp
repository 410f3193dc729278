// Tuned-table files: parsing taot's and vLLM's JSON formats, and checking a table against a
// kernel's tuning key and compiled config values (see taot/tuning_file.h, docs/tuning.md).
#include "taot/tuning_file.h"

#include <algorithm>
#include <charconv>
#include <cstddef>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "config_fields.h"
#include "taot/runtime.h"

namespace taot {
namespace {

// Objects keep their keys in file order, so entries and fields are read in the order written.
using Json = nlohmann::ordered_json;

Status file_error(const std::string& source, const std::string& problem) {
  return Status::error(TAOT_INVALID_ARGUMENT, source + ": " + problem);
}

// A JSON value as messages show it: scalars and short lists as written (long strings cut),
// objects and long lists by kind.
std::string describe(const Json& value) {
  if (value.is_object()) return "an object";
  std::string text = value.dump(-1, ' ', false, Json::error_handler_t::replace);
  if (value.is_array()) return text.size() <= 40 ? text : "a list";
  if (text.size() > 60) text = text.substr(0, 56) + "...\"";
  return text;
}

std::string join(const std::vector<std::string>& names) {
  std::string text;
  for (const std::string& name : names) text += (text.empty() ? "" : ", ") + name;
  return text;
}

// ---- names given twice ----

// nlohmann's parser keeps the last of two equal keys; this callback sees every key as it is read
// and remembers the JSON path of the first one given twice in its object.
class DuplicateKeys {
 public:
  struct Step {
    bool is_index;
    std::size_t index;
    std::string key;
  };

  bool on_event(Json::parse_event_t event, const Json& parsed) {
    switch (event) {
      case Json::parse_event_t::object_start: frames_.push_back({false, 0, {}, {}}); break;
      case Json::parse_event_t::array_start: frames_.push_back({true, 0, {}, {}}); break;
      case Json::parse_event_t::key: {
        Frame& top = frames_.back();
        top.key = parsed.get<std::string>();
        if (!top.keys.insert(top.key).second && !found_) {
          found_ = true;
          for (const Frame& frame : frames_) path_.push_back({frame.is_array, frame.index, frame.key});
        }
        break;
      }
      case Json::parse_event_t::value: element_done(); break;
      case Json::parse_event_t::object_end:
      case Json::parse_event_t::array_end:
        frames_.pop_back();
        element_done();
        break;
    }
    return true;
  }

  bool found() const noexcept { return found_; }
  // Each object's key and each list's index from the top down to the repeated key (the last step).
  const std::vector<Step>& path() const noexcept { return path_; }

 private:
  struct Frame {
    bool is_array;
    std::size_t index;
    std::string key;
    std::unordered_set<std::string> keys;
  };
  void element_done() {
    if (!frames_.empty() && frames_.back().is_array) ++frames_.back().index;
  }
  std::vector<Frame> frames_;
  std::vector<Step> path_;
  bool found_ = false;
};

// The first `count` steps as a JSON path: entries[2].config.
std::string path_text(const std::vector<DuplicateKeys::Step>& steps, std::size_t count) {
  std::string text;
  for (std::size_t s = 0; s < count; ++s) {
    if (steps[s].is_index) text += "[" + std::to_string(steps[s].index) + "]";
    else text += (text.empty() ? "" : ".") + steps[s].key;
  }
  return text;
}

// "entries[2].config: \"num_warps\" is given twice"; vLLM: "entry \"64\" is given twice".
Status duplicate_error(const std::string& source, const std::vector<DuplicateKeys::Step>& path, bool vllm) {
  const std::string repeated = "\"" + path.back().key + "\" is given twice";
  if (vllm && path.size() == 1) return file_error(source, "entry " + repeated);
  if (vllm) return file_error(source, "entry \"" + path[0].key + "\": " + repeated);
  const std::string where = path_text(path, path.size() - 1);
  return file_error(source, where.empty() ? repeated : where + ": " + repeated);
}

// ---- values ----

Expected<TuningValue> config_value(const Json& value, const std::string& source, const std::string& where,
                                   const std::string& field) {
  TuningValue result;
  if (value.is_boolean()) {
    result.kind = TuningValue::Kind::boolean;
    result.integer = value.get<bool>() ? 1 : 0;
  } else if (value.is_number_unsigned() && value.get<std::uint64_t>() > std::numeric_limits<std::int64_t>::max()) {
    return file_error(source, where + ": " + field + "=" + describe(value) + " is out of range (64-bit ints)");
  } else if (value.is_number_integer()) {
    result.integer = value.get<std::int64_t>();
  } else if (value.is_number_float()) {
    result.kind = TuningValue::Kind::real;
    result.real = value.get<double>();
  } else if (value.is_string()) {
    result.kind = TuningValue::Kind::text;
    result.text = value.get<std::string>();
  } else {
    return file_error(source, where + ": " + field + " is " + describe(value) +
                                  "; a config value is an int, a float, a bool or a string");
  }
  return result;
}

Status read_config(const Json& config, const std::string& source, const std::string& where, TuningEntry& entry) {
  if (!config.is_object())
    return file_error(source, where + ": the config is " + describe(config) + "; expected an object of field values");
  for (const auto& [name, value] : config.items()) {
    Expected<TuningValue> read = config_value(value, source, where, name);
    if (!read.ok()) return std::move(read).take_status();
    entry.config.push_back({name, std::move(read).value()});
  }
  return {};
}

bool parse_int(std::string_view text, std::int64_t& value) {
  const char* end = text.data() + text.size();
  const auto [stop, error] = std::from_chars(text.data(), end, value);
  return error == std::errc() && stop == end && !text.empty();
}

// "device_name=NVIDIA_H100_80GB_HBM3" among the comma-separated parts of a vLLM file name, with
// underscores read as spaces; "" when the name has none.
std::string device_from_file_name(const std::string& source) {
  const std::size_t slash = source.find_last_of("/\\");
  std::string name = slash == std::string::npos ? source : source.substr(slash + 1);
  if (name.size() > 5 && name.compare(name.size() - 5, 5, ".json") == 0) name.resize(name.size() - 5);
  constexpr std::string_view kTag = "device_name=";
  for (std::size_t at = name.find(kTag); at != std::string::npos; at = name.find(kTag, at + 1)) {
    if (at != 0 && name[at - 1] != ',') continue;
    const std::size_t begin = at + kTag.size();
    std::string device = name.substr(begin, name.find(',', begin) - begin);
    std::replace(device.begin(), device.end(), '_', ' ');
    return device;
  }
  return {};
}

// ---- vLLM's format ----

Expected<TuningFile> read_vllm(const Json& root, const std::string& source, std::string_view device) {
  TuningFile file;
  file.source = source;
  file.format = TuningFormat::vllm;
  file.device = device.empty() ? device_from_file_name(source) : std::string(device);
  file.match = table::TuningMatch::nearest;
  for (const auto& [name, value] : root.items()) {
    if (name == "triton_version") continue;  // newer vLLM files record the Triton they were tuned with
    const std::string where = "entry \"" + name + "\"";
    TuningEntry entry;
    entry.key.resize(1);
    if (!parse_int(name, entry.key[0]))
      return file_error(source, where + ": the key is not an integer (vLLM tables map M, as text, to a config)");
    if (Status status = read_config(value, source, where, entry); !status.ok()) return status;
    file.entries.push_back(std::move(entry));
  }
  if (file.entries.empty()) return file_error(source, "the table has no entries");
  return file;
}

// ---- taot's format ----

constexpr std::string_view kTopKeys[] = {"schema", "schema_version", "kernel", "device", "match", "key", "entries"};
// Recorded by whoever wrote the table (taot tune); read by people, not by taot.
constexpr std::string_view kInformationalKeys[] = {"library", "library_id", "triton_version", "measured", "note"};

template <std::size_t N>
bool listed(const std::string_view (&names)[N], std::string_view name) {
  return std::find(std::begin(names), std::end(names), name) != std::end(names);
}

template <std::size_t N>
std::string listing(const std::string_view (&names)[N]) {
  std::string text;
  for (std::string_view name : names) text += (text.empty() ? "" : ", ") + std::string(name);
  return text;
}

Expected<std::string> string_member(const Json& root, const char* name, const std::string& source, bool required,
                                    const char* expected) {
  const auto found = root.find(name);
  if (found == root.end()) {
    if (required) return file_error(source, std::string("\"") + name + "\" is missing: " + expected);
    return std::string();
  }
  if (!found->is_string())
    return file_error(source, std::string("\"") + name + "\" is " + describe(*found) + "; expected " + expected);
  return found->get<std::string>();
}

Status check_header(const Json& root, const std::string& source) {
  const Json& schema = root.at("schema");
  if (!schema.is_string() || schema.get<std::string>() != kTuningSchema)
    return file_error(source, "schema is " + describe(schema) + "; expected \"" + std::string(kTuningSchema) + "\"");
  const auto version = root.find("schema_version");
  if (version == root.end())
    return file_error(source, "\"schema_version\" is missing: expected " + std::to_string(kTuningSchemaVersion));
  if (!version->is_number_integer() || version->get<std::int64_t>() != kTuningSchemaVersion)
    return file_error(source, "schema_version is " + describe(*version) + "; this taot reads version " +
                                  std::to_string(kTuningSchemaVersion));
  for (const auto& [name, value] : root.items())
    if (!listed(kTopKeys, name) && !listed(kInformationalKeys, name))
      return file_error(source, "unknown key \"" + name + "\"; the keys are " + listing(kTopKeys) +
                                    " (and, informational: " + listing(kInformationalKeys) + ")");
  return {};
}

Status read_key_names(const Json& root, const std::string& source, TuningFile& file) {
  constexpr const char* kExpected = "a non-empty list of the tuning key's argument names, such as [\"M\"]";
  const auto key = root.find("key");
  if (key == root.end()) return file_error(source, std::string("\"key\" is missing: expected ") + kExpected);
  if (!key->is_array() || key->empty())
    return file_error(source, "\"key\" is " + describe(*key) + "; expected " + kExpected);
  for (const Json& name : *key) {
    if (!name.is_string() || name.get<std::string>().empty())
      return file_error(source, "\"key\" holds " + describe(name) + "; expected " + kExpected);
    if (std::find(file.key.begin(), file.key.end(), name.get<std::string>()) != file.key.end())
      return file_error(source, "\"key\" names " + describe(name) + " twice");
    file.key.push_back(name.get<std::string>());
  }
  return {};
}

// "M=64, N=128".
std::string key_text(const std::vector<std::string>& names, const std::vector<std::int64_t>& key) {
  std::string text;
  for (std::size_t d = 0; d < key.size(); ++d)
    text += (d ? ", " : "") + (d < names.size() ? names[d] : "key") + "=" + std::to_string(key[d]);
  return text;
}

Status read_entry(const Json& value, std::size_t index, const std::string& source, TuningFile& file) {
  const std::string at = "entries[" + std::to_string(index) + "]";
  if (!value.is_object())
    return file_error(source, at + " is " + describe(value) + "; expected {\"key\": [...], \"config\": {...}}");
  for (const auto& [name, member] : value.items())
    if (name != "key" && name != "config" && name != "measured")
      return file_error(source, at + ": unknown key \"" + name + "\"; an entry has key, config (and, informational: measured)");
  const auto key = value.find("key");
  const auto config = value.find("config");
  if (key == value.end() || config == value.end())
    return file_error(source, at + ": \"" + (key == value.end() ? "key" : "config") + "\" is missing");
  if (!key->is_array() || key->size() != file.key.size())
    return file_error(source, at + ": the key is " + describe(*key) + "; expected a list of " +
                                  std::to_string(file.key.size()) + " integers (" + join(file.key) + ")");
  TuningEntry entry;
  for (const Json& number : *key) {
    if (!number.is_number_integer() ||
        (number.is_number_unsigned() && number.get<std::uint64_t>() > std::numeric_limits<std::int64_t>::max()))
      return file_error(source, at + ": the key holds " + describe(number) + "; expected integers (" + join(file.key) + ")");
    entry.key.push_back(number.get<std::int64_t>());
  }
  if (Status status = read_config(*config, source, "entry " + key_text(file.key, entry.key), entry); !status.ok())
    return status;
  file.entries.push_back(std::move(entry));
  return {};
}

Expected<TuningFile> read_taot(const Json& root, const std::string& source, std::string_view device) {
  if (Status status = check_header(root, source); !status.ok()) return status;
  TuningFile file;
  file.source = source;
  file.format = TuningFormat::taot;
  Expected<std::string> kernel = string_member(root, "kernel", source, true, "the kernel's name");
  if (!kernel.ok()) return std::move(kernel).take_status();
  if (kernel->empty()) return file_error(source, "\"kernel\" is empty; expected the kernel's name");
  file.kernel = std::move(kernel).value();
  for (auto [name, member] : {std::pair{"library", &file.library}, std::pair{"library_id", &file.library_id}}) {
    Expected<std::string> recorded = string_member(root, name, source, false, "a name");
    if (!recorded.ok()) return std::move(recorded).take_status();
    *member = std::move(recorded).value();
  }
  Expected<std::string> named_device =
      string_member(root, "device", source, false, "the device's name, as the driver gives it (\"\": any device)");
  if (!named_device.ok()) return std::move(named_device).take_status();
  file.device = device.empty() ? std::move(named_device).value() : std::string(device);
  Expected<std::string> match = string_member(root, "match", source, false, "\"nearest\" or \"floor\"");
  if (!match.ok()) return std::move(match).take_status();
  if (*match == "floor") file.match = table::TuningMatch::floor;
  else if (match->empty() || *match == "nearest") file.match = table::TuningMatch::nearest;
  else return file_error(source, "match is \"" + *match + "\"; expected \"nearest\" or \"floor\"");
  if (Status status = read_key_names(root, source, file); !status.ok()) return status;
  const auto entries = root.find("entries");
  if (entries == root.end() || !entries->is_array() || entries->empty())
    return file_error(source, std::string("\"entries\" is ") + (entries == root.end() ? "missing" : describe(*entries)) +
                                  "; expected a non-empty list of {\"key\": [...], \"config\": {...}}");
  for (std::size_t e = 0; e < entries->size(); ++e)
    if (Status status = read_entry((*entries)[e], e, source, file); !status.ok()) return status;
  return file;
}

// ---- checking against a kernel ----

// A compiled value of `field` as messages show it: 1024, 0.5, true, bf16, "relu".
std::string compiled_text(const TuningTarget::Field& field, const TuningValue& value) {
  switch (field.kind) {
    case table::FieldKind::float_value: return detail::real_text(value.real);
    case table::FieldKind::bool_value: return value.integer ? "true" : "false";
    case table::FieldKind::dtype_value: return dtype_name(static_cast<DType>(value.integer));
    case table::FieldKind::string_value: return detail::quoted(value.text);
    case table::FieldKind::int_value: break;
  }
  return std::to_string(value.integer);
}

// A file's value as messages show it (dtype names unquoted).
std::string given_text(const TuningTarget::Field& field, const TuningValue& value) {
  switch (value.kind) {
    case TuningValue::Kind::boolean: return value.integer ? "true" : "false";
    case TuningValue::Kind::real: return detail::real_text(value.real);
    case TuningValue::Kind::text:
      return field.kind == table::FieldKind::dtype_value ? value.text : detail::quoted(value.text);
    case TuningValue::Kind::integer: break;
  }
  return std::to_string(value.integer);
}

const char* kind_name(table::FieldKind kind) {
  switch (kind) {
    case table::FieldKind::float_value: return "a float";
    case table::FieldKind::bool_value: return "a bool";
    case table::FieldKind::dtype_value: return "a dtype name";
    case table::FieldKind::string_value: return "a string";
    case table::FieldKind::int_value: break;
  }
  return "an int";
}

// Whether a file's value can be one of `field`'s (an int for a float field, 0 or 1 for a bool).
bool kind_fits(const TuningTarget::Field& field, const TuningValue& value) {
  using Kind = TuningValue::Kind;
  switch (field.kind) {
    case table::FieldKind::int_value: return value.kind == Kind::integer;
    case table::FieldKind::bool_value:
      return value.kind == Kind::boolean || (value.kind == Kind::integer && (value.integer == 0 || value.integer == 1));
    case table::FieldKind::float_value: return value.kind == Kind::real || value.kind == Kind::integer;
    case table::FieldKind::dtype_value:
    case table::FieldKind::string_value: return value.kind == Kind::text;
  }
  return false;
}

bool same_value(const TuningTarget::Field& field, const TuningValue& compiled, const TuningValue& given) {
  switch (field.kind) {
    case table::FieldKind::float_value:
      return compiled.real == (given.kind == TuningValue::Kind::real ? given.real : static_cast<double>(given.integer));
    case table::FieldKind::dtype_value:
      return compiled.integer == static_cast<std::int64_t>(dtype_from_name(given.text));
    case table::FieldKind::string_value: return compiled.text == given.text;
    case table::FieldKind::int_value:
    case table::FieldKind::bool_value: break;
  }
  return compiled.integer == given.integer;
}

Expected<std::uint16_t> value_index(const TuningTarget::Field& field, const TuningValue& given, const std::string& where) {
  if (!kind_fits(field, given))
    return Status::error(TAOT_INVALID_ARGUMENT,
                         where + field.name + " takes " + kind_name(field.kind) + "; got " + given_text(field, given));
  for (std::size_t v = 0; v < field.values.size(); ++v)
    if (same_value(field, field.values[v], given)) return static_cast<std::uint16_t>(v);
  std::string compiled;
  for (const TuningValue& value : field.values) compiled += (compiled.empty() ? "" : ", ") + compiled_text(field, value);
  return Status::error(TAOT_INVALID_ARGUMENT, where + field.name + "=" + given_text(field, given) +
                                                  " was not compiled; compiled values: " + compiled);
}

Status check_key_names(const TuningFile& file, const TuningTarget& target) {
  const std::string kernel_key = target.key.empty()
                                     ? "kernel \"" + target.kernel + "\" has no tuning key (the spec's tuning_key, "
                                                                     "or @triton.autotune's key)"
                                     : "the tuning key of kernel \"" + target.kernel + "\" is [" + join(target.key) + "]";
  if (file.format == TuningFormat::vllm) {
    if (target.key.size() != 1) return file_error(file.source, "a vLLM table is keyed by one argument; " + kernel_key);
    return {};
  }
  if (file.kernel != target.kernel)
    return file_error(file.source, "the table is for kernel \"" + file.kernel + "\", not \"" + target.kernel + "\"");
  if (file.key != target.key) return file_error(file.source, "the table's key is [" + join(file.key) + "]; " + kernel_key);
  return {};
}

}  // namespace

bool same_device_name(std::string_view a, std::string_view b) noexcept {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const char x = a[i] == '_' ? ' ' : a[i], y = b[i] == '_' ? ' ' : b[i];
    if (x != y) return false;
  }
  return true;
}

Expected<TuningFile> parse_tuning_file(std::string_view text, const std::string& source, std::string_view device) {
  DuplicateKeys duplicates;
  Json root;
  try {
    root = Json::parse(text.begin(), text.end(),
                       [&duplicates](int, Json::parse_event_t event, Json& parsed) {
                         return duplicates.on_event(event, parsed);
                       });
  } catch (const Json::exception& error) {
    std::string message = error.what();  // "[json.exception.parse_error.101] parse error at line 3, column 5: ..."
    if (message.rfind("[json.exception.", 0) == 0 && message.find("] ") != std::string::npos)
      message.erase(0, message.find("] ") + 2);
    return file_error(source, "not valid JSON: " + message);
  }
  if (!root.is_object())
    return file_error(source, "the file holds " + describe(root) +
                                  "; expected a table: an object with \"schema\": \"taot.tuning\", or vLLM's "
                                  "{\"<M>\": {config}, ...}");
  const bool taot_format = root.contains("schema");
  if (duplicates.found()) return duplicate_error(source, duplicates.path(), !taot_format);
  return taot_format ? read_taot(root, source, device) : read_vllm(root, source, device);
}

std::string tuning_file_text(const TuningFile& file) {
  Json root;
  root["schema"] = kTuningSchema;
  root["schema_version"] = kTuningSchemaVersion;
  root["kernel"] = file.kernel;
  if (!file.library.empty()) root["library"] = file.library;
  if (!file.library_id.empty()) root["library_id"] = file.library_id;
  root["device"] = file.device;
  root["match"] = file.match == table::TuningMatch::floor ? "floor" : "nearest";
  root["key"] = file.key;
  std::string text = root.dump(2);
  text.resize(text.size() - 2);  // "\n}": the entries follow, one per line
  text += ",\n  \"entries\": [";
  for (std::size_t e = 0; e < file.entries.size(); ++e) {
    Json entry;
    entry["key"] = file.entries[e].key;
    Json& config = entry["config"] = Json::object();
    for (const TuningField& field : file.entries[e].config) {
      const TuningValue& value = field.value;
      switch (value.kind) {
        case TuningValue::Kind::integer: config[field.name] = value.integer; break;
        case TuningValue::Kind::boolean: config[field.name] = value.integer != 0; break;
        case TuningValue::Kind::real: config[field.name] = value.real; break;
        case TuningValue::Kind::text: config[field.name] = value.text; break;
      }
    }
    text += (e ? ",\n    " : "\n    ") + entry.dump();
  }
  return text + "\n  ]\n}\n";
}

Expected<TuningFile> read_tuning_file(const std::string& path, std::string_view device) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return file_error(path, "cannot read the tuning file (missing or unreadable)");
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return file_error(path, "cannot read the tuning file");
  return parse_tuning_file(text.str(), path, device);
}

Expected<ResolvedTuning> resolve_tuning_file(const TuningFile& file, const TuningTarget& target) {
  if (Status status = check_key_names(file, target); !status.ok()) return status;
  struct Row {
    std::vector<std::int64_t> key;
    std::vector<std::uint16_t> config;
  };
  std::vector<Row> rows;
  rows.reserve(file.entries.size());
  for (const TuningEntry& entry : file.entries) {
    const std::string where = file.source + ": entry " + key_text(target.key, entry.key) + ": ";
    Row row{entry.key, std::vector<std::uint16_t>(target.fields.size(), table::kUnsetValue)};
    for (const TuningField& given : entry.config) {
      std::size_t f = 0;
      while (f < target.fields.size() && target.fields[f].name != given.name) ++f;
      if (f == target.fields.size()) {
        std::vector<std::string> names;
        for (const TuningTarget::Field& field : target.fields) names.push_back(field.name);
        return Status::error(TAOT_INVALID_ARGUMENT, where + given.name + " is not a config field of kernel \"" +
                                                        target.kernel + "\"; the fields are: " + join(names));
      }
      Expected<std::uint16_t> index = value_index(target.fields[f], given.value, where);
      if (!index.ok()) return std::move(index).take_status();
      row.config[f] = *index;
    }
    rows.push_back(std::move(row));
  }
  std::stable_sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) { return a.key < b.key; });
  for (std::size_t r = 1; r < rows.size(); ++r)
    if (rows[r].key == rows[r - 1].key)
      return file_error(file.source, "entry " + key_text(target.key, rows[r].key) + " is given twice");
  ResolvedTuning resolved;
  resolved.device = file.device;
  resolved.source = file.source;
  resolved.match = file.match;
  resolved.entry_count = static_cast<std::uint32_t>(rows.size());
  resolved.key_count = target.key.size();
  resolved.field_count = target.fields.size();
  for (const Row& row : rows) {
    resolved.keys.insert(resolved.keys.end(), row.key.begin(), row.key.end());
    resolved.configs.insert(resolved.configs.end(), row.config.begin(), row.config.end());
  }
  return resolved;
}

}  // namespace taot
