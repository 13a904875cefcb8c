#pragma once
/// @file error.hpp
/// The exception types the public API throws. Each maps onto what a Python user expects:
///   GenericSystemError (std::system_error)  -> OSError (FileNotFoundError, PermissionError, ...)
///   std::invalid_argument                   -> ValueError   (bad argument, mode or setting value)
///   std::overflow_error                     -> OverflowError (offsets/sizes that do not fit)
///   std::out_of_range                       -> IndexError   (a range outside a mapping/allocation)
///   kvikio::Error and its subclasses        -> RuntimeError (an IO operation that failed)
#include <cerrno>
#include <stdexcept>
#include <string>
#include <system_error>

#include <kvikio/export.hpp>

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
  GenericSystemError(int err, const std::string& what)
    : std::system_error(err, std::generic_category(), what)
  {
  }
  /// Uses the current `errno`.
  explicit GenericSystemError(const std::string& what) : GenericSystemError(errno, what) {}
};

}  // namespace kvikio
