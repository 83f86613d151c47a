// resil/json/error.hpp: config_error's parts and its what().
#include <resil/json/error.hpp>

#include <stdexcept>
#include <string>

#include "catch.hpp"

namespace rj = resil::json;

TEST_CASE("json error: what() is [file: ][path: ]reason") {
    const rj::config_error bare({}, "cannot open the file");
    CHECK(std::string(bare.what()) == "cannot open the file");
    CHECK(bare.path().empty());
    CHECK(bare.source().empty());
    const rj::config_error at("retry.max_attempts", "must be in [1, 100], got 0");
    CHECK(std::string(at.what()) == "retry.max_attempts: must be in [1, 100], got 0");
    const rj::config_error in_file("retry.max_attempts", "must be in [1, 100], got 0", "triton.json");
    CHECK(std::string(in_file.what()) == "triton.json: retry.max_attempts: must be in [1, 100], got 0");
    CHECK(in_file.path() == "retry.max_attempts");
    CHECK(in_file.reason() == "must be in [1, 100], got 0");
    CHECK(in_file.source() == "triton.json");
    const rj::config_error document_in_file({}, "cannot read the file", "triton.json");
    CHECK(std::string(document_in_file.what()) == "triton.json: cannot read the file");
    const std::invalid_argument& as_std = in_file;  // one catch for policy and config errors
    CHECK(std::string(as_std.what()) == in_file.what());
}

TEST_CASE("json error: paths name keys, quoted when they are not identifiers, and indexes") {
    using rj::detail::join;
    CHECK(join("", "retry") == "retry");
    CHECK(join("retry", "max_attempts") == "retry.max_attempts");
    CHECK(join("retry", "max attempts") == R"(retry["max attempts"])");
    CHECK(join("", "1st") == R"(["1st"])");
    CHECK(join("", "") == R"([""])");
    CHECK(join("retry.retry_on", std::size_t{2}) == "retry.retry_on[2]");
}
