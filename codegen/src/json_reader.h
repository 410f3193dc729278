// Reading typed values out of a JSON tree with the first failure kept and named by its JSON path:
// the reader of manifest.json and the per-kind argument rules (arg_kinds.cpp) share it.
#pragma once

#include <fmt/format.h>

#include <cstddef>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "taot/codegen/errors.h"
#include "taot/codegen/manifest.h"

namespace taot::codegen::detail {

using json = nlohmann::json;

constexpr std::uint64_t kMaxU16 = std::numeric_limits<std::uint16_t>::max();
constexpr std::uint64_t kMaxU32 = std::numeric_limits<std::uint32_t>::max();
constexpr std::uint64_t kMaxRank = 8;
constexpr std::uint64_t kMaxI64 = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());

// "i1, i8, ..., fp64": every dtype name, for messages.
std::string known_dtype_names();

// A short description of a JSON value for "expected X, got Y" messages.
inline std::string describe(const json& value) {
  switch (value.type()) {
    case json::value_t::null: return "null";
    case json::value_t::boolean: return value.get<bool>() ? "true" : "false";
    case json::value_t::string: {
      const auto& text = value.get_ref<const std::string&>();
      if (text.size() <= 60) return value.dump(-1, ' ', false, json::error_handler_t::replace);
      // Cut before byte 57 at a character boundary: never inside a UTF-8 sequence.
      std::size_t cut = 57;
      while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
      return json(text.substr(0, cut) + "...").dump(-1, ' ', false, json::error_handler_t::replace);
    }
    case json::value_t::array: return "an array";
    case json::value_t::object: return "an object";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
    case json::value_t::number_float: return value.dump();
    default: return "an unreadable value";
  }
}

inline std::string join_names(const std::vector<DType>& dtypes) {
  std::string text;
  for (DType dtype : dtypes) {
    if (!text.empty()) text += ", ";
    text += dtype_name(dtype);
  }
  return text;
}

inline std::string child(const std::string& path, std::string_view key) {
  return path.empty() ? std::string(key) : path + "." + std::string(key);
}
inline std::string child(const std::string& path, std::size_t index) { return fmt::format("{}[{}]", path, index); }

// Reads typed values out of the JSON tree. The first failure is kept; after it every accessor
// returns a harmless default, so callers check failed() once at the end of a unit of work.
class Reader {
 public:
  explicit Reader(std::string file) : file_(std::move(file)) {}

  bool failed() const noexcept { return error_.has_value(); }
  Status error() const { return input_error(*error_); }

  void fail(const std::string& path, const std::string& problem) {
    if (!error_) error_ = path.empty() ? fmt::format("{}: {}", file_, problem) : fmt::format("{}: {}: {}", file_, path, problem);
  }

  // The member `key` of `object` (which must be an object), or null after recording "missing".
  const json* member(const json* object, std::string_view key, const std::string& path) {
    if (object == nullptr || failed()) return nullptr;
    auto found = object->find(key);
    if (found == object->end()) {
      fail(child(path, key), "missing");
      return nullptr;
    }
    return &*found;
  }

  const json* object_value(const json* value, const std::string& path) {
    if (value == nullptr || failed()) return nullptr;
    if (!value->is_object()) {
      fail(path, "expected an object, got " + describe(*value));
      return nullptr;
    }
    return value;
  }

  // An array of `min_size` to `max_size` elements.
  const json* array_value(const json* value, const std::string& path, std::size_t min_size = 0,
                          std::uint64_t max_size = kMaxU16) {
    if (value == nullptr || failed()) return nullptr;
    if (!value->is_array()) {
      fail(path, "expected an array, got " + describe(*value));
      return nullptr;
    }
    if (value->size() < min_size) {
      fail(path, min_size == 1 ? "expected at least one entry, got none"
                               : fmt::format("expected at least {} entries, got {}", min_size, value->size()));
      return nullptr;
    }
    if (value->size() > max_size) {
      fail(path, fmt::format("{} entries are more than the runtime's tables hold ({})", value->size(), max_size));
      return nullptr;
    }
    return value;
  }

  std::string string_value(const json* value, const std::string& path) {
    if (value == nullptr || failed()) return {};
    if (!value->is_string()) {
      fail(path, "expected a string, got " + describe(*value));
      return {};
    }
    return value->get<std::string>();
  }

  std::uint64_t unsigned_value(const json* value, const std::string& path, std::uint64_t max) {
    if (value == nullptr || failed()) return 0;
    if (!value->is_number_unsigned() && !(value->is_number_integer() && value->get<std::int64_t>() >= 0)) {
      fail(path, "expected an unsigned integer, got " + describe(*value));
      return 0;
    }
    const auto number = value->get<std::uint64_t>();
    if (number > max) {
      fail(path, fmt::format("expected an unsigned integer of at most {}, got {}", max, number));
      return 0;
    }
    return number;
  }

