// resil/curl/separate_compilation.hpp — the one translation unit that
// compiles resil's and resil::curl's out-of-line functions when a program
// defines RESIL_SEPARATE_COMPILATION (see resil/separate_compilation.hpp).
#pragma once

#include "../separate_compilation.hpp"
#include "../curl.hpp"
#include "../http.hpp"  // resil::http::client, the façade over resil::curl
#include "../http/dependency.hpp"  // resil::http::dependency, one per dependency

// A client's attempts on resil's own clocks. A context on a clock of your own
// needs the header-only mode (the attempt's definition is compiled only here).
namespace resil::curl {
template void client::attempt(detail::handles&, const request&, basic_context<resil::steady_clock>&, response&);
template void client::attempt(detail::handles&, const request&, basic_context<resil::coarse_steady_clock>&,
                              response&);
template void client::attempt(detail::handles&, const request&, basic_context<resil::testing::manual_clock>&,
                              response&);
}  // namespace resil::curl
