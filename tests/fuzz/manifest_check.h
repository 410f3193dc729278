// What the manifest fuzz target checks for one input, shared by the libFuzzer target and the
// corpus replay test: the reader either returns a manifest that keeps manifest.h's promises or an
// error value that names the manifest; anything else is a bug in the reader.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace taot::codegen::fuzz {

struct Verdict {
  bool accepted = false;
  std::optional<std::string> bug;  // set when the reader broke its contract, saying how
};

// Reads `text` as the manifest.json of a folder that holds the cubins of the test fixture
// (testing::ManifestBuilder, written once per process under the temp dir), so that inputs derived
// from the seeds reach the SHA-256 checks. Not thread-safe.
Verdict check_manifest_text(std::string_view text);

// The seed corpus, file name -> content: the fixture's manifest, and each of its kernels alone.
// Every seed is accepted by check_manifest_text.
std::map<std::string, std::string> seed_manifests();

}  // namespace taot::codegen::fuzz
