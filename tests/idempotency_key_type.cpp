// resil/idempotency_key_type.hpp: the key as a value — parsed, written, compared —
// without the generator (and its OS entropy) that makes new ones.
#include <resil/idempotency_key_type.hpp>

#ifdef RESIL_DETAIL_CSPRNG_INCLUDED
#error "resil/idempotency_key_type.hpp must not include the CSPRNG"
#endif

#include <string>

#include "catch.hpp"

using resil::idempotency_key;

TEST_CASE("idempotency key type: parse and write back, in any letter case, with its version") {
    const auto key = idempotency_key::parse("0190B6C4-8F7E-7ABC-8DEF-0123456789AB");
    REQUIRE(key);
    CHECK(key->to_string() == "0190b6c4-8f7e-7abc-8def-0123456789ab");
    CHECK(key->version() == 7);
    CHECK_FALSE(key->is_nil());
    CHECK(idempotency_key::parse(key->to_string()) == key);
    CHECK(idempotency_key{}.is_nil());
    CHECK(idempotency_key::header_name == "Idempotency-Key");
}

TEST_CASE("idempotency key type: what is not a UUID is refused") {
    for (const char* bad : {"", "not-a-key", "0190b6c4-8f7e-7abc-8def-0123456789a", "0190b6c4-8f7e-7abc-8def-0123456789abc",
                            "0190b6c48f7e7abc8def0123456789ab", "0190b6c4-8f7e-7abc-8def-0123456789ag",
                            "{0190b6c4-8f7e-7abc-8def-0123456789ab}"}) {
        CAPTURE(bad);
        CHECK_FALSE(idempotency_key::parse(bad));
    }
}
