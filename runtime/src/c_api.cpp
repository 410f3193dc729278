// The C ABI over taot::Kernel: status codes out, messages into a thread-local last error.
#include <cstring>
#include <string>
#include <vector>

#include "c_api_errors.h"
#include "taot/c_api.h"
#include "taot/runtime.h"

namespace {

using taot::detail::guarded;
using taot::detail::last_error;
using taot::detail::null_kernel;
using taot::Expected;

// An exact config given by name, as the runtime's per-field requests.
Expected<std::vector<taot::FieldRequest>> config_requests(const taot::table::KernelTable& table,
                                                          const taot_config_value* config, size_t config_count) {
  const std::string name = std::string(table.library) + "::" + table.name;
  if (config == nullptr)
    return taot::Status::error(TAOT_INVALID_ARGUMENT, name + ": config is null but " + std::to_string(config_count) +
                                                          " config values were announced");
  std::vector<taot::FieldRequest> fields(table.field_count);
  for (size_t c = 0; c < config_count; ++c) {
    const char* field_name = config[c].name;
    size_t f = 0;
    while (f < table.field_count && (field_name == nullptr || std::string(field_name) != table.fields[f].name)) ++f;
    if (f == table.field_count) {
      std::string known;
      for (size_t k = 0; k < table.field_count; ++k) known += (k ? ", " : "") + std::string(table.fields[k].name);
      return taot::Status::error(TAOT_INVALID_ARGUMENT, name + ": unknown config field '" +
                                                            (field_name ? field_name : "(null)") +
                                                            "'; the fields are: " + known);
    }
    if (table.fields[f].kind == taot::table::FieldKind::string_value && config[c].text == nullptr)
      return taot::Status::error(TAOT_INVALID_ARGUMENT, name + ": config field " + table.fields[f].name +
                                                            " takes a string: set taot_config_value.text");
    fields[f] = taot::FieldRequest{true, config[c].integer, config[c].real,
                                   config[c].text != nullptr ? std::string_view(config[c].text) : std::string_view()};
  }
  return fields;
}

// What a taot_launch_options asks of a launch (or a warmup): the selection, with the fields it
// points into, and the grid given, if any. Filled in place (the selection points into `fields`).
struct LaunchRequest {
  taot::Selection selection = taot::Selection::automatic();
  std::vector<taot::FieldRequest> fields;
  const int64_t* grid = nullptr;
};

taot::Status read_launch_options(const taot::Kernel& kernel, const taot_launch_options* options,
                                 LaunchRequest* request) {
  const taot::table::KernelTable& table = kernel.table();
  const std::string name = std::string(table.library) + "::" + table.name;
  taot_launch_options given = TAOT_LAUNCH_OPTIONS_INIT;
  if (options != nullptr) {
    if (options->struct_size < sizeof(size_t) || options->struct_size > sizeof(taot_launch_options))
      return taot::Status::error(TAOT_INVALID_ARGUMENT, name + ": taot_launch_options.struct_size is " +
                                                            std::to_string(options->struct_size) +
                                                            "; set it to sizeof(taot_launch_options)");
    std::memcpy(&given, options, options->struct_size);
  }
  if (given.config_count != 0) {
    if (given.variant >= 0)
      return taot::Status::error(TAOT_INVALID_ARGUMENT, name + ": give either a variant or a config, not both");
    Expected<std::vector<taot::FieldRequest>> requested = config_requests(table, given.config, given.config_count);
    if (!requested.ok()) return std::move(requested).take_status();
    request->fields = std::move(requested).value();
    request->selection = taot::Selection::config(request->fields.data());
  } else if (given.variant >= 0) {
    request->selection = taot::Selection::variant(static_cast<size_t>(given.variant));
  }
  request->grid = given.grid;
  return taot::Status();
}

}  // namespace