  std::int64_t integer_value(const json* value, const std::string& path) {
    if (value == nullptr || failed()) return 0;
    if (!value->is_number_integer()) {
      fail(path, "expected an integer, got " + describe(*value));
      return 0;
    }
    if (value->is_number_unsigned() && value->get<std::uint64_t>() > kMaxI64) {
      fail(path, fmt::format("{} is out of range for a 64-bit signed integer", value->get<std::uint64_t>()));
      return 0;
    }
    return value->get<std::int64_t>();
  }

  bool bool_value(const json* value, const std::string& path) {
    if (value == nullptr || failed()) return false;
    if (!value->is_boolean()) {
      fail(path, "expected true or false, got " + describe(*value));
      return false;
    }
    return value->get<bool>();
  }

  DType dtype_value(const json* value, const std::string& path) {
    const std::string name = string_value(value, path);
    if (failed()) return DType::i32;
    const auto dtype = dtype_from_name(name);
    if (!dtype) {
      fail(path, fmt::format("unknown dtype \"{}\" (known: {})", name, known_dtype_names()));
      return DType::i32;
    }
    return *dtype;
  }

  // A list of block shapes, each `rank` dims of 1 to 256, distinct (a tensordesc's "blocks").
  std::vector<std::vector<std::uint32_t>> read_blocks(const json* list, const std::string& path, std::size_t rank) {
    std::vector<std::vector<std::uint32_t>> blocks;
    for (std::size_t i = 0; list != nullptr && i < list->size() && !failed(); ++i) {
      std::vector<std::uint32_t> block = read_block(&(*list)[i], child(path, i), rank);
      if (!failed() && std::find(blocks.begin(), blocks.end(), block) != blocks.end()) {
        fail(child(path, i), "a block shape listed twice");
      }
      if (!failed() && blocks.size() == kMaxU16) fail(path, fmt::format("more than {} blocks", kMaxU16));
      blocks.push_back(std::move(block));
    }
    return blocks;
  }

  // One block shape: exactly `rank` dims, each 1 to 256 (TMA's box limit).
  std::vector<std::uint32_t> read_block(const json* value, const std::string& path, std::size_t rank) {
    std::vector<std::uint32_t> block;
    if (value == nullptr || failed()) return block;
    if (!value->is_array() || value->size() != rank) {
      fail(path, fmt::format("expected a list of {} block dims, got {}", rank, describe(*value)));
      return block;
    }
    for (std::size_t d = 0; d < rank && !failed(); ++d) {
      const auto dim = static_cast<std::uint32_t>(unsigned_value(&(*value)[d], child(path, d), 256));
      if (!failed() && dim == 0) fail(child(path, d), "expected 1 to 256, got 0");
      block.push_back(dim);
    }
    return block;
  }

  // Distinct dtype names; each must be in `allowed` unless it is empty.
  std::vector<DType> read_dtype_list(const json* list, const std::string& path, const std::vector<DType>& allowed) {
    std::vector<DType> dtypes;
    for (std::size_t i = 0; list != nullptr && i < list->size() && !failed(); ++i) {
      const DType dtype = dtype_value(&(*list)[i], child(path, i));
      if (failed()) break;
      if (!allowed.empty() && std::find(allowed.begin(), allowed.end(), dtype) == allowed.end()) {
        fail(child(path, i), fmt::format("expected one of {}, got \"{}\"", join_names(allowed), dtype_name(dtype)));
      } else if (std::find(dtypes.begin(), dtypes.end(), dtype) != dtypes.end()) {
        fail(child(path, i), fmt::format("\"{}\" is listed twice", dtype_name(dtype)));
      }
      dtypes.push_back(dtype);
    }
    return dtypes;
  }

  // Shorthands reading member `key` of `object`.
  std::string get_string(const json* object, std::string_view key, const std::string& path) {
    return string_value(member(object, key, path), child(path, key));
  }
  std::uint64_t get_unsigned(const json* object, std::string_view key, const std::string& path, std::uint64_t max) {
    return unsigned_value(member(object, key, path), child(path, key), max);
  }
  bool get_bool(const json* object, std::string_view key, const std::string& path) {
    return bool_value(member(object, key, path), child(path, key));
  }
  const json* get_array(const json* object, std::string_view key, const std::string& path, std::size_t min_size = 0,
                        std::uint64_t max_size = kMaxU16) {
    return array_value(member(object, key, path), child(path, key), min_size, max_size);
  }
  const json* get_object(const json* object, std::string_view key, const std::string& path) {
    return object_value(member(object, key, path), child(path, key));
  }

 private:
  std::string file_;
  std::optional<std::string> error_;
};

}  // namespace taot::codegen::detail
