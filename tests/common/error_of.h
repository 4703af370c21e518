#pragma once
// The message of what `f` throws ("(no error)" when it throws nothing): tests assert on the words
// a user reads.

#include <exception>
#include <functional>
#include <string>

namespace tensorscope::test {

inline std::string errorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace tensorscope::test
