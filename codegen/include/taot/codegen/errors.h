// Errors of the code generator: taot::Status and taot::Expected, as in the runtime. The library
// never throws out of its API, prints or exits; callers decide what to show.
#pragma once

#include <string>
#include <utility>

#include "taot/status.h"

namespace taot::codegen {

using taot::Expected;
using taot::Status;

// A problem with the generator's input (the manifest, a cubin, the output folder), with a message
// that names the file and the JSON path or argument involved.
inline Status input_error(std::string message) { return Status::error(TAOT_INVALID_ARGUMENT, std::move(message)); }

}  // namespace taot::codegen
