// resil/http/response.hpp — what a call of resil::http::client or
// resil::http::dependency came to: the reason, the last reply's status, body
// and header fields, how many attempts were made, which endpoint answered,
// how the transfer ended and the server's rate-limit reading.
//
//   auto r = pricing.get("/v1/prices/42");
//   if (!r) show_plan_b(r.reason());                   // "circuit_open", "retries_exhausted", ...
//   else if (auto etag = r.header("ETag")) cache(*etag, r.body());
//   if (r.rate_limit().exhausted()) slow_down(r.rate_limit().reset);
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "../rate_limit_fields.hpp"
#include "../reason.hpp"

namespace resil::http {

namespace detail {
struct response_access;
}  // namespace detail

/// One header line of a request.
struct header {
    std::string_view name;   ///< the field name (an HTTP token)
    std::string_view value;  ///< the field value
};

/// What a call came to: true when it succeeded (a 2xx within the policies);
/// otherwise reason() says why, and status(), body() and the header fields
/// hold the last reply if one arrived (the last 503 after retries ran out).
class response {
public:
    response() = default;

    /// True when the call succeeded (reason() is none).
    [[nodiscard]] explicit operator bool() const noexcept { return reason_ == resil::reason::none; }
    /// Why the call did not succeed; reason::none when it did.
    [[nodiscard]] resil::reason reason() const noexcept { return reason_; }
    /// The last reply's HTTP status; 0 when no reply arrived.
    [[nodiscard]] int status() const noexcept { return status_; }
    /// The last reply's body; empty when no reply arrived.
    [[nodiscard]] const std::string& body() const& noexcept { return body_; }
    /// The body, moved out of a response about to go.
    [[nodiscard]] std::string body() && noexcept { return static_cast<std::string&&>(body_); }
    /// The value of the last reply's first header field named `name` (any
    /// letter case), if it had one.
    [[nodiscard]] std::optional<std::string_view> header(std::string_view name) const noexcept {
        for (const auto& [n, v] : headers_)
            if (same_name(n, name)) return std::string_view{v};
        return std::nullopt;
    }
    /// Every header field of the last reply, in the order received.
    [[nodiscard]] const std::vector<std::pair<std::string, std::string>>& headers() const noexcept { return headers_; }
    /// Attempts made (transfers started); 0 when the call was refused before
    /// any (open circuit, no time left, no endpoint).
    [[nodiscard]] std::uint32_t attempts() const noexcept { return attempts_; }
    /// How the last attempt's transfer ended (resil::curl::transport_status
    /// by name: "completed", "connect_failed", "read_timeout", ...); empty
    /// when no attempt was made.
    [[nodiscard]] std::string_view transport() const noexcept { return transport_; }
    /// The address of the endpoint the last attempt went to (as configured,
    /// "https://pay-b.internal"); empty when no attempt was made, and for
    /// resil::http::client, whose calls take whole URLs.
    [[nodiscard]] const std::string& endpoint() const noexcept { return endpoint_; }
    /// The last reply's rate-limit fields (RateLimit, X-RateLimit-*, ...:
    /// resil/rate_limit_fields.hpp), resets measured from when it arrived;
    /// form == none when it had none.
    [[nodiscard]] const rate_limit_info& rate_limit() const noexcept { return rate_limit_; }

private:
    friend struct detail::response_access;

    static bool same_name(std::string_view a, std::string_view b) noexcept {
        if (a.size() != b.size()) return false;
        for (std::size_t i = 0; i < a.size(); ++i) {
            const auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; };
            if (lower(a[i]) != lower(b[i])) return false;
        }
        return true;
    }

    resil::reason reason_ = resil::reason::none;
    int status_ = 0;
    std::uint32_t attempts_ = 0;
    std::string_view transport_{};  // static text
    std::string body_{};
    std::vector<std::pair<std::string, std::string>> headers_{};
    std::string endpoint_{};
    rate_limit_info rate_limit_{};
};

}  // namespace resil::http
