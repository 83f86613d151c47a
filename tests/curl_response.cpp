// resil/curl/response.hpp: responses built as a server or a failed transfer
// would, with the server's hints read once.
#include <resil/curl/classification.hpp>
#include <resil/curl/response.hpp>

#include <chrono>
#include <stdexcept>

#include "catch.hpp"

using namespace std::chrono_literals;
using resil::curl::response;
using resil::curl::transport_status;

TEST_CASE("curl response: from_parts reads Retry-After and pushback on failures only") {
    const auto busy = response::from_parts(503, {{"Retry-After", "7"}, {"grpc-retry-pushback-ms", "250"}}, "busy");
    CHECK(busy.completed());
    CHECK_FALSE(busy.ok());
    CHECK(busy.may_have_reached_server());
    CHECK(busy.retry_after() == std::optional<resil::duration>{7s});
    CHECK(busy.pushback() == std::optional<std::chrono::milliseconds>{250ms});
    CHECK(busy.header("retry-after") == "7");
    CHECK(busy.trailers().empty());

    const auto fine = response::from_parts(200, {{"Retry-After", "7"}}, "ok");
    CHECK(fine.ok());
    CHECK_FALSE(fine.retry_after());  // a 2xx is never retried: not read

    const auto garbage = response::from_parts(429, {{"Retry-After", "soon"}});
    CHECK_FALSE(garbage.retry_after());
}

TEST_CASE("curl response: bad parts are refused; a failure is built with what may have been sent") {
    CHECK_THROWS_AS(response::from_parts(99), std::invalid_argument);
    CHECK_THROWS_AS(response::from_parts(1000), std::invalid_argument);
    CHECK_THROWS_AS(response::from_parts(200, {{"Bad Name", "x"}}), std::invalid_argument);
    CHECK_THROWS_AS(response::from_parts(200, {{"X", "a\r\nb"}}), std::invalid_argument);
    CHECK_THROWS_AS(response::from_failure(transport_status::completed, CURLE_OK, true), std::invalid_argument);

    const auto lost = response::from_failure(transport_status::connection_lost, CURLE_RECV_ERROR, true);
    CHECK_FALSE(lost.completed());
    CHECK(lost.status() == 0);
    CHECK(lost.curl_code() == CURLE_RECV_ERROR);
    CHECK(resil::curl::classify(lost).verdict == resil::verdict::ambiguous);
    const auto keyed = response::from_failure(transport_status::connection_lost, CURLE_RECV_ERROR, true)
                           .set_request_traits(true, true);
    CHECK(keyed.carried_idempotency_key());
    CHECK(keyed.repeatable());
}

TEST_CASE("curl response: every transport status has a name") {
    for (int s = 0; s <= static_cast<int>(transport_status::tls_handshake_refused); ++s)
        CHECK(resil::curl::to_string(static_cast<transport_status>(s)) != "unknown");
    CHECK(resil::curl::to_string(transport_status::headers_too_large) == "headers_too_large");
}
