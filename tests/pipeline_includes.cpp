// A pipeline with no idempotency key needs no OS entropy header: pipeline.hpp
// (and context.hpp under it), and the policies a pipeline is made of, must not
// include the CSPRNG. Include nothing else before them here.
#include <resil/pipeline.hpp>
#include <resil/retry.hpp>
#include <resil/deadline_policy.hpp>
#include <resil/timeout_policy.hpp>
#include <resil/fallback.hpp>
#include <resil/circuit_breaker.hpp>
#include <resil/token_bucket.hpp>
#include <resil/concurrency_limit.hpp>

#ifdef RESIL_DETAIL_CSPRNG_INCLUDED
#error "a pipeline or policy header includes resil/detail/csprng.hpp; it must not (see resil/idempotency_key_type.hpp, resil/detail/fork_epoch.hpp)"
#endif

#include "catch.hpp"

TEST_CASE("pipeline.hpp: the key type is there without the generator, and jitter draws without it") {
    resil::retry_policy retry{{.max_attempts = 2, .backoff = resil::full_jitter{std::chrono::milliseconds{1}, std::chrono::milliseconds{2}}}};
    (void)retry;
    CHECK(&resil::detail::thread_jitter() == &resil::detail::thread_jitter());
    resil::context ctx;
    CHECK_FALSE(ctx.has_idempotency_key());
    const auto key = resil::idempotency_key::parse("0190b6c4-8f7e-7abc-8def-0123456789ab");
    REQUIRE(key);
    ctx.set_idempotency_key(*key);
    CHECK(ctx.safe_to_repeat());
    CHECK(ctx.has_idempotency_key());
}
