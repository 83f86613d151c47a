// resil::curl::classify: the verdict table and the server hints, on
// responses built by hand. No network.
#include <resil/balancer.hpp>
#include <resil/curl.hpp>
#include <resil/pipeline.hpp>
#include <resil/retry.hpp>
#include <resil/testing/manual_clock.hpp>

#include <chrono>

#include "catch.hpp"

using namespace std::chrono_literals;
using resil::verdict;
using resil::curl::classify;
using resil::curl::response;
using resil::curl::transport_status;

namespace {
response status(int s, bool keyed = false, bool repeatable = false) {
    return response::from_parts(s).set_request_traits(keyed, repeatable);
}
response failure(transport_status t, bool sent, CURLcode code = CURLE_OK) {
    return response::from_failure(t, code, sent);
}
}  // namespace

TEST_CASE("curl classify: HTTP statuses") {
    for (int s : {200, 201, 204, 299, 301, 304, 399}) {
        INFO(s);
        CHECK(classify(status(s)).verdict == verdict::success);
    }
    for (int s : {408, 429, 503}) {
        INFO(s);
        CHECK(classify(status(s)).verdict == verdict::retryable);  // not acted on, whatever the method
    }
    for (int s : {500, 502, 504}) {
        INFO(s);
        CHECK(classify(status(s, false, true)).verdict == verdict::retryable);  // idempotent
        CHECK(classify(status(s, true, true)).verdict == verdict::retryable);   // keyed
        CHECK(classify(status(s, false, false)).verdict == verdict::ambiguous); // a bare POST: may have acted
    }
    for (int s : {400, 401, 403, 404, 405, 410, 413, 422, 501, 505, 511, 100, 600}) {
        INFO(s);
        CHECK(classify(status(s, true, true)).verdict == verdict::permanent);
    }
}

TEST_CASE("curl classify: 409 is retryable only on a keyed request") {
    CHECK(classify(status(409, true, true)).verdict == verdict::retryable);
    CHECK(classify(status(409, false, true)).verdict == verdict::permanent);
    CHECK(classify(status(409, false, false)).verdict == verdict::permanent);
}

TEST_CASE("curl classify: transport failures by what may have reached the server") {
    using T = transport_status;
    // Never sent: safe to repeat whatever the method.
    for (auto t : {T::deadline_exceeded, T::cancelled, T::connect_failed, T::connect_timeout, T::tls_handshake_failed,
                   T::read_timeout, T::total_timeout, T::connection_lost, T::protocol_error}) {
        INFO(resil::curl::to_string(t));
        CHECK(classify(failure(t, false)).verdict == verdict::retryable);
        CHECK(classify(failure(t, true)).verdict == verdict::ambiguous);
    }
    for (auto t : {T::invalid_request, T::body_too_large, T::tls_certificate_rejected, T::tls_handshake_refused}) {
        INFO(resil::curl::to_string(t));
        CHECK(classify(failure(t, false)).verdict == verdict::permanent);
        CHECK(classify(failure(t, true)).verdict == verdict::permanent);
    }
    CHECK(classify(failure(T::other_error, false)).verdict == verdict::permanent);
    CHECK(classify(failure(T::other_error, true)).verdict == verdict::ambiguous);
    // Being keyed does not change a transport verdict: the retry policy asks the context.
    CHECK(classify(failure(T::read_timeout, true).set_request_traits(true, true)).verdict == verdict::ambiguous);
}

TEST_CASE("curl classify: Retry-After and pushback become the hint, only on failures") {
    const auto ra = response::from_parts(429, {{"Retry-After", "3"}});
    CHECK(classify(ra) == resil::classification(verdict::retryable, {3s, false}));

    const auto longer_pushback = response::from_parts(503, {{"Retry-After", "1"}, {"grpc-retry-pushback-ms", "2500"}});
    CHECK(classify(longer_pushback).hint.retry_after == 2500ms);
    const auto shorter_pushback = response::from_parts(503, {{"Retry-After", "1"}, {"grpc-retry-pushback-ms", "20"}});
    CHECK(classify(shorter_pushback).hint.retry_after == 1s);

    const auto stop = response::from_parts(503, {{"grpc-retry-pushback-ms", "-1"}});
    CHECK(classify(stop).verdict == verdict::retryable);
    CHECK(classify(stop).hint.dont_retry);

    const auto fine = response::from_parts(200, {{"Retry-After", "3"}});
    CHECK(classify(fine) == resil::classification(verdict::success));
}

