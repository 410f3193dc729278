// Tuned tables baked into a generated library (docs/tuning.md): files in taot's or vLLM's format,
// read by the runtime's parser and checked against a kernel of the manifest with the runtime's
// checks and messages; and the files `taot gen --tuning` names, each bound to its kernel.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "taot/codegen/errors.h"
#include "taot/codegen/manifest.h"
#include "taot/kernel_table.h"

namespace taot::codegen {

// One table for one device, ready to be written as a table::TunedTable.
struct BakedTable {
  std::string device;  // as the driver names it; "" for any device
  std::string source;  // the file it was read from (as given), for messages
  table::TuningMatch match = table::TuningMatch::nearest;
  // Per entry, sorted and distinct: one value per argument of the kernel's tuning_key.
  std::vector<std::vector<std::int64_t>> keys;
  // Per entry: one index into ConfigField::values per config field of the kernel, in order, or
  // table::kUnsetValue for a field the entry does not give.
  std::vector<std::vector<std::uint16_t>> configs;
};

// Reads and checks `files` against `kernel`, in order: as the runtime checks a table it loads
// (the file's kernel, key names, config fields and compiled values, no key twice), plus at most
// one table per device (an error names both files). Thread-safe; reads only `files`.
Expected<std::vector<BakedTable>> bake_tuning(const Kernel& kernel, const std::vector<std::filesystem::path>& files);

// A file given to `taot gen --tuning`: `kernel` is the kernel it is bound to ("KERNEL=FILE";
// vLLM files must be bound), or empty for a taot-format file, which names its kernel.
struct TuningFileArgument {
  std::string kernel;
  std::filesystem::path path;
};

// "KERNEL=FILE" when the text before the first '=' is an identifier and the whole text names no
// existing file (vLLM's file names hold '=': "E=8,N=14336,device_name=....json" is a file), else
// FILE alone.
TuningFileArgument parse_tuning_argument(std::string_view text);

// Which files are for which kernel of `manifest`: kernel name -> files in the order given. Every
// file is read and baked here, so that a bad table fails before anything is generated. Fails on a
// kernel the manifest lacks, an unbound vLLM file, and whatever bake_tuning refuses.
Expected<std::map<std::string, std::vector<std::filesystem::path>>> assign_tuning_files(
    const Manifest& manifest, const std::vector<TuningFileArgument>& arguments);

}  // namespace taot::codegen
