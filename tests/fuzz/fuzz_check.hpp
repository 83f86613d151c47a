// tests/fuzz/fuzz_check.hpp — what a harness does when a property fails:
// print it and abort, which libFuzzer records as a crash (and saves the
// input), and which fails the replay test under ctest.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#define FUZZ_CHECK(condition)                                                                      \
    do {                                                                                           \
        if (!(condition)) ::resil_fuzz::fail(#condition, __FILE__, __LINE__);                      \
    } while (false)

namespace resil_fuzz {

[[noreturn]] inline void fail(const char* what, const char* file, int line) {
    std::fprintf(stderr, "%s:%d: property failed: %s\n", file, line, what);
    std::abort();
}

/// The fuzzer's bytes as text.
inline std::string_view text_of(const std::uint8_t* data, std::size_t size) noexcept {
    return {reinterpret_cast<const char*>(data), size};
}

}  // namespace resil_fuzz
