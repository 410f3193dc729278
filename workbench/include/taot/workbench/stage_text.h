// The text of an image's stage: its kept IR file (an AMD image's amdgcn among them), or its cubin
// disassembled by nvdisasm (with line information when asked), and finding nvdisasm.
#pragma once

#include <filesystem>
#include <string>

#include "taot/workbench/errors.h"
#include "taot/workbench/inventory.h"
#include "taot/workbench/stages.h"

namespace taot::workbench {

// The nvdisasm to run: $TAOT_NVDISASM; else the one Triton ships (asking the Python of
// $TAOT_PYTHON, else python3, where triton.backends.nvidia is); else the CUDA toolkit's
// (/usr/local/cuda/bin); else nvdisasm on PATH. Fails saying where it looked. Thread-safe.
Expected<std::filesystem::path> find_nvdisasm();

// Which line information nvdisasm adds: none, source lines (-gi), or lines of the cubin's embedded
// PTX (-gp).
enum class SassLines { none, source, ptx };

// The SASS of `cubin` as nvdisasm -c prints it. Fails naming the cubin with nvdisasm's message
// when it cannot disassemble it.
Expected<std::string> disassemble(const std::filesystem::path& nvdisasm, const std::filesystem::path& cubin,
                                  SassLines lines);

struct StageTextOptions {
  bool line_info = true;            // sass: with line-info comments (`//## File "k.py", line 12 ...`)
  std::filesystem::path nvdisasm{}; // sass: the nvdisasm to run; empty: find_nvdisasm()
};

// The text of `stage` of `image`. sass with line info: when the image kept its PTX (and was not
// rebuilt from an edited PTX or cubin), nvdisasm -gp translated through the PTX's locations
// (sass_with_ptx_locations: inlined code keeps the kernel's lines); else nvdisasm -gi. Fails
// naming the image, the stage and the stages it has when the stage is another vendor's (ptx or
// sass of an AMD image, amdgcn of an NVIDIA one; the message names the image's vendor), when the
// IR was not kept (built with --ir none; a bare cubin or code object keeps none) or the file is
// missing or unreadable.
Expected<std::string> stage_text(const ImageView& image, Stage stage, const StageTextOptions& options = {});

}  // namespace taot::workbench
