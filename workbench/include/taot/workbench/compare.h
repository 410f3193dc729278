// An image's resource usage (ptxas' report where the build recorded it, else the cubin; an AMD
// image's code object metadata) and launch metadata as comparable facts, and the differences
// between two images.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "taot/workbench/inventory.h"

namespace taot::workbench {

// Per thread unless said otherwise; bytes for sizes. Absent: not known for this image.
struct ResourceUsage {
  std::optional<std::uint32_t> registers;      // ptxas' report, else the cubin's EIATTR_REGCOUNT
  std::optional<std::uint32_t> spill_stores;   // ptxas' report only (the cubin does not record spills)
  std::optional<std::uint32_t> spill_loads;
  std::optional<std::uint32_t> stack;          // ptxas' stack frame, else the cubin's stack size
  std::optional<std::uint32_t> local;          // the cubin's .nv.local section
  std::optional<std::uint32_t> static_shared;  // per block: the cubin's .nv.shared section
  std::optional<std::uint64_t> dynamic_shared; // per block: the manifest's "shared" (launch)
  bool from_ptxas = false;                     // registers and stack come from ptxas' report

  // Shared memory per block at launch: static + dynamic, when either is known.
  std::optional<std::uint64_t> shared() const;
};

ResourceUsage resource_usage(const ImageView& image);

// The launch metadata of an image as text, in a fixed order (kernel, target, arch, num_warps, num_ctas,
// num_stages, shared, scratch sizes and alignments, cluster_dims, maxnreg, tmem_size, launch_pdl,
// launch_cooperative_grid, versions, tensordesc layout and TMA maps, override); a bare cubin has
// only kernel and target.
std::vector<NamedValue> metadata_facts(const ImageView& image);
// Resource usage as text; "-" when unknown. An NVIDIA image: registers, spill_stores, spill_loads,
// stack, local, static_shared. An AMD image, from its code object's metadata note: vgprs, sgprs,
// agprs, vgpr_spills, sgpr_spills, lds_fixed (the launch's dynamic LDS is the metadata's shared),
// scratch, dynamic_stack, wavefront_size.
std::vector<NamedValue> resource_facts(const ImageView& image);

// One fact with different values on the two sides ("-" where a side lacks it).
struct Difference {
  std::string name;
  std::string a;
  std::string b;
};

struct ImageComparison {
  std::vector<Difference> config;
  std::vector<Difference> specialization;
  std::vector<Difference> metadata;
  std::vector<Difference> resources;
  bool same() const { return config.empty() && specialization.empty() && metadata.empty() && resources.empty(); }
};

// What differs between two images. Pure.
ImageComparison compare_images(const ImageView& a, const ImageView& b);

}  // namespace taot::workbench
