// The C++ API of libtaot_runtime: typed pointers, argument values, config requests, and Kernel,
// which selects a compiled variant for a call, loads its module in the current context and
// launches it. Generated libraries are thin typed wrappers over Kernel.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>

#include "taot/c_api.h"
#include "taot/kernel_table.h"
#include "taot/status.h"

namespace taot {

// Element types (taot/dtype_list.h); the values are the C ABI's taot_dtype.
enum class DType : std::int32_t {
  unknown = TAOT_DTYPE_UNKNOWN,
#define TAOT_DTYPE_ENUMERATOR(ENUM, name, value, bytes, dlpack_code, dlpack_bits, typestr, torch_name) \
  name = TAOT_DTYPE_##ENUM,
  TAOT_DTYPES(TAOT_DTYPE_ENUMERATOR)
#undef TAOT_DTYPE_ENUMERATOR
};

// Triton's name of a dtype ("fp32", "bf16", ...); "unknown" for anything else.
const char* dtype_name(DType dtype) noexcept;
// The dtype of a Triton name, or DType::unknown.
DType dtype_from_name(std::string_view name) noexcept;

// Host-side stand-ins for element types C++ lacks, so that typed pointers carry their dtype.
struct fp16_t { std::uint16_t bits; };
struct bf16_t { std::uint16_t bits; };
struct fp8e4nv_t { std::uint8_t bits; };
struct fp8e5_t { std::uint8_t bits; };

// dtype_of<T>::value is the DType of element type T. Specialize it for your own element types.
template <class T>
struct dtype_of;
#define TAOT_DTYPE_OF(type, dtype) \
  template <>                      \
  struct dtype_of<type> : std::integral_constant<DType, DType::dtype> {}
TAOT_DTYPE_OF(bool, i1);
TAOT_DTYPE_OF(std::int8_t, i8);
TAOT_DTYPE_OF(std::int16_t, i16);
TAOT_DTYPE_OF(std::int32_t, i32);
TAOT_DTYPE_OF(std::int64_t, i64);
TAOT_DTYPE_OF(std::uint8_t, u8);
TAOT_DTYPE_OF(std::uint16_t, u16);
TAOT_DTYPE_OF(std::uint32_t, u32);
TAOT_DTYPE_OF(std::uint64_t, u64);
TAOT_DTYPE_OF(float, fp32);
TAOT_DTYPE_OF(double, fp64);
TAOT_DTYPE_OF(fp16_t, fp16);
TAOT_DTYPE_OF(bf16_t, bf16);
TAOT_DTYPE_OF(fp8e4nv_t, fp8e4nv);
TAOT_DTYPE_OF(fp8e5_t, fp8e5);
#if defined(__CUDA_FP16_TYPES_EXIST__)
TAOT_DTYPE_OF(__half, fp16);
#endif
#if defined(__CUDA_BF16_TYPES_EXIST__)
TAOT_DTYPE_OF(__nv_bfloat16, bf16);
#endif
#undef TAOT_DTYPE_OF

// A device pointer with its element dtype. Made implicitly from a typed pointer (float*,
// taot::bf16_t*, ...), or explicitly from an address and a dtype.
class Ptr {
 public:
  template <class T>
  Ptr(T* pointer) noexcept  // NOLINT(google-explicit-constructor): typed pointers convert
      : address_(reinterpret_cast<std::uintptr_t>(pointer)),
        dtype_(dtype_of<std::remove_cv_t<T>>::value) {}
  Ptr(CUdeviceptr address, DType dtype) noexcept : address_(address), dtype_(dtype) {}
  Ptr(const void* pointer, DType dtype) noexcept
      : address_(reinterpret_cast<std::uintptr_t>(pointer)), dtype_(dtype) {}

  std::uint64_t address() const noexcept { return address_; }
  DType dtype() const noexcept { return dtype_; }

