// taot: the Triton ahead-of-time toolkit's command line. Parses arguments and runs one command.
#include <CLI/CLI.hpp>

#include "commands.h"

int main(int argc, char** argv) {
  CLI::App app{"taot: Triton kernels to self-contained C++ libraries"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "taot 0.1.0");

  taot::tool::CompileOptions compile;
  auto add_compile_options = [&compile](CLI::App* command) {
    command->add_option("spec", compile.spec, "The spec: a .toml file, or a .py file defining taot_spec()")->required();
    command->add_option("-o,--output", compile.output, "Output folder (manifest.json, artifacts/, sources)")->required();
    command->add_option("-j,--jobs", compile.jobs, "Parallel compile jobs (default: all cores)")->check(CLI::PositiveNumber);
    command->add_option("--target", compile.targets, "Compile for these targets instead of the spec's (sm_80, sm_90, ...)");
    command->add_flag("-q,--quiet", compile.quiet, "Print errors only");
    command->add_option("--max-variants", compile.max_variants,
                        "Refuse a spec that makes more than N variants in all (default 10000)")
        ->check(CLI::PositiveNumber);
    command->add_option("--ir", compile.ir, "Keep the IR stages compressed (default), plain or not at all")
        ->check(CLI::IsMember({"compressed", "plain", "none"}));
    command->add_flag("--no-wait", compile.no_wait, "Fail, naming the holder, when another build holds OUTPUT");
  };
  CLI::App* compile_command = app.add_subcommand("compile", "Compile a spec's variants with Triton (no GPU needed)");
  add_compile_options(compile_command);
  compile_command->add_flag("--list", compile.list_only, "List the variants the spec makes, compile nothing");
  CLI::App* build_command = app.add_subcommand("build", "compile + gen: spec to library sources in one folder");
  add_compile_options(build_command);
  build_command->add_flag("--python", compile.python, "Also generate the Python module (nanobind) of the library");
  build_command->add_flag("--build-library", compile.build_library,
                          "Also configure and build the library with CMake into OUTPUT/build");

  taot::tool::GenOptions gen;
  CLI::App* gen_command = app.add_subcommand("gen", "Generate C++ library sources from a manifest.json");
  gen_command->add_option("manifest", gen.manifest, "manifest.json written by taot compile")->required()->check(CLI::ExistingFile);
  gen_command->add_option("-o,--output", gen.output, "Output folder for the sources")->required();
  gen_command->add_flag("-q,--quiet", gen.quiet, "Print errors only");
  gen_command->add_flag("--python", gen.python, "Also generate the Python module (nanobind) of the library");
  gen_command->add_option("--tuning", gen.tuning,
                          "A tuned table to bake in (repeatable): a taot-format FILE names its kernel; "
                          "KERNEL=FILE binds a vLLM-format file to KERNEL");

  CLI11_PARSE(app, argc, argv);
  if (compile_command->parsed()) return taot::tool::run_compile(compile);
  if (build_command->parsed()) return taot::tool::run_build(compile);
  return taot::tool::run_gen(gen);
}
