// The manifest fuzz check (see manifest_check.h): one reader call per input against a fixture
// folder of cubins, then the promises of manifest.h on what came back.
#include "manifest_check.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <vector>

#include "manifest_builder.h"
#include "taot/codegen/manifest.h"

namespace taot::codegen::fuzz {
namespace {

// The fixture's cubins under a temporary folder, removed at exit; inputs are read as its
// manifest.json (which is never written: the reader gets the text in memory).
struct Fixture {
  testing::TempDir dir;
  testing::ManifestBuilder builder{dir.path()};
  std::filesystem::path manifest_path = dir.path() / "manifest.json";
};

Fixture& fixture() {
  static Fixture instance;
  return instance;
}

std::size_t operand_count(GridOp op) {
  switch (op) {
    case GridOp::literal:
    case GridOp::arg:
    case GridOp::num_sms: return 0;
    case GridOp::neg: return 1;
    default: return 2;
  }
}

// The first promise of manifest.h (and of what the generator relies on) that `manifest` breaks.
std::optional<std::string> broken_promise(const Manifest& manifest) {
  if (manifest.targets.empty()) return "accepted a manifest without targets";
  if (manifest.kernels.empty()) return "accepted a manifest without kernels";
  for (const Kernel& kernel : manifest.kernels) {
    const std::string where = "kernel \"" + kernel.name + "\"";
    const std::vector<std::size_t> call_args = kernel.call_arguments();
    if (kernel.variants.empty()) return where + " has no variants";
    for (const std::string& target : kernel.targets) {
      if (std::find(manifest.targets.begin(), manifest.targets.end(), target) == manifest.targets.end())
        return where + ": target \"" + target + "\" is not among the library's";
    }
    // Rule programs: operands in range, jumps forward to an instruction or the end.
    const auto broken_rule = [&](const Rule& rule) -> std::optional<std::string> {
      if (rule.program.empty()) return where + ": an empty rule program";
      for (std::size_t i = 0; i < rule.program.size(); ++i) {
        const RuleInstr& instr = rule.program[i];
        const bool jumps = instr.op == RuleOp::jz || instr.op == RuleOp::jnz || instr.op == RuleOp::jmp;
        if (jumps && (instr.operand <= i || instr.operand > rule.program.size()))
          return where + ": rule \"" + rule.expression + "\" jumps to " + std::to_string(instr.operand);
        if ((instr.op == RuleOp::arg || instr.op == RuleOp::isnone) && instr.operand >= call_args.size())
          return where + ": rule \"" + rule.expression + "\" reads a call argument out of range";
        if (instr.op == RuleOp::field && instr.operand >= kernel.config.size())
          return where + ": rule \"" + rule.expression + "\" reads a config field out of range";
      }
      return std::nullopt;
    };
    for (const Heuristic& heuristic : kernel.heuristics) {
      if (heuristic.field_index >= kernel.config.size() || kernel.config[heuristic.field_index].name != heuristic.field)
        return where + ": a heuristic for \"" + heuristic.field + "\", which is no config field";
      if (auto broken = broken_rule(heuristic.rule)) return broken;
    }
    for (const Rule& rule : kernel.requirements)
      if (auto broken = broken_rule(rule)) return broken;
    for (const std::string& name : kernel.tuning_key) {
      const bool int_argument = std::any_of(call_args.begin(), call_args.end(), [&](std::size_t a) {
        return kernel.args[a].name == name && kernel.args[a].kind == ArgKind::int_scalar;
      });
      if (!int_argument) return where + ": tuning key \"" + name + "\" is no int call argument";
    }
    for (const ConfigField& field : kernel.config) {
      if (field.default_index >= field.values.size())
        return where + ": config field \"" + field.name + "\" has its default out of its values";
    }
    for (const Variant& variant : kernel.variants) {
      const std::string at = where + " variant \"" + variant.id + "\"";
      if (variant.specialization.size() != call_args.size())
        return at + ": " + std::to_string(variant.specialization.size()) + " specializations for " +
               std::to_string(call_args.size()) + " call arguments";
      for (std::size_t i = 0; i < call_args.size(); ++i) {
        const Arg& arg = kernel.args[call_args[i]];
        if (std::find(arg.types.begin(), arg.types.end(), variant.specialization[i].type) == arg.types.end())
          return at + ": argument \"" + arg.name + "\" specialized for a type it does not take";
      }
      if (variant.config.size() != kernel.config.size())
        return at + ": " + std::to_string(variant.config.size()) + " config values for " +
               std::to_string(kernel.config.size()) + " fields";
      for (std::size_t f = 0; f < variant.config.size(); ++f) {
        if (variant.config[f] >= kernel.config[f].values.size()) return at + ": config value index out of range";
      }
      for (std::size_t param : variant.params) {
        if (param >= call_args.size()) return at + ": a parameter that is no call argument";
        const Arg& arg = kernel.args[call_args[param]];
        if (arg.launch_only) return at + ": the launch-only argument \"" + arg.name + "\" is a parameter";
        if (variant.specialization[param].none) return at + ": \"" + arg.name + "\" is compiled None and a parameter";
      }
      for (std::size_t i = 0; i < call_args.size(); ++i) {
        if (variant.specialization[i].none && !kernel.args[call_args[i]].none)
          return at + ": \"" + kernel.args[call_args[i]].name + "\" is compiled None but may not be";
      }
      for (const GridProgram& program : variant.grid) {
        std::size_t depth = 0;
        for (const GridInstr& instr : program) {
          const std::size_t operands = operand_count(instr.op);
          if (depth < operands) return at + ": a grid program pops an empty stack";
          if (instr.op == GridOp::arg &&
              (instr.arg >= call_args.size() || kernel.args[call_args[instr.arg]].kind != ArgKind::int_scalar))
            return at + ": a grid program reads something that is no int call argument";
          depth = depth - operands + 1;
        }
        if (depth != 1) return at + ": a grid program leaves " + std::to_string(depth) + " values";
      }
      if (variant.images.empty()) return at + " has no images";
      if (variant.images.size() > kernel.targets.size()) return at + " has more images than its kernel has targets";
      for (const Image& image : variant.images) {
        if (std::find(kernel.targets.begin(), kernel.targets.end(), image.target) == kernel.targets.end())
          return at + ": an image for target \"" + image.target + "\", which is not among the kernel's targets";
        if (image.num_warps == 0 || image.num_ctas == 0) return at + ": an image with num_warps or num_ctas 0";
        if (image.cubin_sha256.size() != 64) return at + ": an image whose cubin_sha256 is no SHA-256";
      }
    }
  }
  return std::nullopt;
}

}  // namespace

Verdict check_manifest_text(std::string_view text) {
  const Fixture& fix = fixture();
  const Expected<Manifest> read = parse_manifest(text, fix.manifest_path, ReadOptions{.verify_cubins = true});
  Verdict verdict;
  if (read.ok()) {
    verdict.accepted = true;
    verdict.bug = broken_promise(*read);
    return verdict;
  }
  const Status& status = read.status();
  const std::string prefix = fix.manifest_path.generic_string() + ": ";
  if (status.code() != TAOT_INVALID_ARGUMENT) {
    verdict.bug = "an error with code " + std::to_string(status.code()) + " instead of TAOT_INVALID_ARGUMENT: " +
                  status.message();
  } else if (status.message().rfind(prefix, 0) != 0) {
    verdict.bug = "an error that does not start with the manifest's path: " + status.message();
  } else if (status.message().rfind(prefix + "internal error reading the manifest:", 0) == 0) {
    // parse_manifest turns an exception into this message: one escaped the reader's own checks.
    verdict.bug = "an exception escaped the reader's checks: " + status.message();
  }
  return verdict;
}

std::map<std::string, std::string> seed_manifests() {
  const nlohmann::json& full = fixture().builder.json;
  std::map<std::string, std::string> seeds;
  seeds["valid_demo.json"] = full.dump() + "\n";
  for (const nlohmann::json& kernel : full.at("kernels")) {
    nlohmann::json alone = full;
    alone["kernels"] = nlohmann::json::array({kernel});
    seeds["valid_" + kernel.at("name").get<std::string>() + ".json"] = alone.dump() + "\n";
  }
  return seeds;
}

}  // namespace taot::codegen::fuzz