extern "C" {

const char* taot_last_error(void) { return last_error.c_str(); }

const char* taot_status_name(taot_status status) {
  switch (status) {
    case TAOT_OK: return "TAOT_OK";
    case TAOT_INVALID_ARGUMENT: return "TAOT_INVALID_ARGUMENT";
    case TAOT_NO_MATCHING_VARIANT: return "TAOT_NO_MATCHING_VARIANT";
    case TAOT_NO_DRIVER: return "TAOT_NO_DRIVER";
    case TAOT_NO_CONTEXT: return "TAOT_NO_CONTEXT";
    case TAOT_UNSUPPORTED_DEVICE: return "TAOT_UNSUPPORTED_DEVICE";
    case TAOT_CUDA_ERROR: return "TAOT_CUDA_ERROR";
    case TAOT_OUT_OF_RESOURCES: return "TAOT_OUT_OF_RESOURCES";
    case TAOT_NOT_SUPPORTED: return "TAOT_NOT_SUPPORTED";
    case TAOT_INTERNAL: return "TAOT_INTERNAL";
  }
  return "TAOT_UNKNOWN_STATUS";
}

taot_status taot_kernel_choose(taot_kernel* handle, const taot_arg* args, size_t arg_count,
                               const taot_config_value* config, size_t config_count, size_t* variant_index,
                               taot_step* step) {
  return guarded([&]() -> taot::Status {
    if (handle == nullptr) return null_kernel();
    taot::Kernel& kernel = *taot::Kernel::from_handle(handle);
    taot::Selection selection = taot::Selection::automatic();
    std::vector<taot::FieldRequest> fields;
    if (config_count != 0) {
      Expected<std::vector<taot::FieldRequest>> requested = config_requests(kernel.table(), config, config_count);
      if (!requested.ok()) return std::move(requested).take_status();
      fields = std::move(requested).value();
      selection = taot::Selection::config(fields.data());
    }
    Expected<taot::Choice> choice = kernel.choose(args, arg_count, selection);
    if (!choice.ok()) return std::move(choice).take_status();
    if (variant_index != nullptr) *variant_index = choice->variant;
    if (step != nullptr) *step = static_cast<taot_step>(choice->step);
    return taot::Status();
  });
}

const char* taot_step_name(taot_step step) {
  switch (step) {
    case TAOT_STEP_VARIANT:
    case TAOT_STEP_CONFIG:
    case TAOT_STEP_TABLE:
    case TAOT_STEP_HEURISTICS:
    case TAOT_STEP_DEFAULT:
    case TAOT_STEP_AUTOTUNED: return taot::step_name(static_cast<taot::Step>(step));
  }
  return "unknown";
}

taot_status taot_launch(taot_kernel* handle, CUstream stream, const taot_arg* args, size_t arg_count,
                        const taot_config_value* config, size_t config_count) {
  taot_launch_options options = TAOT_LAUNCH_OPTIONS_INIT;
  options.config = config;
  options.config_count = config_count;
  return taot_launch_ex(handle, stream, args, arg_count, &options);
}

taot_status taot_launch_ex(taot_kernel* handle, CUstream stream, const taot_arg* args, size_t arg_count,
                           const taot_launch_options* options) {
  return guarded([&]() -> taot::Status {
    if (handle == nullptr) return null_kernel();
    taot::Kernel& kernel = *taot::Kernel::from_handle(handle);
    LaunchRequest request;
    if (taot::Status status = read_launch_options(kernel, options, &request); !status.ok()) return status;
    if (request.grid == nullptr) return kernel.launch(stream, args, arg_count, request.selection);
    return kernel.launch(stream, args, arg_count, request.selection,
                         taot::Grid{request.grid[0], request.grid[1], request.grid[2]});
  });
}

taot_status taot_kernel_warmup(taot_kernel* handle, CUstream stream, const taot_arg* args, size_t arg_count,
                               const taot_launch_options* options, size_t* variant_index, taot_step* step) {
  return guarded([&]() -> taot::Status {
    if (handle == nullptr) return null_kernel();
    taot::Kernel& kernel = *taot::Kernel::from_handle(handle);
    LaunchRequest request;
    if (taot::Status status = read_launch_options(kernel, options, &request); !status.ok()) return status;
    Expected<taot::Choice> choice =
        request.grid == nullptr
            ? kernel.warmup(stream, args, arg_count, request.selection)
            : kernel.warmup(stream, args, arg_count, request.selection,
                            taot::Grid{request.grid[0], request.grid[1], request.grid[2]});
    if (!choice.ok()) return std::move(choice).take_status();
    if (variant_index != nullptr) *variant_index = choice->variant;
    if (step != nullptr) *step = static_cast<taot_step>(choice->step);
    return taot::Status();
  });
}

taot_status taot_launch_variant(taot_kernel* handle, CUstream stream, const taot_arg* args, size_t arg_count,
                                size_t variant_index) {
  return guarded([&]() -> taot::Status {
    if (handle == nullptr) return null_kernel();
    return taot::Kernel::from_handle(handle)->launch(stream, args, arg_count, taot::Selection::variant(variant_index));
  });
}

taot_status taot_kernel_preload(taot_kernel* handle) {
  return guarded([&]() -> taot::Status {
    return handle == nullptr ? null_kernel() : taot::Kernel::from_handle(handle)->preload();
  });
}

taot_status taot_kernel_unload(taot_kernel* handle) {
  return guarded([&]() -> taot::Status {
    return handle == nullptr ? null_kernel() : taot::Kernel::from_handle(handle)->unload();
  });
}

taot_status taot_reserve_scratch(CUstream stream, uint64_t bytes) {
  return guarded([&]() -> taot::Status { return taot::reserve_scratch(stream, bytes); });
}

taot_status taot_release_scratch(void) {
  return guarded([&]() -> taot::Status { return taot::release_scratch(); });
}

static const taot::table::KernelTable* table_of(const taot_kernel* handle) {
  return handle == nullptr ? nullptr : &taot::Kernel::from_handle(const_cast<taot_kernel*>(handle))->table();
}

const char* taot_kernel_name(const taot_kernel* handle) {
  const auto* table = table_of(handle);
  return table ? table->name : "";
}

size_t taot_kernel_arg_count(const taot_kernel* handle) {
  const auto* table = table_of(handle);
  return table ? table->arg_count : 0;
}

const char* taot_kernel_arg_name(const taot_kernel* handle, size_t arg_index) {
  const auto* table = table_of(handle);
  return table && arg_index < table->arg_count ? table->args[arg_index].name : nullptr;
}

size_t taot_kernel_variant_count(const taot_kernel* handle) {
  const auto* table = table_of(handle);
  return table ? table->variant_count : 0;
}

const char* taot_kernel_variant_id(const taot_kernel* handle, size_t variant_index) {
  const auto* table = table_of(handle);
  return table && variant_index < table->variant_count ? table->variants[variant_index].id : nullptr;
}

}  // extern "C"
