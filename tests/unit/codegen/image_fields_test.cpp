// taot/image_fields.h's manifest keys against the codegen manifest reader: every key of an image
// entry that the list names is read (a wrong value there is rejected naming it), so that a key
// added to the list and to the front end's writer cannot be ignored by taot gen.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "manifest_builder.h"
#include "taot/codegen/manifest.h"
#include "taot/image_fields.h"

namespace taot::codegen {
namespace {

using ::testing::HasSubstr;
using testing::ManifestBuilder;
using testing::TempDir;

std::set<std::string> manifest_keys() {
  std::set<std::string> keys;
#define TAOT_TEST_TABLE_KEY(field, type, manifest_key, info, python, compare) keys.insert(manifest_key);
  TAOT_IMAGE_FIELDS(TAOT_TEST_TABLE_KEY)
#undef TAOT_TEST_TABLE_KEY
#define TAOT_TEST_ONLY_KEY(manifest_key, compare) keys.insert(manifest_key);
  TAOT_IMAGE_MANIFEST_ONLY_KEYS(TAOT_TEST_ONLY_KEY)
#undef TAOT_TEST_ONLY_KEY
  return keys;
}

// An image entry with every optional object present and valid, so that each nested key is read.
void add_optional_objects(nlohmann::json& image) {
  image["ptxas"] = {{"registers", 32}, {"spill_stores", 0}, {"spill_loads", 0}, {"stack", 0}};
  image["override"] = {{"stage", "ttgir"}, {"sha256", std::string(64, 'a')}, {"file", "overrides/k.ttgir"}};
  image["launch_abi"] = {{"tensordesc_layout", "3.7"}, {"scratch_pointers", 2}};
}

TEST(ImageFields, TheReaderReadsEveryManifestKeyOfTheList) {
  TempDir dir;
  {
    ManifestBuilder builder(dir.path());
    add_optional_objects(builder.json["kernels"][0]["variants"][0]["images"][0]);
    const Expected<Manifest> read = read_manifest(builder.write());
    ASSERT_TRUE(read.ok()) << read.status().message();
  }
  for (const std::string& key : manifest_keys()) {
    ManifestBuilder builder(dir.path());
    nlohmann::json& image = builder.json["kernels"][0]["variants"][0]["images"][0];
    add_optional_objects(image);
    const nlohmann::json wrong = nlohmann::json::array({nlohmann::json::array()});  // [[]]: no key's value
    if (const std::size_t dot = key.find('.'); dot != std::string::npos)
      image[key.substr(0, dot)][key.substr(dot + 1)] = wrong;
    else
      image[key] = wrong;
    const Expected<Manifest> read = read_manifest(builder.write());
    ASSERT_FALSE(read.ok()) << "taot gen ignores the image key \"" << key << "\" that taot/image_fields.h lists";
    EXPECT_THAT(read.status().message(), HasSubstr("kernels[0].variants[0].images[0]." + key)) << key;
  }
}

TEST(ImageFields, VendorAndWarpSizeAreReadAndAManifestWithoutThemMeansNvidiaAnd32) {
  TempDir dir;
  {
    ManifestBuilder builder(dir.path());
    nlohmann::json& image = builder.json["kernels"][0]["variants"][0]["images"][0];
    image.erase("vendor");
    image.erase("warp_size");
    builder.json["kernels"][0]["variants"][0]["images"][1]["vendor"] = "amd";
    builder.json["kernels"][0]["variants"][0]["images"][1]["warp_size"] = 64;
    const Expected<Manifest> read = read_manifest(builder.write());
    ASSERT_TRUE(read.ok()) << read.status().message();
    const Image& older = read->kernels[0].variants[0].images[0];
    EXPECT_EQ(older.vendor, table::Vendor::nvidia);
    EXPECT_EQ(older.warp_size, 32u);
    const Image& amd = read->kernels[0].variants[0].images[1];
    EXPECT_EQ(amd.vendor, table::Vendor::amd);
    EXPECT_EQ(amd.warp_size, 64u);
  }
  {
    ManifestBuilder builder(dir.path());
    builder.json["kernels"][0]["variants"][0]["images"][0]["vendor"] = "intel";
    const Expected<Manifest> read = read_manifest(builder.write());
    ASSERT_FALSE(read.ok());
    EXPECT_THAT(read.status().message(), HasSubstr("kernels[0].variants[0].images[0].vendor"));
    EXPECT_THAT(read.status().message(), HasSubstr("expected \"nvidia\" or \"amd\", got \"intel\""));
  }
  {
    ManifestBuilder builder(dir.path());
    builder.json["kernels"][0]["variants"][0]["images"][0]["warp_size"] = 48;
    const Expected<Manifest> read = read_manifest(builder.write());
    ASSERT_FALSE(read.ok());
    EXPECT_THAT(read.status().message(), HasSubstr("kernels[0].variants[0].images[0].warp_size"));
    EXPECT_THAT(read.status().message(), HasSubstr("expected 32 or 64, got 48"));
  }
}

}  // namespace
}  // namespace taot::codegen