 private:
  std::uint64_t address_;
  DType dtype_;
};

// The size in bytes of one element of `dtype` (1 for i1 and fp8), 0 for DType::unknown.
std::size_t dtype_size(DType dtype) noexcept;

// A host-side tensor descriptor (the C ABI's taot_tensordesc): see c_api.h for its fields and the
// requirements a launch checks.
using TensorDesc = taot_tensordesc;

// A descriptor over `base` with `shape` (elements, outermost first) and `strides` (elements; empty:
// contiguous row-major). `block_shape` empty: take the variant's block; else only variants compiled
// for this block accept it. Lists longer than 5 or of different lengths make a descriptor of rank 0,
// which launches refuse naming the argument.
inline TensorDesc tensor_desc(Ptr base, std::initializer_list<std::int64_t> shape,
                              std::initializer_list<std::int64_t> strides = {},
                              std::initializer_list<std::int32_t> block_shape = {},
                              taot_padding padding = TAOT_PADDING_ZERO) noexcept {
  TensorDesc desc{};
  desc.base = base.address();
  desc.dtype = static_cast<std::int32_t>(base.dtype());
  desc.padding = padding;
  const std::size_t rank = shape.size();
  if (rank == 0 || rank > TAOT_TENSORDESC_MAX_RANK || (strides.size() != 0 && strides.size() != rank) ||
      (block_shape.size() != 0 && block_shape.size() != rank))
    return desc;
  desc.rank = static_cast<std::int32_t>(rank);
  std::size_t d = 0;
  for (std::int64_t extent : shape) desc.shape[d++] = extent;
  d = 0;
  for (std::int32_t extent : block_shape) desc.block_shape[d++] = extent;
  if (strides.size() == rank) {
    d = 0;
    for (std::int64_t stride : strides) desc.strides[d++] = stride;
  } else {
    std::int64_t stride = 1;
    for (std::size_t r = rank; r-- > 0;) {
      desc.strides[r] = stride;
      stride *= desc.shape[r];
    }
  }
  return desc;
}

// A call argument whose form is chosen at launch, as Triton's JIT specializes on the Python value
// (a spec's `none = true` on a scalar, or `type = ["i32", "fp32"]`): None (std::nullopt or
// nullptr), an integer, or a float. Each form selects the variants compiled for it.
class Scalar {
 public:
  constexpr Scalar(std::nullopt_t) noexcept {}
  constexpr Scalar(std::nullptr_t) noexcept {}
  template <class Integer, std::enable_if_t<std::is_integral_v<Integer> && !std::is_same_v<Integer, bool>, int> = 0>
  constexpr Scalar(Integer integer) noexcept : value_{TAOT_DTYPE_I64, static_cast<std::int64_t>(integer), 0.0} {}
  constexpr Scalar(double real) noexcept : value_{TAOT_DTYPE_FP64, 0, real} {}
  constexpr Scalar(float real) noexcept : value_{TAOT_DTYPE_FP64, 0, real} {}
  template <class T>
  constexpr Scalar(const std::optional<T>& value) noexcept : Scalar(std::nullopt) {
    if (value.has_value()) *this = Scalar(*value);
  }
  constexpr Scalar(taot_scalar value) noexcept : value_(value) {}
  constexpr bool is_none() const noexcept { return value_.dtype == TAOT_DTYPE_UNKNOWN; }
  constexpr const taot_scalar& c_value() const noexcept { return value_; }

