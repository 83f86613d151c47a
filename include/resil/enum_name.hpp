// resil/enum_name.hpp — the text of one of resil's enumerators, as every
// `resil::to_string(e)` returns it: a std::string_view into static storage
// (free to copy and keep, usable in constant expressions) that also adds up
// with std::string and C strings and prints to a stream.
//
//   log("call failed: " + resil::to_string(out.reason()));   // std::string
//   std::cout << resil::to_string(breaker.state());           // "closed"
//   std::string_view v = resil::to_string(reason::shed);      // no copy
#pragma once

#include <iosfwd>
#include <string>
#include <string_view>

namespace resil {

/// An enumerator's name: a std::string_view (it is one, so it goes wherever
/// one goes: comparisons, std::string's constructors, `+=`, formatting), plus
/// the `+` with std::string and C strings the standard gives string_view only
/// from C++26 on. Its text lives in static storage: a copy never dangles.
class enum_name : public std::string_view {
public:
    constexpr enum_name() noexcept = default;
    /// From a literal or other text of static storage duration.
    constexpr enum_name(const char* text) noexcept : std::string_view(text) {}  // NOLINT: implicit by design

    /// The text as a std::string.
    [[nodiscard]] std::string str() const { return std::string(*this); }

    /// Concatenations with std::string, C strings and other names, as
    /// std::string's own operator+ does (what string_view lacks).
    ///@{
    friend std::string operator+(const std::string& a, enum_name b) { return a + std::string(b); }
    friend std::string operator+(std::string&& a, enum_name b) { return std::move(a.append(b)); }
    friend std::string operator+(enum_name a, const std::string& b) { return std::string(a) + b; }
    friend std::string operator+(const char* a, enum_name b) { return std::string(a) + std::string(b); }
    friend std::string operator+(enum_name a, const char* b) { return std::string(a) + b; }
    friend std::string operator+(enum_name a, enum_name b) { return std::string(a) + std::string(b); }
    ///@}

    /// Writes the name to a stream.
    template <class Char, class Traits>
    friend std::basic_ostream<Char, Traits>& operator<<(std::basic_ostream<Char, Traits>& os, enum_name n) {
        return os << static_cast<std::string_view>(n);
    }
};

}  // namespace resil
