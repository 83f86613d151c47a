// resil/separate_compilation.hpp — the one translation unit that compiles
// resil's out-of-line functions when a program defines
// RESIL_SEPARATE_COMPILATION (docs/compile_time.md).
//
//   // resil.cpp, the only file that includes this header; every file of the
//   // program is compiled with -DRESIL_SEPARATE_COMPILATION
//   #include <resil/separate_compilation.hpp>        // or <resil/curl/separate_compilation.hpp>
//
// It must come before any other resil header in its file. A program that
// uses resil::curl includes <resil/curl/separate_compilation.hpp> instead
// (it includes this one); including both in different files would define
// the core twice.
#pragma once

#if !defined(RESIL_SEPARATE_COMPILATION)
#error "resil/separate_compilation.hpp: define RESIL_SEPARATE_COMPILATION for every translation unit of the program"
#endif
#if defined(RESIL_DECL) && !defined(RESIL_DETAIL_SOURCE)
#error "resil/separate_compilation.hpp: include it before any other resil header of its translation unit"
#endif
#define RESIL_DETAIL_SOURCE 1

#include "resil.hpp"
#include "testing/manual_clock.hpp"

namespace resil {
template class basic_circuit_breaker<steady_clock>;
template class basic_circuit_breaker<coarse_steady_clock>;
template class basic_circuit_breaker<testing::manual_clock>;
}  // namespace resil
