#pragma once
// Test helper for the command-line tests (test_tools only: TANDEM_CLI_PATH is the built
// `tandem` program, defined for that target in tests/CMakeLists.txt).
#include <sys/wait.h>

#include <cstdio>
#include <string>
#include <utility>

namespace tandem_test {

/// Runs the tandem program with `args` (a shell-quoted string) through the shell; returns
/// {exit status (-1 when it did not exit normally), stdout + stderr}.
inline std::pair<int, std::string> cli(const std::string& args) {
  FILE* p = popen((std::string(TANDEM_CLI_PATH) + " " + args + " 2>&1").c_str(), "r");
  if (p == nullptr) return {-1, "popen failed"};
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  const int status = pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

}  // namespace tandem_test
