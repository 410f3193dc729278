// Stage texts: IR files and nvdisasm.
#include "taot/workbench/stage_text.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>
#include <system_error>

#include "subprocess.h"
#include "taot/workbench/source_map.h"
#include "text_util.h"

namespace taot::workbench {

namespace {

namespace fs = std::filesystem;

bool is_executable(const fs::path& path) {
  std::error_code error;
  return fs::is_regular_file(path, error) && access(path.c_str(), X_OK) == 0;
}

// Where Triton's NVIDIA backend keeps its tools, asking Python where the package is (without importing it).
fs::path triton_tool_folder() {
  const char* chosen = std::getenv("TAOT_PYTHON");
  const std::string python = chosen && *chosen ? chosen : "python3";
  Expected<detail::ProcessOutput> output = detail::run_and_collect(
      {python, "-c",
       "import importlib.util as u, os; s = u.find_spec('triton'); "
       "print(os.path.join(os.path.dirname(s.origin), 'backends', 'nvidia', 'bin') if s else '')"});
  if (!output.ok() || output->exit_code != 0) return {};
  return fs::path(std::string(trim(output->out)));
}

// "a", "a and b", "a, b and c".
std::string spoken_list(const std::vector<std::string>& items) {
  std::string text;
  for (std::size_t index = 0; index < items.size(); ++index) {
    if (index > 0) text += index + 1 == items.size() ? " and " : ", ";
    text += items[index];
  }
  return text;
}

}  // namespace

Expected<fs::path> find_nvdisasm() {
  if (const char* chosen = std::getenv("TAOT_NVDISASM"); chosen && *chosen) {
    if (is_executable(chosen)) return fs::path(chosen);
    return tool_error(std::string("$TAOT_NVDISASM names ") + chosen + ", which is no executable file");
  }
  if (const fs::path triton = triton_tool_folder(); !triton.empty() && is_executable(triton / "nvdisasm"))
    return triton / "nvdisasm";
  if (is_executable("/usr/local/cuda/bin/nvdisasm")) return fs::path("/usr/local/cuda/bin/nvdisasm");
  if (const char* path = std::getenv("PATH")) {
    std::string_view rest = path;
    while (!rest.empty()) {
      const std::size_t colon = rest.find(':');
      const fs::path candidate = fs::path(std::string(rest.substr(0, colon))) / "nvdisasm";
      if (is_executable(candidate)) return candidate;
      if (colon == std::string_view::npos) break;
      rest.remove_prefix(colon + 1);
    }
  }
  return tool_error("no nvdisasm found: set $TAOT_NVDISASM, or install Triton (it ships one under "
                    "triton/backends/nvidia/bin) or the CUDA toolkit");
}

Expected<std::string> disassemble(const fs::path& nvdisasm, const fs::path& cubin, SassLines lines) {
  std::vector<std::string> args = {nvdisasm.string(), "-c"};
  if (lines == SassLines::source) args.push_back("-gi");
  if (lines == SassLines::ptx) args.push_back("-gp");
  args.push_back(cubin.string());
  Expected<detail::ProcessOutput> output = detail::run_and_collect(args);
  if (!output.ok()) return std::move(output).take_status();
  if (output->exit_code != 0)
    return tool_error(nvdisasm.string() + " cannot disassemble " + cubin.string() + ": " +
                      std::string(trim(output->err.empty() ? output->out : output->err)));
  return std::move(output->out);
}

Expected<std::string> stage_text(const ImageView& image, Stage stage, const StageTextOptions& options) {
  const table::Vendor vendor = image.vendor();
  // What the image has, for messages: its kept IR files, and an NVIDIA image's sass (the cubin).
  std::vector<std::string> has;
  for (const auto& [kept, path] : image.stages) has.emplace_back(stage_name(kept));
  if (vendor == table::Vendor::nvidia) has.emplace_back(stage_name(Stage::sass));
  if (!stage_of_vendor(stage, vendor)) {
    const table::Vendor other = vendor == table::Vendor::amd ? table::Vendor::nvidia : table::Vendor::amd;
    const std::string what_it_has =
        has.empty() ? fmt::format("it has no stage kept; an {} image can have {}", vendor_title(vendor),
                                  stage_names(vendor))
                    : "it has " + spoken_list(has);
    return usage_error(fmt::format("{} is an {} image: {} is {} {} ({})", image.label(), vendor_title(vendor),
                                   stage_name(stage), vendor_title(other),
                                   stage == Stage::sass ? "machine code" : "assembly", what_it_has));
  }
  if (stage == Stage::sass) {
    fs::path nvdisasm = options.nvdisasm;
    if (nvdisasm.empty()) {
      Expected<fs::path> found = find_nvdisasm();
      if (!found.ok()) return std::move(found).take_status();
      nvdisasm = *found;
    }
    if (!options.line_info) return disassemble(nvdisasm, image.cubin, SassLines::none);
    const auto ptx = image.stages.find(Stage::ptx);
    const bool edited = image.manifest_image && image.manifest_image->override_from &&
                        (image.manifest_image->override_from->stage == "ptx" ||
                         image.manifest_image->override_from->stage == "cubin");
    if (ptx != image.stages.end() && !edited) {
      Expected<std::string> ptx_text = read_text_file(ptx->second);
      if (ptx_text.ok()) {
        Expected<std::string> sass = disassemble(nvdisasm, image.cubin, SassLines::ptx);
        if (!sass.ok()) return sass;
        return sass_with_ptx_locations(*sass, *ptx_text);
      }
    }
    return disassemble(nvdisasm, image.cubin, SassLines::source);
  }
  auto file = image.stages.find(stage);
  if (file == image.stages.end()) {
    std::string why;
    if (!image.manifest_image)
      why = vendor == table::Vendor::amd ? "a bare code object keeps no IR: name the library it came from"
                                         : "a bare cubin keeps no IR; sass is always there";
    else if (image.stages.empty())
      why = vendor == table::Vendor::amd ? "no IR was kept: built with --ir none"
                                         : "no IR was kept: built with --ir none; sass is always there";
    else
      why = "it has " + spoken_list(has);
    return usage_error(fmt::format("{} has no {} kept ({})", image.label(), stage_name(stage), why));
  }
  return read_text_file(file->second);
}

}  // namespace taot::workbench
