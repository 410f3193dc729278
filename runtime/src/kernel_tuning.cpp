// Kernel's run-time tuned tables: loading a file or text in place of the table for its device,
// and going back to the baked tables (docs/tuning.md); first-call autotuning's switches.
#include <string>
#include <string_view>
#include <utility>

#include "kernel_state.h"
#include "taot/runtime.h"
#include "taot/tuning_file.h"
#include "tuning.h"

namespace taot {
namespace {

// Messages start with the kernel's qualified name: "lib::kernel: tables/x.json: entry M=64: ...".
Status load_into(detail::KernelState& state, const table::KernelTable& table, Expected<TuningFile> file) {
  if (!file.ok()) return std::move(file).take_status().with_context(state.index.qualified_name());
  Expected<detail::OwnedTable> resolved = detail::resolve_tuning(*file, table);
  if (!resolved.ok()) return std::move(resolved).take_status().with_context(state.index.qualified_name());
  state.tuning.load(std::move(resolved).value());
  return {};
}

}  // namespace

Status Kernel::load_tuning(const std::string& path, std::string_view device) {
  Expected<detail::KernelState*> state = this->state();
  if (!state.ok()) return std::move(state).take_status();
  return load_into(**state, *table_, read_tuning_file(path, device));
}

Status Kernel::load_tuning_text(std::string_view text, const std::string& source, std::string_view device) {
  Expected<detail::KernelState*> state = this->state();
  if (!state.ok()) return std::move(state).take_status();
  return load_into(**state, *table_, parse_tuning_file(text, source, device));
}

Status Kernel::reset_tuning() {
  Expected<detail::KernelState*> state = this->state();
  if (!state.ok()) return std::move(state).take_status();
  (*state)->tuning.reset();
  return {};
}

Status Kernel::set_autotune(std::optional<bool> on) {
  Expected<detail::KernelState*> state = this->state();
  if (!state.ok()) return std::move(state).take_status();
  (*state)->autotuned.set_enabled(on);
  (*state)->chooser.forget_choices();
  return {};
}

Status Kernel::reset_autotune() {
  Expected<detail::KernelState*> state = this->state();
  if (!state.ok()) return std::move(state).take_status();
  (*state)->autotuned.clear();
  (*state)->chooser.forget_choices();
  return {};
}

}  // namespace taot
