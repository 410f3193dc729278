// Errors as values for the code generator: Error (a message for the user) and Expected<T>.
// The codegen library never throws out of its API, prints or exits; callers decide what to show.
#pragma once

#include <string>
#include <utility>
#include <variant>

namespace taot::codegen {

// A failure, with a message that names the file and the JSON path or argument involved.
class [[nodiscard]] Error {
 public:
  explicit Error(std::string message) : message_(std::move(message)) {}
  const std::string& message() const noexcept { return message_; }

 private:
  std::string message_;
};

// A T, or the Error saying why there is none.
template <class T>
class [[nodiscard]] Expected {
 public:
  Expected(T value) : storage_(std::move(value)) {}      // NOLINT(google-explicit-constructor)
  Expected(Error error) : storage_(std::move(error)) {}  // NOLINT(google-explicit-constructor)

  bool ok() const noexcept { return storage_.index() == 0; }
  explicit operator bool() const noexcept { return ok(); }

  // The value; only when ok().
  T& value() & { return std::get<0>(storage_); }
  const T& value() const& { return std::get<0>(storage_); }
  T&& value() && { return std::get<0>(std::move(storage_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  // The error; only when !ok().
  const Error& error() const& { return std::get<1>(storage_); }
  Error&& error() && { return std::get<1>(std::move(storage_)); }

 private:
  std::variant<T, Error> storage_;
};

}  // namespace taot::codegen
