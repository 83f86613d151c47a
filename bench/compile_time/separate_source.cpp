// The one source file of a program built with RESIL_SEPARATE_COMPILATION
// that uses resil::curl and resil::json: compiled once per program, not once
// per file that uses resil (docs/compile_time.md).
#include <resil/curl/separate_compilation.hpp>
#include <resil/json/separate_compilation.hpp>
