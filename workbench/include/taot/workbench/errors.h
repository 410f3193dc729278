// Errors of the workbench library: taot::Status and taot::Expected, as in the runtime and the code
// generator. The library never throws out of its API, prints or exits; the commands decide what to
// show.
#pragma once

#include <string>
#include <utility>

#include "taot/status.h"

namespace taot::workbench {

using taot::Expected;
using taot::Status;

// A problem with what the user asked for or pointed at (a file, a kernel, a filter), with a message
// that names it and, where there is a choice, what exists.
inline Status usage_error(std::string message) { return Status::error(TAOT_INVALID_ARGUMENT, std::move(message)); }

// A tool the workbench runs (nvdisasm) is missing or failed.
inline Status tool_error(std::string message) { return Status::error(TAOT_NOT_SUPPORTED, std::move(message)); }

}  // namespace taot::workbench
