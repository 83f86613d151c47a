// resil::curl::classify: the verdict table and the server hints, on
// responses built by hand. No network.
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
