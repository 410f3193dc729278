// Replays the checked-in fuzz corpus (tests/fuzz/corpus: the seeds, and any reproducer a fuzz
// run found) through the fuzz target's check in every build, so that a fixed bug stays fixed and
// the seeds stay manifests the reader accepts.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "manifest_builder.h"
#include "manifest_check.h"

namespace taot::codegen::fuzz {
namespace {

const std::filesystem::path kCorpus = TAOT_FUZZ_CORPUS;

TEST(ManifestCorpus, EveryInputIsAcceptedOrRejectedCleanly) {
  // TAOT_UPDATE_FUZZ_SEEDS=1 rewrites the seeds from the fixture first (after a change of
  // manifest_builder.cpp or of the schema).
  if (std::getenv("TAOT_UPDATE_FUZZ_SEEDS") != nullptr) {
    for (const auto& [name, content] : seed_manifests()) testing::write_file(kCorpus / name, content);
  }
  std::size_t inputs = 0;
  for (const auto& entry : std::filesystem::directory_iterator(kCorpus)) {
    if (!entry.is_regular_file()) continue;
    const std::string name = entry.path().filename().string();
    const Verdict verdict = check_manifest_text(testing::read_file(entry.path()));
    ++inputs;
    EXPECT_FALSE(verdict.bug.has_value()) << name << ": the reader broke its contract: " << verdict.bug.value_or("");
    if (name.rfind("valid_", 0) == 0) {
      EXPECT_TRUE(verdict.accepted) << name << " is a seed and must be accepted; rewrite the seeds from the fixture "
                                    << "with TAOT_UPDATE_FUZZ_SEEDS=1 ctest -R fuzz.ManifestCorpus";
    }
  }
  EXPECT_GE(inputs, seed_manifests().size()) << "the corpus " << kCorpus << " lacks the seeds";
}

}  // namespace
}  // namespace taot::codegen::fuzz
