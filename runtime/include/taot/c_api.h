/* The C ABI of libtaot_runtime: status codes, dynamic argument values, opaque kernel handles and a
 * thread-local last error. Generated libraries declare their typed C entry points on top of this.
 * Pure C (C99 with anonymous unions, also valid C++); every function is thread-safe. */
#ifndef TAOT_C_API_H_
#define TAOT_C_API_H_

#include <cuda.h>
#include <stddef.h>
#include <stdint.h>

#include "taot/dtype_list.h"
#include "taot/status_codes.h"

#ifdef __cplusplus
extern "C" {
#endif


/* Element types (taot/dtype_list.h lists them). Values are stable: they are part of the ABI. */
typedef enum taot_dtype {
  TAOT_DTYPE_UNKNOWN = 0,
#define TAOT_DTYPE_ENUMERATOR(ENUM, name, value, bytes, dlpack_code, dlpack_bits, typestr, torch_name) \
  TAOT_DTYPE_##ENUM = value,
  TAOT_DTYPES(TAOT_DTYPE_ENUMERATOR)
#undef TAOT_DTYPE_ENUMERATOR
} taot_dtype;

/* Tensor descriptors have 1 to 5 dimensions (TMA's limit). */
#define TAOT_TENSORDESC_MAX_RANK 5

/* What a descriptor's loads read past the tensor's edge. */
typedef enum taot_padding { TAOT_PADDING_ZERO = 0, TAOT_PADDING_NAN = 1 } taot_padding;

/* A host-side tensor descriptor (Triton's TensorDescriptor): a strided view of device memory that
 * the kernel reads and writes in blocks. The runtime builds what the compiled kernel takes from it
 * at launch (a TMA map on sm_90, with cuTensorMapEncodeTiled). Requirements, checked at launch:
 * `base` 16-byte aligned; `rank` equal to the argument's; shape[d] from 1 to 2^31 - 1;
 * strides[rank - 1] == 1 and every other stride times the element size a multiple of 16 bytes.
 * `block_shape`: all zero to take the variant's block, or the block the kernel must have been
 * compiled for (automatic selection then picks such a variant). Dims are outermost first. */
typedef struct taot_tensordesc {
  uint64_t base;                                /* device address of element [0, ..., 0] */
  int32_t dtype;                                /* taot_dtype of the elements */
  int32_t rank;                                 /* 1 to TAOT_TENSORDESC_MAX_RANK */
  int64_t shape[TAOT_TENSORDESC_MAX_RANK];      /* elements per dim */
  int64_t strides[TAOT_TENSORDESC_MAX_RANK];    /* in elements */
  int32_t block_shape[TAOT_TENSORDESC_MAX_RANK];
  int32_t padding;                              /* taot_padding */
} taot_tensordesc;

/* One call argument. Pointers set `address` and `dtype` (the element type); integers set
 * `integer` (sign-extended); fp32 scalars set `real32`, fp64 scalars `real64`; bools `integer`
 * (0 or 1); tensor descriptors `tensordesc` (read during the launch call only) and `dtype`. A
 * scalar whose form is chosen at launch (manifest kind "scalar": may be None, or an int on some
 * calls and a float on others) says its form in `dtype`: TAOT_DTYPE_I64 with `integer`, the
 * argument's float type (TAOT_DTYPE_FP32 with `real32`, TAOT_DTYPE_FP64 with `real64`), or
 * TAOT_DTYPE_UNKNOWN for None. The union is read in place as the kernel parameter, so set exactly
 * one member. */
typedef struct taot_arg {
  union {
    uint64_t address;
    int64_t integer;
    float real32;
    double real64;
    const taot_tensordesc* tensordesc;
  };
  int32_t dtype; /* taot_dtype; pointers, descriptors and the form of a "scalar" argument */
} taot_arg;

/* A "scalar" argument of the typed C entry points (one that may be None, or an int or a float):
 * `dtype` TAOT_DTYPE_I64 reads `integer`, TAOT_DTYPE_FP64 reads `real` (converted to the
 * argument's float type), TAOT_DTYPE_UNKNOWN (zero) is None. */
typedef struct taot_scalar {
  int32_t dtype; /* taot_dtype */
  int64_t integer;
  double real;
} taot_scalar;

/* A pointer argument of the typed C entry points. */
typedef struct taot_ptr {
  uint64_t address;
  int32_t dtype; /* taot_dtype */
} taot_ptr;

/* One field of an exact config: `name` is a constexpr or option name (not owned), `integer`
 * holds int, bool and dtype values, `real` float values, `text` string values (NUL-terminated,
 * not owned, compared exactly; null for other fields). */
typedef struct taot_config_value {
  const char* name;
  int64_t integer;
  double real;
  const char* text;
} taot_config_value;

/* How a launch's config was chosen: the variant named by the caller, the config asked for, the
 * tuned table for the device, the kernel's heuristics, the default config, or the config timed
 * fastest at the first call of the key (autotuning at first call). */
typedef enum taot_step {
  TAOT_STEP_VARIANT = 0,
  TAOT_STEP_CONFIG = 1,
  TAOT_STEP_TABLE = 2,
  TAOT_STEP_HEURISTICS = 3,
  TAOT_STEP_DEFAULT = 4,
  TAOT_STEP_AUTOTUNED = 5
} taot_step;

/* A kernel of a generated library. Owned by the library; valid for the life of the process. */
typedef struct taot_kernel taot_kernel;

/* The message of the last failed call on this thread ("" if none). Owned by the runtime, valid
 * until the thread's next taot call. */
const char* taot_last_error(void);

/* A short name for a status code, e.g. "TAOT_NO_MATCHING_VARIANT". */
const char* taot_status_name(taot_status status);

/* Launch with automatic selection (config == NULL, config_count == 0) or an exact config: the
 * fields named must match; fields not named prefer the default config. `args` holds the
 * kernel's non-constexpr arguments in order. Where HIP is the driver in use (an AMD GPU; see
 * docs/runtime.md, "Two drivers"), every `stream` of this API is a hipStream_t, cast to CUstream. */
taot_status taot_launch(taot_kernel* kernel, CUstream stream, const taot_arg* args, size_t arg_count,
                        const taot_config_value* config, size_t config_count);

/* Launch one variant by its index in the kernel's variant list; fails if it does not accept the
 * arguments (a misaligned pointer given to an aligned variant, say). */
taot_status taot_launch_variant(taot_kernel* kernel, CUstream stream, const taot_arg* args,
                                size_t arg_count, size_t variant_index);

/* What taot_launch_ex does beyond a plain launch. Start from TAOT_LAUNCH_OPTIONS_INIT and set
 * what you need; fields added later go at the end, and `struct_size` tells the runtime which
 * ones the caller knows.
 *   config, config_count: an exact config as for taot_launch (config_count 0: automatic);
 *   variant: a variant index as for taot_launch_variant, or -1 to select (then config applies);
 *   grid: null for the kernel's grid, else three dims (programs per dimension, x y z) that
 *         replace it: a zero dim launches nothing, a negative one or one above the CUDA limits
 *         fails. */
typedef struct taot_launch_options {
  size_t struct_size; /* sizeof(taot_launch_options) */
  const taot_config_value* config;
  size_t config_count;
  int64_t variant;
  const int64_t* grid;
} taot_launch_options;

#define TAOT_LAUNCH_OPTIONS_INIT {sizeof(taot_launch_options), NULL, 0, -1, NULL}

/* Launch with `options` (null: as taot_launch with automatic selection). Giving both a variant
 * and a config fails. */
taot_status taot_launch_ex(taot_kernel* kernel, CUstream stream, const taot_arg* args, size_t arg_count,
                           const taot_launch_options* options);

/* Which variant a launch with these arguments and config (as for taot_launch) would use, and the
 * step that chose it, without launching. Either output may be null. */
taot_status taot_kernel_choose(taot_kernel* kernel, const taot_arg* args, size_t arg_count,
                               const taot_config_value* config, size_t config_count, size_t* variant_index,
                               taot_step* step);
/* "variant", "config", "table", "heuristics", "default", "autotuned at first call"; "unknown" for
 * anything else. */
const char* taot_step_name(taot_step step);

/* Tuned tables loaded at run time (docs/tuning.md): reads the file at `path` (taot's format or
 * vLLM's) and puts it in place of the kernel's table for the same device; `device` (may be null)
 * overrides the device the file names. Safe while other threads launch. */
taot_status taot_kernel_load_tuning(taot_kernel* kernel, const char* path, const char* device);
/* Drops every loaded table: the tables baked into the library apply again. */
taot_status taot_kernel_reset_tuning(taot_kernel* kernel);

/* First-call autotuning (taot::set_autotune, Kernel::set_autotune, docs/runtime.md): `mode` 1 on,
 * 0 off, -1 each kernel's default (process) or the process's setting (kernel). */
void taot_set_autotune(int mode);
taot_status taot_kernel_set_autotune(taot_kernel* kernel, int mode);
/* The folder first-call results persist in (taot::set_autotune_dir); NULL or "" for none. */
taot_status taot_set_autotune_dir(const char* path);
/* Tunes the key of these arguments ahead of time, as a launch with `options` (null: automatic)
 * would (before a CUDA graph capture), and gives the choice a launch makes now; either output may
 * be null. */
taot_status taot_kernel_warmup(taot_kernel* kernel, CUstream stream, const taot_arg* args, size_t arg_count,
                               const taot_launch_options* options, size_t* variant_index, taot_step* step);
/* Drops the kernel's first-call results in this process. */
taot_status taot_kernel_reset_autotune(taot_kernel* kernel);

/* Load every variant's module in the current context / unload them. */
taot_status taot_kernel_preload(taot_kernel* kernel);
taot_status taot_kernel_unload(taot_kernel* kernel);

/* Scratch memory, for kernels that need global or profile scratch (taot::reserve_scratch):
 * makes the buffer for launches on `stream` in the current context at least `bytes` long. Call
 * before capturing a CUDA graph on `stream`; fails while `stream` is capturing. */
taot_status taot_reserve_scratch(CUstream stream, uint64_t bytes);
/* Frees the current context's scratch buffers, after waiting for the device. */
taot_status taot_release_scratch(void);

/* The version of the tables and of this C ABI that a library was generated for; a tool walking a
 * library checks taot_library_abi_version() against it. */
#define TAOT_ABI_VERSION 6  /* 2: images carry their Triton, ptxas and launch ABI; 3: tuning keys may name config fields, fields may be required, kernels list their parameters; 4: "scalar" arguments (None, int or float at launch); 5: kernels say how to autotune at first call; 6: images name their vendor and warp size */

/* A generated library, as tools walk it (`<library>_library()`): its kernels, their variants and
 * each variant's images with their launch facts. */
typedef struct taot_library taot_library;
uint32_t taot_library_abi_version(const taot_library* library);
const char* taot_library_name(const taot_library* library);
size_t taot_library_kernel_count(const taot_library* library);
/* The kernel at `kernel_index` (NULL past the end), or the one named `name` (NULL if none). */
taot_kernel* taot_library_kernel(const taot_library* library, size_t kernel_index);
taot_kernel* taot_library_find_kernel(const taot_library* library, const char* name);

/* One compiled image of a variant (a cubin for one target) and what its launch needs. Members named
 * as the tables' (taot/image_fields.h, whose `info` column says which reach this struct). */
typedef struct taot_image_info {
  const char* target;          /* as in the spec, e.g. "sm_90" */
  uint32_t arch;               /* compute capability, major * 10 + minor */
  int arch_specific;           /* built as sm_XXa: runs only on exactly `arch` */
  const void* cubin;
  size_t cubin_size;
  const char* function_name;
  uint32_t shared_bytes;       /* dynamic shared memory per block */
  uint32_t num_warps;
  uint32_t num_ctas;
  uint32_t cluster_dims[3];
  uint64_t global_scratch_size; /* bytes per program */
  uint64_t profile_scratch_size;
  int cooperative;
  int pdl;
  uint32_t registers;          /* per thread, as ptxas reported; 0 when not recorded */
  uint32_t spill_stores;       /* bytes per thread */
  uint32_t spill_loads;
  uint32_t stack_bytes;
  const char* override_stage;  /* the stage `taot from-ir` rebuilt it from, or NULL */
  const char* override_sha256; /* that file's SHA-256 (hex), or NULL */
  const char* triton_version;  /* the Triton that compiled it, e.g. "3.9.0"; NULL when not recorded */
  const char* ptxas_version;   /* the ptxas that assembled it, e.g. "12.8.93"; NULL when not recorded */
  const char* tensordesc_layout; /* its launch ABI's descriptor layout: "3.5" or "3.7" (docs/manifest.md) */
  uint32_t min_driver;         /* the oldest NVIDIA driver that loads it (ptxas' CUDA major); 0: unknown */
  const char* vendor;          /* whose GPU runs it: "nvidia" or "amd" (then `target` is a gfx name, "gfx942") */
  uint32_t warp_size;          /* threads per warp: 32 on NVIDIA, 64 on gfx942/gfx950 */
} taot_image_info;

/* The images of variant `variant_index` (one per target it was compiled for); 0 past the end. */
size_t taot_kernel_image_count(const taot_kernel* kernel, size_t variant_index);
/* Fills `info` with image `image_index` of variant `variant_index`; TAOT_INVALID_ARGUMENT past the
 * end or for a null pointer. */
taot_status taot_kernel_image(const taot_kernel* kernel, size_t variant_index, size_t image_index,
                              taot_image_info* info);

/* A launch as an observer sees it (taot_set_launch_observer): the kernel, the variant chosen, the
 * step that chose it, the grid in programs, the stream and the call's arguments. `kernel_handle`
 * is the kernel itself, for what the info does not carry: its arguments' names
 * (taot_kernel_arg_name(kernel_handle, i) names args[i]) and its variants. Valid only during the
 * callback; fields added later go at the end. */
typedef struct taot_launch_info {
  const char* library;
  const char* kernel;
  const char* variant_id;
  size_t variant_index;
  taot_step step;
  int64_t grid[3];
  CUstream stream;
  const taot_arg* args;
  size_t arg_count;
  const taot_kernel* kernel_handle;
} taot_launch_info;

/* Callbacks around every launch that reaches the driver, on the launching thread: `begin` just
 * before the launch call, `end` just after it with its status. Pairs nest when a callback launches
 * (or a launch is retried in a re-created context). Either may be NULL. */
typedef struct taot_launch_observer {
  void (*begin)(const taot_launch_info* launch, void* user);
  void (*end)(const taot_launch_info* launch, taot_status status, void* user);
  void* user;
} taot_launch_observer;

/* Installs `observer` (copied; NULL removes it) for launches that start after the call, on every
 * thread. With none installed a launch pays one atomic load and a branch. Thread-safe; an
 * observer being replaced may still see launches that started before. */
void taot_set_launch_observer(const taot_launch_observer* observer);

/* With $TAOT_PROFILE=PATH set (docs/profile.md), the runtime records every launch and writes the
 * trace to PATH at exit; this writes it now (every launch so far, waiting for their times), for a
 * program that will not exit normally or wants the file earlier. It may be called again: each
 * call writes every launch since the start. TAOT_OK, doing nothing, when profiling is off; fails
 * naming PATH when it cannot be written. Thread-safe. */
taot_status taot_profile_flush(void);

/* The printf FIFO size (bytes) of tl.device_print, set once per context before taot's first launch
 * there (taot::set_printf_fifo_size; docs/runtime.md, "Printing and asserting"). Thread-safe. */
taot_status taot_set_printf_fifo_size(size_t bytes);

/* Introspection. Returned strings are owned by the library and live as long as the process. */
const char* taot_kernel_name(const taot_kernel* kernel);
size_t taot_kernel_arg_count(const taot_kernel* kernel);
const char* taot_kernel_arg_name(const taot_kernel* kernel, size_t arg_index);
size_t taot_kernel_variant_count(const taot_kernel* kernel);
const char* taot_kernel_variant_id(const taot_kernel* kernel, size_t variant_index);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TAOT_C_API_H_ */
