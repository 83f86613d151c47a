# Warning flags for resil's own tests, examples and benchmarks. Never applied to
# the INTERFACE targets, so they do not leak into consumers. -Werror only with
# RESIL_WARNINGS_AS_ERRORS (CI turns it on): a newer or older compiler's new
# warning, or a false positive at some optimisation level, must not break a
# user's build of the examples.
add_library(resil_warnings INTERFACE)
target_compile_options(resil_warnings INTERFACE
  $<$<CXX_COMPILER_ID:GNU,Clang,AppleClang>:-Wall -Wextra -Wpedantic -Wconversion -Wshadow>)
if(RESIL_WARNINGS_AS_ERRORS)
  target_compile_options(resil_warnings INTERFACE
    $<$<CXX_COMPILER_ID:GNU,Clang,AppleClang>:-Werror>
    $<$<CXX_COMPILER_ID:MSVC>:/WX>)
endif()
