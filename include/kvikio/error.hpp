#pragma once
/// @file error.hpp
/// The exception types the public API throws. Each maps onto what a Python user expects:
///   GenericSystemError (std::system_error)  -> OSError (FileNotFoundError, PermissionError, ...)
///   std::invalid_argument                   -> ValueError   (bad argument, mode or setting value)
///   std::overflow_error                     -> OverflowError (offsets/sizes that do not fit)
///   std::out_of_range                       -> IndexError   (a range outside a mapping/allocation)
///   kvikio::Error and its subclasses        -> RuntimeError (an IO operation that failed)
#include <sys/types.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>

#include <kvikio/export.hpp>
#include <kvikio/shim/cufile_h_wrapper.hpp>

namespace kvikio {

/// An IO operation failed for a reason other than an OS error (RuntimeError in Python).
class KVIKIO_EXPORT Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A read reached the end of the file before the requested bytes were read.
class KVIKIO_EXPORT EndOfFileError : public Error {
 public:
  using Error::Error;
};

/// A cuFile call failed (name kept from libkvikio).
class KVIKIO_EXPORT CUfileException : public Error {
 public:
  using Error::Error;
};

/// A CUDA driver call failed. A CUfileException too, since libkvikio reports CUDA driver
/// failures as CUfileException: handlers written for it keep catching these.
class KVIKIO_EXPORT CudaDriverError : public CUfileException {
 public:
  using CUfileException::CUfileException;
};

/// An OS call failed; `code()` holds the errno value (OSError in Python).
class KVIKIO_EXPORT GenericSystemError : public std::system_error {
 public:
  /// The error `err` (an errno value) with message `what`; what() appends the system's text for
  /// `err`.
  GenericSystemError(int err, const std::string& what)
    : std::system_error(err, std::generic_category(), what)
  {
  }
  /// Uses the current `errno`.
  explicit GenericSystemError(const std::string& what) : GenericSystemError(errno, what) {}
};

/// "CUDA_ERROR_X (n)" for a CUresult (libkvikio's messages name the error).
KVIKIO_EXPORT std::string cuda_driver_error_text(int result);
/// cuFile's description of a CUfileOpError (e.g. "invalid arguments (5022)").
KVIKIO_EXPORT std::string cufile_op_error_text(int err);

namespace detail {

/// Throws `Exception` with libkvikio's message: "KvikIO failure at: FILE:LINE: MSG". The
/// message is built only on failure.
template <typename Exception, typename MsgFunc>
[[noreturn]] void kvikio_fail(MsgFunc&& msg_func, int line_number, const char* filename)
{
  const std::string msg = std::forward<MsgFunc>(msg_func)();
  throw Exception{std::string{"KvikIO failure at: "} + filename + ":" +
                  std::to_string(line_number) + ": " + (msg.empty() ? "(no message)" : msg)};
}

/// Throws `Exception` ("CUDA error at: FILE:LINE: CUDA_ERROR_X (n)") unless `result` (a
/// CUresult) is CUDA_SUCCESS.
template <typename Exception>
void cuda_driver_try(int result, int line_number, const char* filename)
{
  if (result == 0) { return; }
  throw Exception{std::string{"CUDA error at: "} + filename + ":" + std::to_string(line_number) +
                  ": " + cuda_driver_error_text(result)};
}

/// Throws `Exception` ("cuFile error at: FILE:LINE: ...") unless `error` (a CUfileError_t)
/// is CU_FILE_SUCCESS; a CUDA driver error inside it is reported as by cuda_driver_try.
template <typename Exception, typename CUfileErrorT>
void cufile_try(const CUfileErrorT& error, int line_number, const char* filename)
{
  const int err = static_cast<int>(error.err);
  if (err == 0) { return; }
  constexpr int cuda_driver_error = 5011;  // CU_FILE_CUDA_DRIVER_ERROR
  if (err == cuda_driver_error) {
    cuda_driver_try<Exception>(static_cast<int>(error.cu_err), line_number, filename);
  }
  throw Exception{std::string{"cuFile error at: "} + filename + ":" + std::to_string(line_number) +
                  ": " + cufile_op_error_text(err)};
}

/// Throws `Exception` when `nbytes_done` (the result of a cuFile read/write or of a stream
/// operation) is negative: -errno, or -CUfileOpError above 5000.
template <typename Exception>
void cufile_check_bytes_done(ssize_t nbytes_done, int line_number, const char* filename)
{
  if (nbytes_done >= 0) { return; }
  const long err        = static_cast<long>(-nbytes_done);
  const std::string msg = err > 5000 ? cufile_op_error_text(static_cast<int>(err))
                                     : std::string(std::strerror(static_cast<int>(err)));
  throw Exception{std::string{"cuFile error at: "} + filename + ":" + std::to_string(line_number) +
                  ": " + msg};
}

/// Throws GenericSystemError (errno) naming the place of a failed system call.
[[noreturn]] inline void handle_linux_call_error(int line_number,
                                                 const char* filename,
                                                 std::string_view extra_msg)
{
  std::string msg = extra_msg.empty() ? std::string{} : std::string{extra_msg} + " ";
  msg += std::string{"Linux system/library function call error at: "} + filename + ":" +
         std::to_string(line_number);
  throw GenericSystemError(msg);
}

/// Throws GenericSystemError when `return_value` equals `error_value` (-1 by default).
inline void check_linux_call(long return_value,
                             int line_number,
                             const char* filename,
                             std::string_view extra_msg = "",
                             long error_value           = -1)
{
  if (return_value == error_value) { handle_linux_call_error(line_number, filename, extra_msg); }
}
template <typename T>
void check_linux_call(
  T return_value, int line_number, const char* filename, std::string_view extra_msg, T error_value)
{
  if (return_value == error_value) { handle_linux_call_error(line_number, filename, extra_msg); }
}

}  // namespace detail

}  // namespace kvikio

