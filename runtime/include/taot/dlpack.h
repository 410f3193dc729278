// The parts of the DLPack ABI (version 1.x) that taot's Python bindings consume: tensor views,
// the capsules `__dlpack__()` returns, and the C exchange table frameworks attach to their tensor
// type as `__dlpack_c_exchange_api__` (torch >= 2.10). Declared here so generated modules need no
// DLPack headers; layouts follow the DLPack specification and must not change.
#pragma once

#include <cstdint>

namespace taot::dlpack {

// Device kinds (DLDeviceType).
enum DeviceType : std::int32_t {
  kCPU = 1,
  kCUDA = 2,
  kCUDAHost = 3,
  kCUDAManaged = 13,
};

// Element type codes (DLDataTypeCode).
enum TypeCode : std::uint8_t {
  kInt = 0,
  kUInt = 1,
  kFloat = 2,
  kBfloat = 4,
  kBool = 6,
  kFloat8_e4m3fn = 10,
  kFloat8_e5m2 = 12,
};

struct Version {
  std::uint32_t major;
  std::uint32_t minor;
};

struct Device {
  std::int32_t device_type;  // DeviceType
  std::int32_t device_id;
};

struct DataType {
  std::uint8_t code;  // TypeCode
  std::uint8_t bits;
  std::uint16_t lanes;
};

// A view of an array; the element at index 0 is at `data + byte_offset`.
struct Tensor {
  void* data;
  Device device;
  std::int32_t ndim;
  DataType dtype;
  std::int64_t* shape;
  std::int64_t* strides;  // in elements; null means compact row-major
  std::uint64_t byte_offset;
};

// In a capsule named "dltensor" (DLPack < 1.0 producers).
struct ManagedTensor {
  Tensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(ManagedTensor* self);
};

// In a capsule named "dltensor_versioned".
struct ManagedTensorVersioned {
  Version version;
  void* manager_ctx;
  void (*deleter)(ManagedTensorVersioned* self);
  std::uint64_t flags;
  Tensor dl_tensor;
};

// The exchange table (DLPackExchangeAPI), in a capsule named "dlpack_exchange_api" on the tensor
// type. Entries taot does not call are kept as opaque pointers to hold the layout. Functions
// return 0 on success and -1 with a Python exception set.
struct ExchangeApiHeader {
  Version version;
  ExchangeApiHeader* prev_api;
};

struct ExchangeApi {
  ExchangeApiHeader header;
  void* managed_tensor_allocator;
  void* managed_tensor_from_py_object_no_sync;
  void* managed_tensor_to_py_object_no_sync;
  // Fills `out` with a view valid until control returns to Python; may be null.
  int (*dltensor_from_py_object_no_sync)(void* py_object, Tensor* out);
  // The framework's current stream on a device (torch.cuda.current_stream()).
  int (*current_work_stream)(std::int32_t device_type, std::int32_t device_id, void** out_stream);
};

}  // namespace taot::dlpack
