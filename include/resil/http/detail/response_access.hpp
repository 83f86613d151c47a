// resil/http/detail/response_access.hpp — a resil::http::response made from
// the outcome of a call through resil::curl: one reading, for
// resil::http::client and resil::http::dependency alike.
#pragma once

#include <cstdint>
#include <string>
#include <utility>

#include "../../curl/response.hpp"
#include "../../outcome.hpp"
#include "../response.hpp"

namespace resil::http::detail {

struct response_access {
    /// The last reply's parts, taken from `reply` (its body moved out; its
    /// header buffers stay, for the libcurl client to reuse).
    static void take_reply(response& r, curl::response& reply) {
        r.status_ = reply.status();
        r.transport_ = curl::to_string(reply.transport());
        r.headers_.clear();
        for (const auto& f : reply.headers()) r.headers_.emplace_back(std::string(f.name), std::string(f.value));
        r.rate_limit_ = reply.rate_limit();
        r.body_ = std::move(reply).body();
    }

    /// Takes the last reply's body out of `out`; the rest stays there.
    static response make(outcome<curl::response>& out, std::uint32_t attempts) {
        response r;
        r.reason_ = out.reason();
        r.attempts_ = attempts;
        if (out.has_value()) take_reply(r, *out);
        return r;
    }

    /// For a balanced call: the outer outcome's reason, the attempt's reply
    /// (when one came back) and the endpoint it came from.
    static response make(outcome<outcome<curl::response>>& out, std::uint32_t attempts, std::string endpoint) {
        response r;
        r.reason_ = out.reason();
        r.attempts_ = attempts;
        r.endpoint_ = std::move(endpoint);
        if (out.has_value() && out->has_value()) take_reply(r, **out);
        return r;
    }
};

}  // namespace resil::http::detail