TEST_CASE("curl classify: found by ADL, so a pipeline needs no classifier argument") {
    resil::testing::manual_clock clock;
    const auto start = clock.now();
    int calls = 0;
    auto pipe = resil::pipeline(clock, resil::retry_policy{{.max_attempts = 3}});
    auto out = pipe([&] {
        ++calls;
        return calls == 1 ? response::from_parts(503, {{"Retry-After", "2"}}) : response::from_parts(200, {}, "ok");
    });
    CHECK(out.ok());
    CHECK(calls == 2);
    CHECK(out->body() == "ok");
    CHECK(clock.now() - start >= 2s);  // waited the server's Retry-After

    calls = 0;
    auto stopped = pipe([&] {
        ++calls;
        return response::from_parts(503, {{"grpc-retry-pushback-ms", "-1"}});
    });
    CHECK(calls == 1);
    CHECK(stopped.reason() == resil::reason::dont_retry);
}

TEST_CASE("curl classify: a transfer known never sent says so, for idempotency scopes") {
    CHECK(classify(failure(transport_status::connect_failed, false, CURLE_COULDNT_CONNECT)).never_sent);
    CHECK(classify(failure(transport_status::tls_handshake_failed, false, CURLE_SSL_CONNECT_ERROR)).never_sent);
    CHECK_FALSE(classify(failure(transport_status::connection_lost, true, CURLE_GOT_NOTHING)).never_sent);
    CHECK_FALSE(classify(failure(transport_status::read_timeout, true, CURLE_OPERATION_TIMEDOUT)).never_sent);
    CHECK_FALSE(classify(status(503)).never_sent);  // answered: the server received it
}

TEST_CASE("curl endpoint_failure: what counts towards ejection is Envoy's consecutive-5xx") {
    using resil::curl::endpoint_failure;
    // Every 5xx, 501, 505, 507 and 511 included.
    for (int s : {500, 501, 502, 503, 504, 505, 507, 511, 599}) {
        INFO(s);
        CHECK(endpoint_failure(status(s)));
    }
    // Any other answer says the endpoint answered: 408, 421 and 429 too.
    for (int s : {200, 204, 301, 400, 404, 408, 409, 421, 429, 499}) {
        INFO(s);
        CHECK_FALSE(endpoint_failure(status(s)));
    }
    // The endpoint's own failures to answer (Envoy counts them as 5xx) ...
    for (auto t : {transport_status::connect_failed, transport_status::connect_timeout,
                   transport_status::tls_handshake_failed, transport_status::tls_certificate_rejected,
                   transport_status::read_timeout, transport_status::total_timeout, transport_status::connection_lost,
                   transport_status::protocol_error, transport_status::first_byte_timeout,
                   transport_status::stream_interrupted, transport_status::other_error}) {
        INFO(resil::curl::to_string(t));
        CHECK(endpoint_failure(failure(t, true)));
    }
    // ... but not the caller's end, nor a request refused before it left.
    for (auto t : {transport_status::cancelled, transport_status::deadline_exceeded, transport_status::invalid_request,
                   transport_status::body_too_large, transport_status::headers_too_large}) {
        INFO(resil::curl::to_string(t));
        CHECK_FALSE(endpoint_failure(failure(t, true)));
    }
}

TEST_CASE("curl endpoint_failure through call_endpoint: five 429s eject nothing, five 501s eject") {
    resil::testing::manual_clock clock;
    resil::balancer lb{{{.address = "a:80"}, {.address = "b:80"}}, {.policy = resil::balancing_policy::round_robin}};
    auto call_on_a = [&](int answer) {
        resil::tried_endpoints tried;
        resil::basic_context<resil::testing::manual_clock> ctx{clock};
        for (int i = 0; i < 4; ++i) {
            auto out = resil::call_endpoint(lb, ctx, tried, [&](const resil::endpoint& ep) {
                return ep.address == "a:80" ? status(answer) : status(200);
            });
            if (out.has_value() && out.value().status() == answer) return;
        }
    };
    for (int i = 0; i < 5; ++i) call_on_a(429);
    CHECK(lb.metrics().ejections == 0);
    for (int i = 0; i < 5; ++i) call_on_a(501);
    CHECK(lb.metrics().ejections == 1);
}
