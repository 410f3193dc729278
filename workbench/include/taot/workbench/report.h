// What `taot inspect` and `taot diff` print: tables for people, JSON for programs. Rendering only;
// the data comes from the other workbench headers. Pure functions.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "taot/workbench/compare.h"
#include "taot/workbench/inventory.h"
#include "taot/workbench/op_counts.h"
#include "taot/workbench/stages.h"

namespace taot::workbench {

// One row per image (kernel, variant, target, registers, spill stores/loads, stack, shared memory,
// local memory, warps, stages, CTAs, scratch; for a library or manifest also the Triton and ptxas
// versions, the oldest driver that loads the cubin and the override), then a count line and notes
// (cubins that could not be read or changed since the manifest was written). AMD images get a
// table of their own after it, of their code object's metadata (VGPRs, SGPRs, AGPRs, spills, LDS,
// scratch, wavefront size), with the launch options, the Triton version and the override.
std::string inspect_table(const Inventory& inventory, const std::vector<const ImageView*>& images);

// The JSON documents of `taot inspect --json` and `taot diff --json` carry their schema, as every
// command's do (docs/workbench.md, "Every command"): "schema": "taot.inspect" or "taot.diff",
// "schema_version": kJsonSchemaVersion.
inline constexpr int kJsonSchemaVersion = 1;

// {"origin", "path", "library", "count", "total", "images": [...]} with every fact of each image;
// an AMD image's code object metadata under "amdgpu" (null for NVIDIA images), its cubin facts null.
std::string inspect_json(const Inventory& inventory, const std::vector<const ImageView*>& images);

// One image's stage: {"kernel", "variant", "target", "stage", "op_counts", "text"}.
std::string stage_json(const ImageView& image, Stage stage, const std::string& text, const OpCounts& counts);

// Op counts, one per line: the count right-aligned, then the op; most frequent first.
std::string op_counts_text(const OpCounts& counts);

// Two things compared: two images (with their comparison), or two IR files (labels and ops only).
struct ComparisonReport {
  std::string a_label;
  std::string b_label;
  std::optional<ImageComparison> images;  // absent when two files were compared
  std::optional<Stage> stage;             // the stage of the op counts and the diff
  std::vector<OpCountRow> ops;            // empty when no stage was compared
  std::string unified_diff;               // empty when none was asked or the stage texts are equal
  bool diff_asked = false;
};

// The differences as sections (config, specialization, metadata, resources), op counts side by
// side with changed rows marked, then the unified diff.
std::string comparison_text(const ComparisonReport& report);
std::string comparison_json(const ComparisonReport& report);

}  // namespace taot::workbench
