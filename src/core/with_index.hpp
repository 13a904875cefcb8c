#pragma once
// Naming the request of a batch whose check failed.
#include <cstddef>
#include <stdexcept>
#include <string>

#include <kvikio/error.hpp>

namespace kvikio::detail {

/// Runs `check`, prefixing the message of what it throws with "batch request <i>: " (built
/// only then: a batch may hold many thousands of requests). The type is kept.
template <typename F>
void with_index(std::size_t i, F&& check)
{
  auto where = [i] { return "batch request " + std::to_string(i) + ": "; };
  try {
    check();
  } catch (const EndOfFileError& e) {
    throw EndOfFileError(where() + e.what());
  } catch (const std::out_of_range& e) {
    throw std::out_of_range(where() + e.what());
  } catch (const std::overflow_error& e) {
    throw std::overflow_error(where() + e.what());
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(where() + e.what());
  }
}

}  // namespace kvikio::detail
