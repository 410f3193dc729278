// libFuzzer target for the manifest reader: arbitrary bytes as manifest.json (see
// manifest_check.h). A broken contract aborts, which libFuzzer reports as a crash with the input;
// ASan, UBSan and LeakSanitizer (TAOT_SANITIZE) catch memory errors, undefined behaviour and leaks.
// Run by scripts/sanitize.sh fuzz.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "manifest_check.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // Writes the fixture's cubins now rather than during the first input.
  (void)taot::codegen::fuzz::check_manifest_text("");
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto verdict =
      taot::codegen::fuzz::check_manifest_text(std::string_view(reinterpret_cast<const char*>(data), size));
  if (verdict.bug) {
    std::fprintf(stderr, "manifest fuzzer: the reader broke its contract: %s\n", verdict.bug->c_str());
    std::abort();
  }
  return 0;
}
