#pragma once
/// @file kvikio.hpp
/// Everything public, in one include.
#include <kvikio/compat_mode.hpp>
#include <kvikio/defaults.hpp>
#include <kvikio/error.hpp>
#include <kvikio/file_handle.hpp>
#include <kvikio/file_utils.hpp>
#include <kvikio/mmap.hpp>
#include <kvikio/threadpool.hpp>
#include <kvikio/version.hpp>
