# Warning flags for resil's own tests, examples and benchmarks. Never applied to
# the INTERFACE targets, so they do not leak into consumers.
add_library(resil_warnings INTERFACE)
target_compile_options(resil_warnings INTERFACE
  $<$<CXX_COMPILER_ID:GNU,Clang,AppleClang>:-Wall -Wextra -Wpedantic -Wconversion -Wshadow -Werror>)
