// exec_companion (companion.h).
#include "companion.h"

#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <iostream>

namespace zerosim::cli {

std::string beside_this_executable(const std::string& name) {
  char self[PATH_MAX] = {};
  const ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return {};
  const std::string path(self, static_cast<std::size_t>(n));
  return path.substr(0, path.rfind('/') + 1) + name;
}

std::string exec_companion(const std::string& program, const std::string& command,
                           const std::vector<std::string>& args) {
  std::vector<std::string> words = {program, command};
  words.insert(words.end(), args.begin(), args.end());
  std::vector<char*> c_argv;
  c_argv.reserve(words.size() + 1);
  for (std::string& w : words) c_argv.push_back(w.data());
  c_argv.push_back(nullptr);
  std::cout.flush();
  ::execv(program.c_str(), c_argv.data());
  return std::strerror(errno);  // NOLINT(concurrency-mt-unsafe)
}

}  // namespace zerosim::cli
