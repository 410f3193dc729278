// The facts of one compiled image (a cubin for one target and what its launch needs), listed once
// (X-macros). taot::table::Image's members are made from TAOT_IMAGE_FIELDS, in its order; the code
// generator writes each image's row from it (codegen/src/generator.cpp, image_value); the C API's
// taot_image_info is filled from it (runtime/src/library.cpp) and the Python binding's variants()
// dicts (python/src/native.cpp). The manifest keys of both lists are every key of a manifest image
// entry: the front end's writer (python/taot/library/manifest.py) writes those and no other, the
// codegen reader (codegen/src/manifest.cpp) reads each, and `taot diff` shows the rows named here
// (workbench/src/compare.cpp). Tests walk these lists to catch a consumer that misses an entry:
// tests/unit/runtime/image_fields_test.cpp, tests/unit/codegen/image_fields_test.cpp and
// tests/python/test_image_fields.py (which reads this file).
//
// Adding a launch attribute: a row here; the front end's writer and the codegen reader (read it
// into codegen::Image); the generator's case for it (a switch over the list, so a missing case does
// not compile); and, where the row says "own", the consumer that fills it by hand.
#pragma once

// X(field, type, manifest_key, info, python, compare), one row per member of taot::table::Image,
// in its order (changing the order or a type changes the tables' layout: bump TAOT_ABI_VERSION):
//   field         the member's name
//   type          its type (in namespace taot::table); an array is written T[N]
//   manifest_key  where taot gen takes it from: a key of the manifest's image entry, "outer.inner"
//                 for a member of a nested object (docs/manifest.md)
//   info          how taot_image_info carries it: copy (a member of the same name, assigned from
//                 the table), own (a member of the same name that library.cpp fills itself: the
//                 table's value needs converting) or none
//   python        how variants()' image dicts show it: copy (under its manifest key, which is not
//                 nested), own (variants() writes it itself, under the top-level manifest key) or none
//   compare       the row `taot diff` and `taot inspect` show it in, "" for none (the target's row
//                 shows the vendor: sm_90 or gfx942)
#define TAOT_IMAGE_FIELDS(X)                                                                              \
  X(target, const char*, "target", copy, copy, "target")                      /* "sm_90", as in the spec */ \
  X(arch, std::uint16_t, "arch", copy, copy, "arch")                          /* major * 10 + minor */      \
  X(arch_specific, bool, "arch_specific", copy, none, "arch")                 /* sm_XXa: exactly `arch` */  \
  X(vendor, Vendor, "vendor", own, own, "target")                             /* nvidia, amd: its driver */ \
  X(warp_size, std::uint16_t, "warp_size", copy, copy, "")                    /* threads per warp */        \
  X(cubin, const void*, "cubin", copy, none, "")                              /* ELF bytes */               \
  X(cubin_size, std::size_t, "cubin", copy, none, "")                                                       \
  X(function_name, const char*, "function_name", copy, none, "")              /* the entry point */         \
  X(shared_bytes, std::uint32_t, "shared", copy, copy, "shared")              /* dynamic, per block */      \
  X(num_warps, std::uint16_t, "num_warps", copy, copy, "num_warps")                                         \
  X(num_ctas, std::uint16_t, "num_ctas", copy, copy, "num_ctas")                                            \
  X(cluster_dims, std::uint32_t[3], "cluster_dims", own, none, "cluster_dims")                              \
  X(global_scratch_size, std::uint64_t, "global_scratch_size", copy, copy, "global_scratch_size")           \
  X(global_scratch_align, std::uint32_t, "global_scratch_align", none, none, "global_scratch_align")        \
  X(profile_scratch_size, std::uint64_t, "profile_scratch_size", copy, copy, "profile_scratch_size")        \
  X(profile_scratch_align, std::uint32_t, "profile_scratch_align", none, none, "profile_scratch_align")     \
  X(cooperative, bool, "launch_cooperative_grid", copy, copy, "launch_cooperative_grid")                    \
  X(pdl, bool, "launch_pdl", copy, copy, "launch_pdl")                                                      \
  X(tensordescs, const TensordescMeta*, "tensordesc_meta", none, none, "tensordesc_meta")                   \
  X(tensordesc_count, std::uint16_t, "tensordesc_meta", none, none, "tensordesc_meta")                      \
  X(tensordesc_layout, abi::TensordescLayout, "launch_abi.tensordesc_layout", own, own, "tensordesc_layout") \
  X(registers, std::uint16_t, "ptxas.registers", copy, none, "registers")     /* 0: not recorded */         \
  X(spill_stores, std::uint32_t, "ptxas.spill_stores", copy, none, "spill_stores")                          \
  X(spill_loads, std::uint32_t, "ptxas.spill_loads", copy, none, "spill_loads")                             \
  X(stack_bytes, std::uint32_t, "ptxas.stack", copy, none, "stack")                                         \
  X(triton_version, const char*, "triton_version", copy, copy, "triton_version")                            \
  X(ptxas_version, const char*, "ptxas_version", copy, copy, "ptxas_version")                               \
  X(override_stage, const char*, "override.stage", copy, none, "override")                                  \
  X(override_sha256, const char*, "override.sha256", copy, none, "override")

// X(manifest_key, compare): the keys of a manifest image entry that the tables do not carry (what
// `taot gen` checks or locates files by, and what only the workbench reads), with the row `taot
// diff` shows each in ("" for none).
#define TAOT_IMAGE_MANIFEST_ONLY_KEYS(X) \
  X("dir", "")                           \
  X("cubin_sha256", "")                  \
  X("num_stages", "num_stages")          \
  X("tmem_size", "tmem_size")            \
  X("maxnreg", "maxnreg")                \
  X("artifacts", "")                     \
  X("launch_abi.scratch_pointers", "")   \
  X("override.file", "")
