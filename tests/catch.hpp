// Catch2 v2 (Debian's 2.13) or v3, whichever the build found.
#pragma once
#if RESIL_CATCH_V3
#include <catch2/catch_approx.hpp>
#include <catch2/catch_test_macros.hpp>
using Catch::Approx;
#else
#include <catch2/catch.hpp>
#endif
