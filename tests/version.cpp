// resil/version.hpp: the version in one place, as macros and as a number.
#include <resil/version.hpp>

#include "catch.hpp"

TEST_CASE("version: the number and the macros agree") {
    STATIC_REQUIRE(resil::version == RESIL_VERSION_MAJOR * 10000 + RESIL_VERSION_MINOR * 100 + RESIL_VERSION_PATCH);
    STATIC_REQUIRE(RESIL_VERSION_MINOR < 100);
    STATIC_REQUIRE(RESIL_VERSION_PATCH < 100);
    CHECK(resil::version > 0);
}
