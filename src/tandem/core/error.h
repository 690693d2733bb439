#pragma once
// The tandem error hierarchy. Every user-facing failure raises a subclass of
// tandem::Error whose message starts with "[function] " and says what was given and
// what was expected (DESIGN.md "Errors"). Kernels never throw for user input: the
// front (meta inference, argument checks) validates first.
#include <sstream>
#include <stdexcept>
#include <string>

namespace tandem {

/// Base class of every error tandem raises on bad input or misuse.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& msg) : std::runtime_error(msg) {}
};
/// A dtype is not accepted by an op (e.g. `[sqrt] got int64 with out dtype int64, expected floating`).
class TypeError : public Error { using Error::Error; };
/// An argument's value is out of its domain (negative size, bad mode string).
class ValueError : public Error { using Error::Error; };
/// Shapes do not fit (broadcasting, view, matmul inner dims).
class ShapeError : public Error { using Error::Error; };
/// A dim or element index is out of range.
class IndexError : public Error { using Error::Error; };
/// The combination is valid in PyTorch but not implemented here yet.
class NotImplementedError : public Error { using Error::Error; };
/// State errors: use after free of a graph, failed system call, corrupt file.
class RuntimeError : public Error { using Error::Error; };
/// Memory runs out or a memory budget cannot be met (CompileOptions::memory_budget below
/// the smallest peak a program can reach); as torch.OutOfMemoryError, a RuntimeError.
class OutOfMemoryError : public RuntimeError { using RuntimeError::RuntimeError; };

namespace detail {
inline void format_into(std::ostringstream&) {}
template <typename T, typename... Rest>
void format_into(std::ostringstream& os, const T& v, const Rest&... rest) {
  os << v;
  format_into(os, rest...);
}
}  // namespace detail

/// Concatenates the arguments with operator<< into one string.
template <typename... Args>
std::string str_cat(const Args&... args) {
  std::ostringstream os;
  detail::format_into(os, args...);
  return os.str();
}

}  // namespace tandem

/// Throws `ErrType` with message "[fn] ..." when `cond` is false. Use for user input.
#define TANDEM_CHECK(cond, ErrType, fn, ...)                               \
  do {                                                                      \
    if (!(cond)) [[unlikely]]                                               \
      throw ErrType(::tandem::str_cat("[", fn, "] ", __VA_ARGS__));         \
  } while (0)

/// Internal invariant (a tandem bug, not user error): raises RuntimeError with location.
#define TANDEM_INTERNAL_ASSERT(cond, ...)                                          \
  do {                                                                              \
    if (!(cond)) [[unlikely]]                                                       \
      throw ::tandem::RuntimeError(::tandem::str_cat("[internal] ", __FILE__, ":", \
                                                     __LINE__, ": " #cond " ",     \
                                                     ##__VA_ARGS__));              \
  } while (0)
