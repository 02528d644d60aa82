# Dependency lookup: Debian packages only (scripts/install_deps.sh installs them). Nothing is downloaded.
find_package(nlohmann_json 3.10 REQUIRED)
# Trainer configs (LLaMA-Factory and axolotl YAML, sim/src/config/trainer_config_yaml.cc).
find_package(yaml-cpp 0.7 QUIET)
if(NOT yaml-cpp_FOUND)
  message(FATAL_ERROR "zerosim needs yaml-cpp (Debian: libyaml-cpp-dev) to read trainer configs; "
                      "scripts/install_deps.sh installs it")
endif()
find_package(Threads REQUIRED)
if(ZEROSIM_BUILD_TESTS)
  find_package(GTest REQUIRED)
endif()
if(ZEROSIM_BUILD_BENCH)
  find_package(benchmark QUIET)
  if(NOT benchmark_FOUND)
    message(STATUS "zerosim: Google Benchmark not found; bench/ is skipped")
  endif()
endif()