 private:
  taot_scalar value_{TAOT_DTYPE_UNKNOWN, 0, 0.0};
};

// Call-argument values in the C ABI's form, one overload per kind of argument the kernels take.
inline taot_arg arg(Ptr pointer) noexcept {
  taot_arg value{};
  value.address = pointer.address();
  value.dtype = static_cast<std::int32_t>(pointer.dtype());
  return value;
}
inline taot_arg arg(taot_ptr pointer) noexcept {
  taot_arg value{};
  value.address = pointer.address;
  value.dtype = pointer.dtype;
  return value;
}
// A descriptor argument refers to `desc`, which must stay alive until the launch call returns.
inline taot_arg arg(const TensorDesc& desc) noexcept {
  taot_arg value{};
  value.tensordesc = &desc;
  value.dtype = desc.dtype;
  return value;
}
inline taot_arg arg(const TensorDesc* desc) noexcept {
  taot_arg value{};
  value.tensordesc = desc;
  value.dtype = desc != nullptr ? desc->dtype : TAOT_DTYPE_UNKNOWN;
  return value;
}
inline taot_arg arg(std::int32_t integer) noexcept {
  taot_arg value{};
  value.integer = integer;
  return value;
}
inline taot_arg arg(std::int64_t integer) noexcept {
  taot_arg value{};
  value.integer = integer;
  return value;
}
inline taot_arg arg(float real) noexcept {
  taot_arg value{};
  value.real32 = real;
  return value;
}
inline taot_arg arg(double real) noexcept {
  taot_arg value{};
  value.real64 = real;
  return value;
}
inline taot_arg arg(bool flag) noexcept {
  taot_arg value{};
  value.integer = flag ? 1 : 0;
  return value;
}
// A "scalar" argument whose float form is `float_type` (TAOT_DTYPE_FP32 or TAOT_DTYPE_FP64;
// TAOT_DTYPE_UNKNOWN: it takes no float) and which takes ints when `takes_ints`: a float is stored as
// the float type, so that the value reads in place as the kernel parameter; an int for an argument
// that takes only floats is that float (as the Python binding takes it); a float for one that takes
// none keeps its form, which no variant accepts (the launch names the argument).
inline taot_arg arg(taot_scalar scalar, taot_dtype float_type, bool takes_ints = true) noexcept {
  taot_arg value{};
  value.dtype = scalar.dtype;
  if (scalar.dtype == TAOT_DTYPE_I64 && !takes_ints && float_type != TAOT_DTYPE_UNKNOWN) {
    scalar.dtype = TAOT_DTYPE_FP64;
    scalar.real = static_cast<double>(scalar.integer);
  }
  if (scalar.dtype == TAOT_DTYPE_I64) {
    value.integer = scalar.integer;
  } else if ((scalar.dtype == TAOT_DTYPE_FP64 || scalar.dtype == TAOT_DTYPE_FP32) && float_type != TAOT_DTYPE_UNKNOWN) {
    value.dtype = float_type;
    if (float_type == TAOT_DTYPE_FP32) value.real32 = static_cast<float>(scalar.real);
    else value.real64 = scalar.real;
  } else if (scalar.dtype == TAOT_DTYPE_FP64) {
    value.real64 = scalar.real;
  } else if (scalar.dtype == TAOT_DTYPE_FP32) {
    value.real32 = static_cast<float>(scalar.real);
  }
  return value;
}
inline taot_arg arg(const Scalar& scalar, taot_dtype float_type, bool takes_ints = true) noexcept {
  return arg(scalar.c_value(), float_type, takes_ints);
}

// One field of an exact config request: unset fields prefer the default config's value.
struct FieldRequest {
  bool set = false;
  std::int64_t integer = 0;  // int, bool and dtype fields
  double real = 0.0;         // float fields
  std::string_view text{};   // string fields (not owned: must outlive the launch call)
};
inline FieldRequest request(const std::optional<std::int64_t>& value) noexcept {
  return value ? FieldRequest{true, *value, 0.0} : FieldRequest{};
}
inline FieldRequest request(const std::optional<double>& value) noexcept {
  return value ? FieldRequest{true, 0, *value} : FieldRequest{};
}
inline FieldRequest request(const std::optional<bool>& value) noexcept {
  return value ? FieldRequest{true, *value ? 1 : 0, 0.0} : FieldRequest{};
}
inline FieldRequest request(const std::optional<DType>& value) noexcept {
  return value ? FieldRequest{true, static_cast<std::int64_t>(*value), 0.0} : FieldRequest{};
}
inline FieldRequest request(const std::optional<std::string_view>& value) noexcept {
  return value ? FieldRequest{true, 0, 0.0, *value} : FieldRequest{};
}

// A grid given at the call: programs per dimension, replacing the kernel's grid programs (which
// are then not evaluated). `taot::Grid{n}` is (n, 1, 1). A zero dimension launches nothing; a
// negative one fails, and so does one above the CUDA limits (after num_ctas for clusters).
struct Grid {
  std::int64_t x = 1;
  std::int64_t y = 1;
  std::int64_t z = 1;
};

// Which variant a launch uses.
class Selection {
 public:
  // The default config, most specialized variant that accepts the arguments.
  static Selection automatic() noexcept { return Selection(nullptr, kNoVariant); }
  // The fields set in `fields` (one per config field, in table order) must match; unset fields
  // prefer the default. `fields` must outlive the launch call.
  static Selection config(const FieldRequest* fields) noexcept { return Selection(fields, kNoVariant); }
  // Exactly the variant at `index` in the kernel's variant list.
  static Selection variant(std::size_t index) noexcept { return Selection(nullptr, index); }

