// Runs a shell command from a Catch2 test and returns what it wrote to stdout;
// the test fails (REQUIRE) when the command cannot start or does not exit 0.
#ifndef MSCCLPP_TESTS_SUPPORT_RUN_COMMAND_HPP_
#define MSCCLPP_TESTS_SUPPORT_RUN_COMMAND_HPP_

#include <catch2/catch.hpp>
#include <cstdio>
#include <string>

namespace mscclpp::test {

inline std::string runCommand(const std::string& cmd) {
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  REQUIRE(p != nullptr);
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
  int status = pclose(p);
  INFO(cmd << " exited with " << status);
  REQUIRE(status == 0);
  return out;
}

}  // namespace mscclpp::test

#endif  // MSCCLPP_TESTS_SUPPORT_RUN_COMMAND_HPP_
