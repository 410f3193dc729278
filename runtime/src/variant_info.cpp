// VariantInfo: read-only descriptions of compiled variants, for enumeration and messages.
#include <string>

#include "taot/runtime.h"
#include "arg_kinds.h"
#include "config_fields.h"

namespace taot {
namespace {

const table::ConfigField* find_field(const table::KernelTable& table, std::string_view name, std::size_t* index) {
  for (std::size_t f = 0; f < table.field_count; ++f) {
    if (name == table.fields[f].name) {
      *index = f;
      return &table.fields[f];
    }
  }
  return nullptr;
}

}  // namespace

std::optional<std::int64_t> VariantInfo::config_integer(std::string_view name) const noexcept {
  std::size_t f = 0;
  const table::ConfigField* field = find_field(*table_, name, &f);
  if (field == nullptr || field->kind == table::FieldKind::float_value || field->kind == table::FieldKind::string_value)
    return std::nullopt;
  return field->int_values[data().config[f]];
}

std::optional<std::string_view> VariantInfo::config_text(std::string_view name) const noexcept {
  std::size_t f = 0;
  const table::ConfigField* field = find_field(*table_, name, &f);
  if (field == nullptr || field->kind != table::FieldKind::string_value) return std::nullopt;
  return std::string_view(field->string_values[data().config[f]]);
}

std::optional<double> VariantInfo::config_real(std::string_view name) const noexcept {
  std::size_t f = 0;
  const table::ConfigField* field = find_field(*table_, name, &f);
  if (field == nullptr || field->kind != table::FieldKind::float_value) return std::nullopt;
  return field->float_values[data().config[f]];
}

std::string VariantInfo::describe() const {
  const table::Variant& variant = data();
  std::string text;
  for (std::size_t a = 0; a < table_->arg_count; ++a) {
    const table::Arg& arg = table_->args[a];
    const table::ArgSpecialization& spec = variant.specialization[a];
    text += (a ? ", " : "") + std::string(arg.name) + ": " + detail::variant_text(arg, spec);
  }
  text += ";";
  for (std::size_t f = 0; f < table_->field_count; ++f) {
    const table::ConfigField& field = table_->fields[f];
    text += std::string(" ") + field.name + "=" + detail::value_text(field, variant.config[f]);
  }
  text += ";";
  for (std::uint16_t i = 0; i < variant.image_count; ++i) text += std::string(" ") + variant.images[i].target;
  return text;
}

}  // namespace taot
