// The code generator's mustache templates (codegen/templates/*.mustache), embedded at build time.
#pragma once

#include <span>
#include <string_view>

namespace taot::codegen::detail {

struct EmbeddedTemplate {
  std::string_view name;  // the file name in codegen/templates, e.g. "library.h.mustache"
  std::string_view text;
};

// Every embedded template, in the order codegen/CMakeLists.txt lists them. Defined in the
// generated embedded_templates.cpp.
std::span<const EmbeddedTemplate> embedded_templates() noexcept;

}  // namespace taot::codegen::detail
