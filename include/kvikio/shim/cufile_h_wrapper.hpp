#pragma once
/// @file shim/cufile_h_wrapper.hpp
/// cuFile's public types, for code written against libkvikio (BatchOp::opcode, the events of
/// BatchHandle::status, KVIKIO_CUFILE_TRY). libkvikio never links cuFile: when cufile.h (and
/// the cuda.h it needs) are on the include path, they are used; otherwise stand-ins with the
/// same names, values and layout are declared here, so that code naming CUFILE_READ or
/// CUFILE_COMPLETE compiles without the vendor headers. Include cufile.h before this header,
/// or not at all: a translation unit cannot hold both.
#include <sys/types.h>

#include <cstddef>

#if __has_include(<cufile.h>) && __has_include(<cuda.h>)
#include <cufile.h>
#else
/// Defined when cufile.h is not found: the stand-in types below are used instead.
#define KVIKIO_CUFILE_STANDIN_TYPES 1
/// The first cuFile operation error code (cuFile's CUFILEOP_BASE_ERR).
#define CUFILEOP_BASE_ERR 5000
/// cuFile's error code (an enum in cufile.h).
using CUfileOpError = int;
/// cuFile's success code.
#define CU_FILE_SUCCESS 0
/// cuFile's code for a driver that is not open (or libcufile that is not usable).
#define CU_FILE_DRIVER_NOT_INITIALIZED (CUFILEOP_BASE_ERR + 1)
/// cuFile's code for a CUDA driver error (`cu_err` holds it).
#define CU_FILE_CUDA_DRIVER_ERROR (CUFILEOP_BASE_ERR + 11)
/// A registered file (cuFileHandleRegister's result).
typedef void* CUfileHandle_t;  // NOLINT(modernize-use-using)
/// A cuFile status: `err` a CUfileOpError, `cu_err` a CUresult when err is
/// CU_FILE_CUDA_DRIVER_ERROR.
typedef struct CUfileError {  // NOLINT(modernize-use-using)
  /// cuFile's error code.
  CUfileOpError err;
  /// The CUDA driver error, when `err` is CU_FILE_CUDA_DRIVER_ERROR.
  int cu_err;
} CUfileError_t;
/// The direction of a batch operation.
typedef enum CUfileOpcode { CUFILE_READ = 0, CUFILE_WRITE } CUfileOpcode_t;  // NOLINT
/// The state of one batch operation.
typedef enum CUFILEStatus_enum {  // NOLINT(modernize-use-using)
  CUFILE_WAITING  = 0x01,
  CUFILE_PENDING  = 0x02,
  CUFILE_INVALID  = 0x04,
  CUFILE_CANCELED = 0x08,
  CUFILE_COMPLETE = 0x10,
  CUFILE_TIMEOUT  = 0x20,
  CUFILE_FAILED   = 0x40,
} CUfileStatus_t;
/// One finished batch operation: `ret` the bytes moved.
typedef struct CUfileIOEvents {  // NOLINT(modernize-use-using)
  /// The cookie of the submitted operation.
  void* cookie;
  /// Where the operation stands.
  CUfileStatus_t status;
  /// Bytes moved, once complete.
  std::size_t ret;
} CUfileIOEvents_t;
#endif