// libkvikio's checking macros, with its semantics: the optional last argument is the
// exception type, CUfileException by default (GenericSystemError for KVIKIO_SYSCALL_CHECK).
// NOLINTBEGIN(cppcoreguidelines-macro-usage)
/// Picks the three-argument form of a macro that takes one to three arguments.
#define KVIKIO_VA_SELECT_3(_1, _2, _3, NAME, ...) NAME
/// Picks the two-argument form of a macro that takes one or two arguments.
#define KVIKIO_VA_SELECT_2(_1, _2, NAME, ...) NAME

/// KVIKIO_EXPECT(condition, message[, exception]): throws unless `condition` holds; the
/// message names the file and line.
#define KVIKIO_EXPECT(...) \
  KVIKIO_VA_SELECT_3(__VA_ARGS__, KVIKIO_EXPECT_3, KVIKIO_EXPECT_2)(__VA_ARGS__)
/// KVIKIO_EXPECT with an exception type.
#define KVIKIO_EXPECT_3(_condition, _msg, _exception_type)          \
  do {                                                              \
    if (!(_condition)) {                                            \
      kvikio::detail::kvikio_fail<_exception_type>(                 \
        [&]() -> std::string { return _msg; }, __LINE__, __FILE__); \
    }                                                               \
  } while (0)
/// KVIKIO_EXPECT throwing CUfileException.
#define KVIKIO_EXPECT_2(_condition, _msg) KVIKIO_EXPECT_3(_condition, _msg, kvikio::CUfileException)

/// KVIKIO_FAIL(message[, exception]): throws unconditionally (an expression).
#define KVIKIO_FAIL(...) KVIKIO_VA_SELECT_2(__VA_ARGS__, KVIKIO_FAIL_2, KVIKIO_FAIL_1)(__VA_ARGS__)
/// KVIKIO_FAIL with an exception type.
#define KVIKIO_FAIL_2(_msg, _exception_type)    \
  kvikio::detail::kvikio_fail<_exception_type>( \
    [&]() -> std::string { return _msg; }, __LINE__, __FILE__)
/// KVIKIO_FAIL throwing CUfileException.
#define KVIKIO_FAIL_1(_msg) KVIKIO_FAIL_2(_msg, kvikio::CUfileException)

/// KVIKIO_CUDA_DRIVER_TRY(cuda_call[, exception]).
#define KVIKIO_CUDA_DRIVER_TRY(...)                                                   \
  KVIKIO_VA_SELECT_2(__VA_ARGS__, KVIKIO_CUDA_DRIVER_TRY_2, KVIKIO_CUDA_DRIVER_TRY_1) \
  (__VA_ARGS__)