  Selection() noexcept : Selection(nullptr, kNoVariant) {}
  const FieldRequest* fields() const noexcept { return fields_; }
  bool is_variant() const noexcept { return variant_ != kNoVariant; }
  std::size_t variant_index() const noexcept { return variant_; }

 private:
  static constexpr std::size_t kNoVariant = ~std::size_t{0};
  Selection(const FieldRequest* fields, std::size_t variant) noexcept : fields_(fields), variant_(variant) {}
  const FieldRequest* fields_;
  std::size_t variant_;
};

// How a launch's config was chosen (docs/runtime.md, "How a launch picks its config"): the
// variant the caller named; the config the caller asked for; the tuned table for this device;
// the config timed fastest at the first launch of the call's key (autotuning at first call); the
// kernel's heuristics; the default config. Every step but `variant` keeps to the kernel's
// requirements.
enum class Step : std::uint8_t {
  variant = TAOT_STEP_VARIANT,
  config = TAOT_STEP_CONFIG,
  table = TAOT_STEP_TABLE,
  heuristics = TAOT_STEP_HEURISTICS,
  fallback = TAOT_STEP_DEFAULT,
  autotuned = TAOT_STEP_AUTOTUNED,
};
// "variant", "config", "table", "heuristics", "default", "autotuned at first call".
const char* step_name(Step step) noexcept;

// The variant a launch would use and the step that chose it.
struct Choice {
  std::size_t variant;
  Step step;
};

// A read-only view of one compiled variant, for enumeration (bench, tune, tests).
class VariantInfo {
 public:
  VariantInfo(const table::KernelTable& table, std::size_t index) noexcept : table_(&table), index_(index) {}
  std::size_t index() const noexcept { return index_; }
  const char* id() const noexcept { return data().id; }
  const table::Variant& data() const noexcept { return table_->variants[index_]; }
  const table::KernelTable& kernel() const noexcept { return *table_; }
  // The value of config field `name` (ints, bools and dtypes as integers), if the field exists
  // and is of such a kind; config_real for float fields, config_text for string fields.
  std::optional<std::int64_t> config_integer(std::string_view name) const noexcept;
  std::optional<double> config_real(std::string_view name) const noexcept;
  std::optional<std::string_view> config_text(std::string_view name) const noexcept;
  // "x_ptr: fp32 align 16, n_elements: i32 %16; BLOCK_SIZE=1024 num_warps=4 num_stages=3; sm_80 sm_90"
  // (string values quoted, pointers compiled None as "None").
  std::string describe() const;

 private:
  const table::KernelTable* table_;
  std::size_t index_;
};

// The variants of a kernel, in manifest order; iterable.
class VariantList {
 public:
  class iterator {
   public:
    iterator(const table::KernelTable& table, std::size_t index) noexcept : table_(&table), index_(index) {}
    VariantInfo operator*() const noexcept { return VariantInfo(*table_, index_); }
    iterator& operator++() noexcept { ++index_; return *this; }
    bool operator!=(const iterator& other) const noexcept { return index_ != other.index_; }
    bool operator==(const iterator& other) const noexcept { return index_ == other.index_; }
   private:
    const table::KernelTable* table_;
    std::size_t index_;
  };
  explicit VariantList(const table::KernelTable& table) noexcept : table_(&table) {}
  std::size_t size() const noexcept { return table_->variant_count; }
  VariantInfo operator[](std::size_t index) const noexcept { return VariantInfo(*table_, index); }
  iterator begin() const noexcept { return iterator(*table_, 0); }
  iterator end() const noexcept { return iterator(*table_, table_->variant_count); }

 private:
  const table::KernelTable* table_;
};

namespace detail {
struct KernelState;
}

// One kernel of a generated library. Thread-safe: any number of threads may launch at once, on
// any number of contexts and devices; the module of a (context, cubin) is loaded exactly once.
// Owns host-side state only; modules stay loaded until unload() or process exit.
class Kernel {
 public:
  explicit constexpr Kernel(const table::KernelTable& table) noexcept : table_(&table) {}
  ~Kernel();
  Kernel(const Kernel&) = delete;
  Kernel& operator=(const Kernel&) = delete;

