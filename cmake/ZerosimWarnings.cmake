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
  if(ZEROSIM_SANITIZE)
    target_compile_options(${target} PRIVATE -fsanitize=address,undefined -fno-omit-frame-pointer)
    target_link_options(${target} PRIVATE -fsanitize=address,undefined)
  endif()
  if(ZEROSIM_TSAN)  # ThreadSanitizer, for the host backend's rank threads
    target_compile_options(${target} PRIVATE -fsanitize=thread -fno-omit-frame-pointer)
    target_link_options(${target} PRIVATE -fsanitize=thread)
  endif()
endfunction()
