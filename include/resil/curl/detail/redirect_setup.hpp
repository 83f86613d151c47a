// resil/curl/detail/redirect_setup.hpp — per request, whether libcurl
// follows redirects and to which schemes (resil/curl/transport.hpp,
// redirect_options). Each option is set only when it changed: no allocation,
// no setopt in steady state.
#pragma once

#include <curl/curl.h>

#include "../options.hpp"
#include "../request.hpp"
#include "../transport.hpp"
#include "handles.hpp"

namespace resil::curl::detail {

struct redirect_setup {
    // String literals: applied_options compares their addresses.
    static constexpr const char* any_web_scheme = "http,https";
    static constexpr const char* https_only = "https";

    /// `repeatable`: the request is idempotent or keyed. A request that may
    /// not be repeated never follows a redirect, which would send it again:
    /// the 3xx is its answer. One to an https:// URL follows https:// only,
    /// unless redirects.allow_https_to_http.
    template <class Setter>
    static void request_options(easy_state& s, const request& req, bool repeatable, const client_options& options,
                                Setter& set) {
        const auto& m = req.method();
        const bool follow = options.redirects.max > 0 && repeatable;
        auto& t = s.transfer;
        t.follows_redirects = follow;
        t.repeatable = repeatable;
        // libcurl turns these into a GET on a 303; any other method it keeps,
        // dropping the body, so that 303 is not followed (capture::may_send).
        t.see_other_as_get = m == "GET" || m == "POST" || (m == "HEAD" && !req.has_body());
        if (options.redirects.max == 0) return;  // FOLLOWLOCATION stays 0, set once

        auto& a = s.applied;
        if (const long on = follow ? 1L : 0L; on != a.follow_location) {
            set(CURLOPT_FOLLOWLOCATION, on, "CURLOPT_FOLLOWLOCATION");
            if (set.result == CURLE_OK) a.follow_location = on;
        }
        if (!follow) return;
        const bool https = starts_with_scheme(req.url(), "https://");
        const char* schemes = https && !options.redirects.allow_https_to_http ? https_only : any_web_scheme;
        if (schemes != a.redirect_protocols) {
            set(CURLOPT_REDIR_PROTOCOLS_STR, schemes, "CURLOPT_REDIR_PROTOCOLS_STR");
            if (set.result == CURLE_OK) a.redirect_protocols = schemes;
        }
    }
};

}  // namespace resil::curl::detail