/// KVIKIO_CUDA_DRIVER_TRY with an exception type.
#define KVIKIO_CUDA_DRIVER_TRY_2(_call, _exception_type)                                           \
  do {                                                                                             \
    kvikio::detail::cuda_driver_try<_exception_type>(static_cast<int>(_call), __LINE__, __FILE__); \
  } while (0)
/// KVIKIO_CUDA_DRIVER_TRY throwing CUfileException.
#define KVIKIO_CUDA_DRIVER_TRY_1(_call) KVIKIO_CUDA_DRIVER_TRY_2(_call, kvikio::CUfileException)

/// KVIKIO_CUFILE_TRY(cufile_call[, exception]): for calls returning CUfileError_t.
#define KVIKIO_CUFILE_TRY(...)                                              \
  KVIKIO_VA_SELECT_2(__VA_ARGS__, KVIKIO_CUFILE_TRY_2, KVIKIO_CUFILE_TRY_1) \
  (__VA_ARGS__)
/// KVIKIO_CUFILE_TRY with an exception type.
#define KVIKIO_CUFILE_TRY_2(_call, _exception_type)                         \
  do {                                                                      \
    kvikio::detail::cufile_try<_exception_type>(_call, __LINE__, __FILE__); \
  } while (0)
/// KVIKIO_CUFILE_TRY throwing CUfileException.
#define KVIKIO_CUFILE_TRY_1(_call) KVIKIO_CUFILE_TRY_2(_call, kvikio::CUfileException)

/// KVIKIO_CUFILE_CHECK_BYTES_DONE(nbytes_done[, exception]): for cuFile byte counts.
#define KVIKIO_CUFILE_CHECK_BYTES_DONE(...)                                          \
  KVIKIO_VA_SELECT_2(                                                                \
    __VA_ARGS__, KVIKIO_CUFILE_CHECK_BYTES_DONE_2, KVIKIO_CUFILE_CHECK_BYTES_DONE_1) \
  (__VA_ARGS__)
/// KVIKIO_CUFILE_CHECK_BYTES_DONE with an exception type.
#define KVIKIO_CUFILE_CHECK_BYTES_DONE_2(_nbytes_done, _exception_type)                         \
  do {                                                                                          \
    kvikio::detail::cufile_check_bytes_done<_exception_type>(_nbytes_done, __LINE__, __FILE__); \
  } while (0)
/// KVIKIO_CUFILE_CHECK_BYTES_DONE throwing CUfileException.
#define KVIKIO_CUFILE_CHECK_BYTES_DONE_1(_nbytes_done) \
  KVIKIO_CUFILE_CHECK_BYTES_DONE_2(_nbytes_done, kvikio::CUfileException)

/// KVIKIO_SYSCALL_CHECK(return_value[, extra_message[, error_value]]): throws
/// GenericSystemError (with errno) when the call returned `error_value` (-1 by default).
#define KVIKIO_SYSCALL_CHECK(...)                                                        \
  KVIKIO_VA_SELECT_3(                                                                    \
    __VA_ARGS__, KVIKIO_SYSCALL_CHECK_3, KVIKIO_SYSCALL_CHECK_2, KVIKIO_SYSCALL_CHECK_1) \
  (__VA_ARGS__)
/// KVIKIO_SYSCALL_CHECK of a call that fails with -1.
#define KVIKIO_SYSCALL_CHECK_1(_return_value)                            \
  do {                                                                   \
    kvikio::detail::check_linux_call(_return_value, __LINE__, __FILE__); \
  } while (0)
/// KVIKIO_SYSCALL_CHECK with a message appended.
#define KVIKIO_SYSCALL_CHECK_2(_return_value, _extra_msg)                            \
  do {                                                                               \
    kvikio::detail::check_linux_call(_return_value, __LINE__, __FILE__, _extra_msg); \
  } while (0)
/// KVIKIO_SYSCALL_CHECK with a message and the failing return value.
#define KVIKIO_SYSCALL_CHECK_3(_return_value, _extra_msg, _error_value)                            \
  do {                                                                                             \
    kvikio::detail::check_linux_call(_return_value, __LINE__, __FILE__, _extra_msg, _error_value); \
  } while (0)
// NOLINTEND(cppcoreguidelines-macro-usage)
