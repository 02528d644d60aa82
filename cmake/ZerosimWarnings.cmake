# Warning flags for every zerosim target: zerosim_set_warnings(<target>).
function(zerosim_set_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow -Wconversion
                         -Wno-sign-conversion -Wnon-virtual-dtor -Wold-style-cast -Woverloaded-virtual)
  # GCC 12 reports false -Wrestrict overlaps inside libstdc++'s std::string concatenation at -O2
  # (GCC bug 105329, fixed in GCC 13); nothing in zerosim calls memcpy on overlapping ranges.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
    target_compile_options(${target} PRIVATE -Wno-restrict)
  endif()
  if(ZEROSIM_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
  # ASan + UBSan (CI's build-asan); -fno-sanitize-recover makes any undefined behaviour fail the
  # test that hit it instead of printing a line a passing test would hide.
  if(ZEROSIM_SANITIZE)
    target_compile_options(${target} PRIVATE -fsanitize=address,undefined
                           -fno-sanitize-recover=undefined -fno-omit-frame-pointer)
    target_link_options(${target} PRIVATE -fsanitize=address,undefined -fno-sanitize-recover=undefined)
  endif()
  # The fuzz targets (fuzz/, clang only) need every library they reach built with libFuzzer's
  # coverage hooks; the hooks are inert in programs that do not link libFuzzer (the tests, the CLI).
  if(ZEROSIM_FUZZ)
    target_compile_options(${target} PRIVATE -fsanitize=fuzzer-no-link)
  endif()
  if(ZEROSIM_TSAN)  # ThreadSanitizer, for the host backend's rank threads
    target_compile_options(${target} PRIVATE -fsanitize=thread -fno-omit-frame-pointer)
    target_link_options(${target} PRIVATE -fsanitize=thread)
  endif()
endfunction()
