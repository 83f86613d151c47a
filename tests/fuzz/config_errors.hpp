// tests/fuzz/config_errors.hpp — what the JSON harnesses check of every
// reader: the only exception is resil::json::config_error, its what() is
// "path: reason" (or the reason alone), and accepted options written back
// and read again give the same JSON text.
#pragma once

#include <resil/json.hpp>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include "fuzz_check.hpp"

namespace resil_fuzz {

inline void check_config_error(const resil::json::config_error& e) {
    FUZZ_CHECK(!e.reason().empty());
    FUZZ_CHECK(e.source().empty());  // text, not a file
    const std::string expected = e.path().empty() ? e.reason() : e.path() + ": " + e.reason();
    FUZZ_CHECK(expected == e.what());
}

[[noreturn]] inline void unexpected_exception(const char* where, const std::exception* e) {
    std::fprintf(stderr, "%s threw something other than config_error: %s\n", where, e ? e->what() : "(not a std::exception)");
    std::abort();
}

/// Runs `f`; config_error is checked and swallowed, anything else aborts.
template <class F>
bool only_config_errors(const char* where, F f) {
    try {
        f();
        return true;
    } catch (const resil::json::config_error& e) {
        check_config_error(e);
    } catch (const std::exception& e) {
        unexpected_exception(where, &e);
    } catch (...) {
        unexpected_exception(where, nullptr);
    }
    return false;
}

/// read<T> of `j`: accepted options, written and read again, write the same text.
template <class T>
void check_reader(const nlohmann::json& j) {
    namespace rj = resil::json;
    T value{};
    if (!only_config_errors("read<T>", [&] { value = rj::read<T>(j, "x"); })) return;
    const auto written = rj::write(value).dump();
    T again{};
    FUZZ_CHECK(only_config_errors("read<T> of written options", [&] { again = rj::read<T>(rj::parse(written), "x"); }));
    FUZZ_CHECK(rj::write(again).dump() == written);
}

}  // namespace resil_fuzz
