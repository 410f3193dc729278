// What every C ABI source shares: the thread-local last error and the wrapper that turns a
// Status (or an escaping exception) into a status code and that message.
#pragma once

#include <exception>
#include <string>

#include "taot/c_api.h"
#include "taot/status.h"

namespace taot::detail {

// The message taot_last_error() returns: the last failure of a C function on this thread.
inline thread_local std::string last_error;

inline taot_status report(Status status) {
  if (status.ok()) return TAOT_OK;
  last_error = status.message();
  return status.code();
}

// Runs `body` (returning a Status) and turns any escaping exception into TAOT_INTERNAL.
template <class Body>
taot_status guarded(Body&& body) noexcept {
  try {
    return report(body());
  } catch (const std::exception& error) {
    last_error = std::string("taot internal error: ") + error.what();
  } catch (...) {
    last_error = "taot internal error";
  }
  return TAOT_INTERNAL;
}

inline Status null_kernel() { return Status::error(TAOT_INVALID_ARGUMENT, "the kernel handle is null"); }

}  // namespace taot::detail