  // Launches on `stream` (of the current context; where HIP is the driver in use, a hipStream_t
  // of the current HIP device, cast to CUstream: docs/runtime.md, "Two drivers") with `args` = the
  // kernel's non-constexpr arguments in order (launch-only ones included). Fails with a message naming the kernel, the
  // variant and the argument. A grid with a zero dimension launches nothing and succeeds.
  // Automatic and config selection consider only the variants with an image the current device
  // can run (a miss on a device none runs names the device and the kernel's targets).
  Status launch(CUstream stream, const taot_arg* args, std::size_t arg_count,
                const Selection& selection = Selection::automatic());
  // The same on `grid`, given by the caller, instead of the kernel's grid programs.
  Status launch(CUstream stream, const taot_arg* args, std::size_t arg_count, const Selection& selection,
                const Grid& grid);

  // The variant index `launch` would use, without launching. For kernels whose variants have
  // images for different targets, the device of the current context decides (when there is one;
  // without a context, every variant is considered).
  Expected<std::size_t> select(const taot_arg* args, std::size_t arg_count,
                               const Selection& selection = Selection::automatic());

  // The variant `launch` would use and which step chose it, without launching; the device of the
  // current context decides tuned tables and device-aware selection (without a context, the
  // any-device table and every variant are considered).
  Expected<Choice> choose(const taot_arg* args, std::size_t arg_count,
                          const Selection& selection = Selection::automatic());

  // Reads a tuned table (taot's format or vLLM's; docs/tuning.md) and puts it in place of this
  // kernel's table for the same device, baked or loaded, for every later launch; `device`, when
  // given, overrides the device the file names. Safe while other threads launch. Fails naming the
  // file, the entry and the value (a config that was not compiled, say).
  Status load_tuning(const std::string& path, std::string_view device = {});
  // The same for text in memory, `source` naming it in messages.
  Status load_tuning_text(std::string_view text, const std::string& source, std::string_view device = {});
  // Drops every loaded table: the baked ones apply again.
  Status reset_tuning();

  // First-call autotuning (docs/runtime.md, "Autotuning at first call"), for a kernel whose
  // library says how (a tuning key and several configs): the first launch of each key value on a
  // device with no tuned table times the configs that take the call's arguments and keeps the
  // fastest. warmup() does that ahead of time (before a CUDA graph capture, where nothing is
  // timed): it tunes the key of these arguments as a launch would, on their memory (restoring what
  // the kernel's reset_to_zero and restore_value arguments name), launches nothing else, and
  // returns the choice a launch makes now. Fails as a launch would, and when the results could not
  // be written to the autotune folder (the key is tuned all the same).
  Expected<Choice> warmup(CUstream stream, const taot_arg* args, std::size_t arg_count,
                          const Selection& selection = Selection::automatic());
  Expected<Choice> warmup(CUstream stream, const taot_arg* args, std::size_t arg_count, const Selection& selection,
                          const Grid& grid);
  // This kernel's switch: on, off, or (nullopt) the process's (set_autotune). Safe while other
  // threads launch: launches that start after it see it.
  Status set_autotune(std::optional<bool> on);
  // Drops this kernel's first-call results in this process: each key is tuned again at its next
  // launch (the files in the autotune folder stay).
  Status reset_autotune();

  // Loads the modules of every variant that has a cubin for the current context's device (fails
  // when none has).
  Status preload();
  // Unloads this kernel's modules in the current context. No launch of this kernel may run
  // concurrently with it.
  Status unload();

  const table::KernelTable& table() const noexcept { return *table_; }
  VariantList variants() const noexcept { return VariantList(*table_); }

  taot_kernel* handle() noexcept { return reinterpret_cast<taot_kernel*>(this); }
  static Kernel* from_handle(taot_kernel* handle) noexcept { return reinterpret_cast<Kernel*>(handle); }

