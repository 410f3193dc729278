// How many of each operation a stage's text holds: MLIR ops by dialect name (`tt.load`,
// `arith.addf`), LLVM IR instructions by opcode (calls by callee: `call @llvm.nvvm.read.ptx.sreg.tid.x`,
// `call asm`), PTX and SASS instructions by opcode with modifiers (`ld.global.v4.b32`, `LDG.E.128`),
// AMDGCN instructions by mnemonic with their encoding (`v_add_f32_e32`, `global_load_dwordx4`).
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "taot/workbench/stages.h"

namespace taot::workbench {

using OpCounts = std::map<std::string, std::size_t>;

// The operations of `text`, a `stage`'s text (sass: nvdisasm's output, with or without line info).
// Pure; lines it does not recognise as operations are not counted.
OpCounts count_ops(Stage stage, std::string_view text);

// One operation's counts on two sides.
struct OpCountRow {
  std::string op;
  std::size_t a = 0;
  std::size_t b = 0;
};

// Every operation of either side, by name.
std::vector<OpCountRow> side_by_side(const OpCounts& a, const OpCounts& b);

}  // namespace taot::workbench
