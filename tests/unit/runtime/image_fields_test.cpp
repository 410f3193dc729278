// taot/image_fields.h's list against the C API: every member of table::Image that the list gives
// to taot_image_info reaches it, those library.cpp fills by hand included.
#include <gtest/gtest.h>

#include <cstring>
#include <type_traits>

#include "taot/c_api.h"
#include "taot/runtime.h"
#include "test_table.h"

namespace taot::testing {
namespace {

// Gives `value` a value other than its zero, whatever its type.
template <class T>
void set_nonzero(T& value) {
  if constexpr (std::is_array_v<T>) {
    for (auto& element : value) set_nonzero(element);
  } else if constexpr (std::is_same_v<T, const char*>) {
    value = "12.8.93";
  } else if constexpr (std::is_pointer_v<T>) {
    static const table::TensordescMeta kSomething{};
    value = reinterpret_cast<T>(&kSomething);
  } else {
    value = static_cast<T>(1);
  }
}

template <class T>
bool is_zero(const T& value) {
  const T zero{};
  return std::memcmp(&value, &zero, sizeof(T)) == 0;
}

TEST(ImageFields, EveryMemberTheListGivesTaotImageInfoReachesIt) {
  AddKernelTable table;
  table.edit_images([](table::Image& image) {
#define TAOT_TEST_SET(field, type, manifest_key, info, python, compare) set_nonzero(image.field);
    TAOT_IMAGE_FIELDS(TAOT_TEST_SET)
#undef TAOT_TEST_SET
  });
  Kernel kernel(table.kernel);
  taot_image_info info{};
  ASSERT_EQ(taot_kernel_image(kernel.handle(), 0, 0, &info), TAOT_OK) << taot_last_error();
#define TAOT_TEST_REACHES_copy(field) EXPECT_FALSE(is_zero(info.field)) << #field " is not copied";
#define TAOT_TEST_REACHES_own(field) EXPECT_FALSE(is_zero(info.field)) << #field " is marked own but not filled";
#define TAOT_TEST_REACHES_none(field)
#define TAOT_TEST_REACHES(field, type, manifest_key, info, python, compare) TAOT_TEST_REACHES_##info(field)
  TAOT_IMAGE_FIELDS(TAOT_TEST_REACHES)
#undef TAOT_TEST_REACHES
  EXPECT_EQ(info.cluster_dims[2], 1u);
  EXPECT_STREQ(info.tensordesc_layout, "3.7");
  EXPECT_EQ(info.min_driver, 525u);  // from ptxas_version "12.8.93"
  EXPECT_STREQ(info.vendor, "amd");   // table::Vendor 1
  EXPECT_EQ(info.warp_size, 1u);
}

}  // namespace
}  // namespace taot::testing
