// Errors as values: Status (success or a coded, human-readable error) and Expected<T>.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <variant>

#include "taot/status_codes.h"

namespace taot {

// Success, or an error with a taot_status code, a message naming the kernel, variant and argument
// involved, and for driver failures the CUresult. Cheap when ok (one null pointer). Move-only.
class [[nodiscard]] Status {
 public:
  Status() noexcept = default;
  Status(Status&&) noexcept = default;
  Status& operator=(Status&&) noexcept = default;

  static Status error(taot_status code, std::string message, int cuda_result = 0) {
    Status status;
    status.detail_ = std::make_unique<Detail>(Detail{code, std::move(message), cuda_result});
    return status;
  }

  bool ok() const noexcept { return detail_ == nullptr; }
  taot_status code() const noexcept { return detail_ ? detail_->code : TAOT_OK; }
  // Empty when ok.
  const std::string& message() const noexcept { return detail_ ? detail_->message : empty_message(); }
  // The CUresult of a failed driver call (code() == TAOT_CUDA_ERROR), else 0.
  int cuda_result() const noexcept { return detail_ ? detail_->cuda_result : 0; }

  // Returns this error with `context` put in front of its message ("context: message").
  Status with_context(const std::string& context) && {
    if (detail_) detail_->message = context + ": " + detail_->message;
    return std::move(*this);
  }

 private:
  struct Detail {
    taot_status code;
    std::string message;
    int cuda_result;
  };
  static const std::string& empty_message() noexcept {
    static const std::string empty;
    return empty;
  }
  std::unique_ptr<Detail> detail_;
};

// A T, or the Status saying why there is none.
template <class T>
class [[nodiscard]] Expected {
 public:
  Expected(T value) : storage_(std::move(value)) {}  // NOLINT(google-explicit-constructor)
  Expected(Status error) : storage_(std::move(error)) {}  // NOLINT(google-explicit-constructor)

  bool ok() const noexcept { return storage_.index() == 0; }
  T& value() & { return std::get<0>(storage_); }
  const T& value() const& { return std::get<0>(storage_); }
  T&& value() && { return std::get<0>(std::move(storage_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  // The error; only when !ok().
  Status take_status() && { return std::get<1>(std::move(storage_)); }
  const Status& status() const { return std::get<1>(storage_); }

 private:
  std::variant<T, Status> storage_;
};

}  // namespace taot
