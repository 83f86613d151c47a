// tests/support/redis_quota_dependency.hpp — a resil::http::dependency with
// a quota shared through Redis (dependency_options::shared_quota), for the
// tests of its blocking and Asio faces: the options, and the two limiters
// of two dependency objects built from them (as two processes would hold).
//
//   const auto o = resil_test::with_quota(s, redis, "pricing", 3);
//   dependency a{o}, b{o};
//   const auto [la, lb] = resil_test::shared_limiters(a, b);
#pragma once

#include <resil/http/dependency.hpp>
#include <resil/http/redis_quota.hpp>
#include <resil/redis/rate_limiter.hpp>

#include <chrono>
#include <cstdint>
#include <string>
#include <utility>

#include "../catch.hpp"
#include "fault_server.hpp"
#include "redis_server.hpp"

namespace resil_test {

/// A dependency on `s` whose calls each take one permit of a quota of
/// `burst` in `redis` under `key` that never refills during a test
/// (0.001/s); Redis's timeouts are generous (2 s): on a loaded machine Redis
/// still decides.
[[nodiscard]] inline resil::http::dependency_options with_quota(const fault_server& s, const redis_server& redis,
                                                                std::string key, std::int64_t burst) {
    resil::http::dependency_options o;
    o.name = "pricing";
    o.endpoints = {{.address = s.url("")}};
    o.retry.max_attempts = 1;
    o.shared_quota = resil::redis::rate_limiter_options{.rate = 0.001,
                                                        .burst = burst,
                                                        .port = redis.port(),
                                                        .key = std::move(key),
                                                        .connect_timeout = std::chrono::seconds{2},
                                                        .reply_timeout = std::chrono::seconds{2}};
    return o;
}

/// The Redis limiters of `a` and `b`, built from one shared_quota: both
/// there, one each, on one key (REQUIREd and CHECKed).
[[nodiscard]] inline std::pair<const resil::redis::rate_limiter*, const resil::redis::rate_limiter*> shared_limiters(
    const resil::http::dependency& a, const resil::http::dependency& b) {
    const auto* la = resil::http::shared_quota_limiter(a);
    const auto* lb = resil::http::shared_quota_limiter(b);
    REQUIRE(la != nullptr);
    REQUIRE(lb != nullptr);
    CHECK(la != lb);
    CHECK(la->redis_key() == lb->redis_key());
    return {la, lb};
}

}  // namespace resil_test
