// taot/image_fields.h against `taot diff`'s rows: every fact the list names a row for is one of
// metadata_facts' or resource_facts' rows, and every row is the list's or one of the cubin's.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "taot/image_fields.h"
#include "taot/workbench/compare.h"

namespace taot::workbench {
namespace {

std::set<std::string> rows_of(const ImageView& image) {
  std::set<std::string> rows;
  for (const NamedValue& fact : metadata_facts(image)) rows.insert(fact.name);
  for (const NamedValue& fact : resource_facts(image)) rows.insert(fact.name);
  return rows;
}

TEST(ImageFields, TaotDiffShowsARowForEveryFactTheListNames) {
  ImageView image;
  image.kernel = "add_kernel";
  image.target = "sm_90";
  image.manifest_image = codegen::Image{};
  const std::set<std::string> rows = rows_of(image);

  std::set<std::string> listed;
#define TAOT_TEST_TABLE_ROW(field, type, manifest_key, info, python, compare) listed.insert(compare);
  TAOT_IMAGE_FIELDS(TAOT_TEST_TABLE_ROW)
#undef TAOT_TEST_TABLE_ROW
#define TAOT_TEST_ONLY_ROW(manifest_key, compare) listed.insert(compare);
  TAOT_IMAGE_MANIFEST_ONLY_KEYS(TAOT_TEST_ONLY_ROW)
#undef TAOT_TEST_ONLY_ROW
  listed.erase("");  // not shown
  for (const std::string& row : listed) EXPECT_EQ(rows.count(row), 1u) << "taot diff has no row " << row;

  // The rows that are not the manifest's: which image it is, and what only the cubin tells.
  const std::set<std::string> not_manifest = {"kernel", "local", "static_shared"};
  for (const std::string& row : rows)
    EXPECT_TRUE(listed.count(row) == 1 || not_manifest.count(row) == 1)
        << "taot diff's row " << row << " is not in taot/image_fields.h";
}

}  // namespace
}  // namespace taot::workbench
