// The C ABI: status codes, thread-local last error, exact configs by name, introspection.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>

#include "fake_driver.h"
#include "taot/c_api.h"
#include "taot/runtime.h"
#include "test_table.h"

namespace taot::testing {
namespace {

using ::testing::HasSubstr;

TEST(CApi, LaunchByConfigNameAndReportErrors) {
  FakeDriver fake;
  AddKernelTable table;
  Kernel kernel(table.kernel);
  fake.make_current(fake.add_context(90));
  taot_arg args[4] = {};
  for (int p = 0; p < 3; ++p) {
    args[p].address = 0x7f0000001000;
    args[p].dtype = TAOT_DTYPE_FP16;
  }
  args[3].integer = 1000;
  taot_config_value config[] = {{"BLOCK_SIZE", 256, 0.0, nullptr}, {"num_warps", 8, 0.0, nullptr}};
  ASSERT_EQ(taot_launch(kernel.handle(), nullptr, args, 4, config, 2), TAOT_OK) << taot_last_error();
  EXPECT_EQ(fake.launches().at(0).grid[0], 4u);  // cdiv(1000, 256)
  EXPECT_EQ(fake.launches().at(0).block[0], 256u);

  taot_config_value unknown[] = {{"BLOCK", 256, 0.0, nullptr}};
  EXPECT_EQ(taot_launch(kernel.handle(), nullptr, args, 4, unknown, 1), TAOT_INVALID_ARGUMENT);
  EXPECT_STREQ(taot_last_error(), "testlib::add_kernel: unknown config field 'BLOCK'; the fields are: BLOCK_SIZE, num_warps");

  args[0].dtype = TAOT_DTYPE_FP64;
  EXPECT_EQ(taot_launch(kernel.handle(), nullptr, args, 4, nullptr, 0), TAOT_NO_MATCHING_VARIANT);
  EXPECT_NE(std::strstr(taot_last_error(), "x_ptr = fp64 pointer"), nullptr) << taot_last_error();
  EXPECT_STREQ(taot_status_name(TAOT_NO_MATCHING_VARIANT), "TAOT_NO_MATCHING_VARIANT");
  EXPECT_EQ(taot_launch(nullptr, nullptr, args, 4, nullptr, 0), TAOT_INVALID_ARGUMENT);
  EXPECT_EQ(taot_launch(kernel.handle(), nullptr, nullptr, 4, nullptr, 0), TAOT_INVALID_ARGUMENT);
  EXPECT_STREQ(taot_last_error(), "testlib::add_kernel: args is null but 4 arguments were announced");
  EXPECT_EQ(taot_launch(kernel.handle(), nullptr, args, 4, nullptr, 2), TAOT_INVALID_ARGUMENT);
  EXPECT_STREQ(taot_last_error(), "testlib::add_kernel: config is null but 2 config values were announced");
}

TEST(CApi, Introspection) {
  AddKernelTable table;
  Kernel kernel(table.kernel);
  EXPECT_STREQ(taot_kernel_name(kernel.handle()), "add_kernel");
  EXPECT_EQ(taot_kernel_arg_count(kernel.handle()), 4u);
  EXPECT_STREQ(taot_kernel_arg_name(kernel.handle(), 3), "n_elements");
  EXPECT_EQ(taot_kernel_arg_name(kernel.handle(), 4), nullptr);
  EXPECT_EQ(taot_kernel_variant_count(kernel.handle()), table.kernel.variant_count);
  EXPECT_STREQ(taot_kernel_variant_id(kernel.handle(), 0), table.kernel.variants[0].id);
}

TEST(CApi, LibraryRegistryWalksKernelsVariantsAndImages) {
  AddKernelTable first_table, second_table;
  second_table.kernel.name = "scale_kernel";
  Kernel first(first_table.kernel), second(second_table.kernel);
  Kernel* const kernels[] = {&first, &second};
  const Library library(TAOT_ABI_VERSION, "testlib", kernels, 2);
  const taot_library* handle = library.handle();
  EXPECT_EQ(taot_library_abi_version(handle), static_cast<uint32_t>(TAOT_ABI_VERSION));
  EXPECT_STREQ(taot_library_name(handle), "testlib");
  ASSERT_EQ(taot_library_kernel_count(handle), 2u);
  EXPECT_EQ(taot_library_kernel(handle, 1), second.handle());
  EXPECT_EQ(taot_library_kernel(handle, 2), nullptr);
  EXPECT_EQ(taot_library_find_kernel(handle, "scale_kernel"), second.handle());
  EXPECT_EQ(taot_library_find_kernel(handle, "nope"), nullptr);

  const table::Variant& variant = first_table.kernel.variants[1];
  ASSERT_EQ(taot_kernel_image_count(first.handle(), 1), variant.image_count);
  EXPECT_EQ(taot_kernel_image_count(first.handle(), first_table.kernel.variant_count), 0u);
  taot_image_info info;
  ASSERT_EQ(taot_kernel_image(first.handle(), 1, 1, &info), TAOT_OK) << taot_last_error();
  EXPECT_STREQ(info.target, variant.images[1].target);
  EXPECT_EQ(info.arch, variant.images[1].arch);
  EXPECT_EQ(info.cubin, variant.images[1].cubin);
  EXPECT_EQ(info.num_warps, variant.images[1].num_warps);
  EXPECT_EQ(info.override_stage, nullptr);
  EXPECT_STREQ(info.triton_version, "3.9.0");
  EXPECT_STREQ(info.ptxas_version, "13.4.59");
  EXPECT_STREQ(info.tensordesc_layout, "3.7");
  EXPECT_EQ(info.min_driver, 580u);
  ASSERT_EQ(taot_kernel_image(first.handle(), 1, 0, &info), TAOT_OK) << taot_last_error();
  EXPECT_EQ(info.triton_version, nullptr);  // not recorded: a manifest older than the field
  EXPECT_EQ(info.ptxas_version, nullptr);
  EXPECT_STREQ(info.tensordesc_layout, "3.5");
  EXPECT_EQ(info.min_driver, 0u);
  EXPECT_EQ(taot_kernel_image(first.handle(), 1, variant.image_count, &info), TAOT_INVALID_ARGUMENT);
  EXPECT_THAT(taot_last_error(), HasSubstr(std::string("variant ") + variant.id + " has 2 images"));
  EXPECT_EQ(taot_kernel_image(first.handle(), 1, 0, nullptr), TAOT_INVALID_ARGUMENT);
  EXPECT_EQ(taot_library_kernel_count(nullptr), 0u);
}

TEST(Driver, RealDriverLoadsOrSaysWhyNot) {
  // With no fake installed the runtime dlopens libcuda.so.1: on a machine without the NVIDIA
  // driver (CI) that must fail with a message naming the library; with it, it must succeed.
  driver::install_for_testing(nullptr);
  Expected<const driver::Api*> api = driver::get();
  if (!api.ok()) {
    EXPECT_EQ(api.status().code(), TAOT_NO_DRIVER) << api.status().message();
    EXPECT_NE(api.status().message().find("libcuda.so.1"), std::string::npos) << api.status().message();
  } else {
    EXPECT_NE((*api)->cuLaunchKernel, nullptr);
  }
}

}  // namespace
}  // namespace taot::testing
