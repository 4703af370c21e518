#pragma once
// Helpers shared by the analysis tests.

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

namespace tensorscope::model_core::test {

/// Runs `f`, expecting std::invalid_argument whose message contains every one of `parts`.
template <typename F, typename... Parts>
void expectInvalid(F&& f, const Parts&... parts) {
  try {
    f();
    ADD_FAILURE() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    for (const std::string& part : {std::string(parts)...})
      EXPECT_NE(what.find(part), std::string::npos) << "message: '" << what << "' lacks '" << part << "'";
  }
}

}  // namespace tensorscope::model_core::test
