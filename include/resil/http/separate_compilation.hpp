// resil/http/separate_compilation.hpp — the one translation unit of a
// RESIL_SEPARATE_COMPILATION program that uses resil::http::load_client
// (resil/http/config_file.hpp): it compiles the core, resil::curl (and
// resil::http::client with it) and resil::json, then load_client. A program
// that uses resil::http::client without a configuration file needs
// <resil/curl/separate_compilation.hpp> only. See docs/compile_time.md.
#pragma once

#include "../curl/separate_compilation.hpp"
#include "../json/separate_compilation.hpp"
#include "config_file.hpp"
