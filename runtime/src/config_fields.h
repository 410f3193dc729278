// What each kind of config field (table::FieldKind) means to the runtime, in one place: how a
// compiled value compares with a request, and how values and requests read in messages and
// descriptions (strings quoted, floats without trailing zeros).
#pragma once

#include <charconv>
#include <cstddef>
#include <string>

#include "taot/kernel_table.h"
#include "taot/runtime.h"

namespace taot::detail {

// The shortest text that reads back as `value`: 1024, 0.5, 1e-07.
inline std::string real_text(double value) {
  char text[32];
  const std::to_chars_result written = std::to_chars(text, text + sizeof text, value);
  return std::string(text, written.ptr);
}

inline std::string quoted(std::string_view text) { return "\"" + std::string(text) + "\""; }

// Whether value `index` of `field` is the value `request` asks for.
inline bool value_equals(const table::ConfigField& field, std::size_t index, const FieldRequest& request) noexcept {
  switch (field.kind) {
    case table::FieldKind::float_value: return field.float_values[index] == request.real;
    case table::FieldKind::string_value: return request.text == field.string_values[index];
    case table::FieldKind::int_value:
    case table::FieldKind::bool_value:
    case table::FieldKind::dtype_value: break;
  }
  return field.int_values[index] == request.integer;
}

// Value `index` of `field` as messages show it: 1024, 0.5, true, bf16, "relu".
inline std::string value_text(const table::ConfigField& field, std::size_t index) {
  switch (field.kind) {
    case table::FieldKind::float_value: return real_text(field.float_values[index]);
    case table::FieldKind::bool_value: return field.int_values[index] ? "true" : "false";
    case table::FieldKind::dtype_value: return dtype_name(static_cast<DType>(field.int_values[index]));
    case table::FieldKind::string_value: return quoted(field.string_values[index]);
    case table::FieldKind::int_value: break;
  }
  return std::to_string(field.int_values[index]);
}

// A request for `field` as messages show it, as value_text does.
inline std::string request_text(const table::ConfigField& field, const FieldRequest& request) {
  switch (field.kind) {
    case table::FieldKind::float_value: return real_text(request.real);
    case table::FieldKind::bool_value: return request.integer ? "true" : "false";
    case table::FieldKind::dtype_value: return dtype_name(static_cast<DType>(request.integer));
    case table::FieldKind::string_value: return quoted(request.text);
    case table::FieldKind::int_value: break;
  }
  return std::to_string(request.integer);
}

}  // namespace taot::detail