 private:
  Expected<detail::KernelState*> state();
  // Any launch, from the start (launch() takes the common case itself and hands every other here,
  // before it has done anything); `grid` null: the kernel's grid programs.
  Status launch_any(CUstream stream, const taot_arg* args, std::size_t arg_count, const Selection& selection,
                    const Grid* grid);
  Expected<Choice> warmup_any(CUstream stream, const taot_arg* args, std::size_t arg_count, const Selection& selection,
                              const Grid* grid);
  const table::KernelTable* table_;
  std::atomic<detail::KernelState*> state_{nullptr};
};

// A generated library as tools walk it (`<library>::library()`, `<library>_library()` in C): its
// name, the ABI version its tables were generated for (TAOT_ABI_VERSION) and its kernels, whose
// variants and images VariantInfo::data() shows. Constant-initialized; lives as long as the process.
class Library {
 public:
  constexpr Library(std::uint32_t abi_version, const char* name, Kernel* const* kernels,
                    std::size_t kernel_count) noexcept
      : abi_version_(abi_version), name_(name), kernels_(kernels), kernel_count_(kernel_count) {}
  Library(const Library&) = delete;
  Library& operator=(const Library&) = delete;

  std::uint32_t abi_version() const noexcept { return abi_version_; }
  const char* name() const noexcept { return name_; }
  std::size_t kernel_count() const noexcept { return kernel_count_; }
  Kernel& kernel(std::size_t index) const noexcept { return *kernels_[index]; }
  // The kernel named `name`, or null.
  Kernel* find(std::string_view name) const noexcept;
  // Loads every kernel's modules for the current context's device; tries every kernel (one this
  // device cannot run does not keep the others from loading) and returns the first error.
  Status preload() const;
  // Unloads every kernel's modules from the current context (no launch of them may run meanwhile);
  // tries every kernel and returns the first error.
  Status unload() const;

  const taot_library* handle() const noexcept { return reinterpret_cast<const taot_library*>(this); }
  static const Library* from_handle(const taot_library* handle) noexcept {
    return reinterpret_cast<const Library*>(handle);
  }

 private:
  std::uint32_t abi_version_;
  const char* name_;
  Kernel* const* kernels_;
  std::size_t kernel_count_;
};

// Scratch memory for kernels that need global or profile scratch (Triton's device-side tensor
// descriptors, say). taot keeps one buffer per (context, stream), grown as launches need outside
// graph capture; during capture nothing is allocated and a launch whose stream's buffer is too
// small fails naming the bytes. reserve_scratch makes `stream`'s buffer in the current context at
// least `bytes` long (call it before capture; it fails while `stream` captures). Buffers used by
// a capture are kept until release_scratch(), which frees the current context's buffers after
// waiting for the device. Graphs captured on one stream share its buffer: do not replay them
// at the same time. Thread-safe.
Status reserve_scratch(CUstream stream, std::uint64_t bytes);
Status release_scratch();

// The size of the buffer that holds tl.device_print output (CU_LIMIT_PRINTF_FIFO_SIZE; the driver's
// default is 1 MiB, and output beyond it is lost). taot sets it once per context, before its first
// launch there, in every context where it has not launched yet; 0 leaves the driver's default. It
// replaces $TAOT_PRINTF_FIFO_BYTES. Call it before the first launch; the driver refuses a new size
// once a printing kernel has run in the context. Thread-safe.
Status set_printf_fifo_size(std::size_t bytes);

// First-call autotuning for every kernel of the process: on, off, or (nullopt) each kernel's
// default, which is on for kernels whose configs came from @triton.autotune (as Triton's JIT tunes
// them) and off for the others. A kernel's own switch (Kernel::set_autotune) wins. Replaces
// $TAOT_AUTOTUNE ("1"/"on", "0"/"off"). Thread-safe; launches that start after it see it.
void set_autotune(std::optional<bool> on) noexcept;
// The folder first-call results persist in, <path>/<library>/<kernel>/<device>.json in taot's
// tuned-table format (naming the library and its build; `taot gen --tuning` bakes such a file in),
// read when a kernel is first used, so that a process tunes only the keys no earlier one did.
// Replaces $TAOT_AUTOTUNE_DIR; "" keeps results in memory only. Set it before the first launch.
void set_autotune_dir(const std::string& path);

}  // namespace taot
