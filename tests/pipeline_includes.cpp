// A pipeline with no idempotency key needs no OS entropy header: pipeline.hpp
// (and context.hpp under it) must not include the CSPRNG. Include nothing
// else before it here.
#include <resil/pipeline.hpp>

#ifdef RESIL_DETAIL_CSPRNG_INCLUDED
#error "resil/pipeline.hpp includes resil/detail/csprng.hpp; it must not (see resil/idempotency_key_type.hpp)"
#endif

#include "catch.hpp"

TEST_CASE("pipeline.hpp: the key type is there without the generator") {
    resil::context ctx;
    CHECK_FALSE(ctx.has_idempotency_key());
    const auto key = resil::idempotency_key::parse("0190b6c4-8f7e-7abc-8def-0123456789ab");
    REQUIRE(key);
    ctx.set_idempotency_key(*key);
    CHECK(ctx.safe_to_repeat());
    CHECK(ctx.has_idempotency_key());
}
