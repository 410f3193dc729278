// `taot diff`'s work: two images (variants of a library, or two libraries) or two stage files
// compared: their config, specialization, metadata and resource differences, op counts side by
// side, and a unified diff of one stage.
#pragma once

#include <cstddef>
#include <filesystem>
#include <optional>

#include "taot/workbench/errors.h"
#include "taot/workbench/inventory.h"
#include "taot/workbench/report.h"
#include "taot/workbench/stage_text.h"
#include "taot/workbench/stages.h"

namespace taot::workbench {

struct DiffOptions {
  // Images: the stage to diff line by line (its op counts too); one of the images' vendor (ptx
  // and sass NVIDIA's, amdgcn AMD's). Absent: no line diff, op counts of ttgir when both images
  // kept it.
  std::optional<Stage> stage{};
  bool keep_locations = false;  // diff the texts as they are, locations and addresses included
  std::size_t context = 3;      // lines of context around each change
  StageTextOptions text{};      // how sass is disassembled (nvdisasm)
};

// Compares two images. Fails when a stage asked for is not kept or cannot be read (naming it).
Expected<ComparisonReport> diff_images(const ImageView& a, const ImageView& b, const DiffOptions& options);

// Compares two files of one stage (`.ttir`, `.ttgir`, `.llir`, `.ptx`, `.amdgcn`, plain or `.gz`;
// `.cubin`: its SASS and resource usage): op counts and the unified diff; or two AMD code objects
// (`.hsaco`): their first kernels' metadata, no stage. Fails naming a file whose stage is unknown
// or differs from the other's, or a stage asked of code objects.
Expected<ComparisonReport> diff_files(const std::filesystem::path& a, const std::filesystem::path& b,
                                      const DiffOptions& options);

}  // namespace taot::workbench
