// The one source file of a program built with RESIL_SEPARATE_COMPILATION
// that uses resil::curl, resil::json and resil::http::load_client: compiled
// once per program, not once per file that uses resil (docs/compile_time.md).
#include <resil/curl/separate_compilation.hpp>
#include <resil/json/separate_compilation.hpp>
#include <resil/http/separate_compilation.hpp>
