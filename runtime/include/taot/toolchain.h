// The NVIDIA driver an image needs, by the CUDA release of the ptxas that assembled it: defined
// once for the runtime (its message when the driver refuses a cubin) and `taot inspect`.
// Pure constexpr functions; C++17.
#pragma once

namespace taot::toolchain {

// The oldest driver release that loads cubins of a CUDA major release, by CUDA's minor-version
// compatibility: any driver of at least the floor runs what every toolkit of that major release
// built (NVIDIA, "CUDA Compatibility", Minor Version Compatibility: 11.x >= 450, 12.x >= 525,
// 13.x >= 580). A toolkit ships with a newer driver (12.8 with 570, 13.0 with 580), which features
// new in that toolkit may need; plain cubins do not.
struct DriverFloor {
  int cuda_major;
  unsigned driver;
};
inline constexpr DriverFloor kDriverFloors[] = {{11, 450}, {12, 525}, {13, 580}};

// The CUDA major release of a ptxas version ("12.8.93" -> 12); 0 for null or text that does not
// start with a number.
constexpr int cuda_major_of(const char* ptxas_version) noexcept {
  if (ptxas_version == nullptr || *ptxas_version < '0' || *ptxas_version > '9') return 0;
  int major = 0;
  for (const char* c = ptxas_version; *c >= '0' && *c <= '9' && major < 1000; ++c) major = major * 10 + (*c - '0');
  return major;
}

// The oldest driver release (525, 580, ...) that loads a cubin of that ptxas; 0 when unknown (no
// version, or a CUDA release this table does not list).
constexpr unsigned min_driver_for_ptxas(const char* ptxas_version) noexcept {
  const int major = cuda_major_of(ptxas_version);
  for (const DriverFloor& floor : kDriverFloors)
    if (floor.cuda_major == major) return floor.driver;
  return 0;
}

static_assert(min_driver_for_ptxas("12.8.93") == 525 && min_driver_for_ptxas("13.4.59") == 580, "");
static_assert(min_driver_for_ptxas(nullptr) == 0 && min_driver_for_ptxas("14.0") == 0, "");

}  // namespace taot::toolchain
