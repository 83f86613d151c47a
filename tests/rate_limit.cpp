#include <resil/rate_limit.hpp>

#include <chrono>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "catch.hpp"

using namespace std::chrono_literals;
using resil::duration;
using resil::pushback_source;
using resil::rate_limit_form;
using std::chrono::system_clock;

namespace {

// 2024-06-01 00:00:00 UTC plus 250 ms: a moment with a fraction, so
// rounding shows.
constexpr std::int64_t now_s = 1'717'200'000;
const system_clock::time_point now =
    system_clock::time_point{} + std::chrono::duration_cast<system_clock::duration>(std::chrono::seconds{now_s} + 250ms);

// Header fields as a server sent them; the lookup finds the first of a name
// in any letter case, or the line of that name at an index, as
// resil::curl::response::header does.
struct fields {
    std::vector<std::pair<std::string, std::string>> list;
    fields(std::initializer_list<std::pair<std::string, std::string>> l) : list(l) {}

    std::optional<std::string_view> operator()(std::string_view name, std::size_t index = 0) const {
        for (const auto& [n, v] : list) {
            if (n.size() != name.size()) continue;
            bool same = true;
            for (std::size_t i = 0; i < n.size(); ++i) {
                const auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; };
                same = same && lower(n[i]) == lower(name[i]);
            }
            if (same && index-- == 0) return std::string_view(v);
        }
        return std::nullopt;
    }
};

// The same fields through a lookup that finds only the first line of a name.
struct first_lines {
    const fields* f;
    std::optional<std::string_view> operator()(std::string_view name) const { return (*f)(name); }
};

resil::rate_limit_info read(const fields& f) { return resil::read_rate_limit(f, now); }
std::optional<resil::pushback> push(const fields& f, resil::pushback_options o = {}) {
    return resil::pushback_from(f, now, o);
}

constexpr duration cap = resil::retry_after_max;

}  // namespace

// Everything is usable at compile time.
static_assert(resil::parse_reset_duration("6m0s") == duration{6min});
static_assert(resil::parse_retry_after_ms("30") == duration{30ms});
static_assert(resil::header_lookup<fields>);
static_assert(resil::header_lookup_lines<fields>);
static_assert(resil::header_lookup<first_lines>);
static_assert(!resil::header_lookup_lines<first_lines>);
static_assert(!resil::header_lookup<int>);

TEST_CASE("rate limit: the IETF RateLimit and RateLimit-Policy fields") {
    auto q = read({{"RateLimit", R"("default";r=50;t=30)"}, {"RateLimit-Policy", R"("default";q=100;w=60)"}});
    CHECK(q.form == rate_limit_form::ietf);
    CHECK(q.limit == 100);
    CHECK(q.remaining == 50);
    CHECK(q.reset == duration{30s});
    CHECK(q.window == duration{60s});
    CHECK_FALSE(q.exhausted());
    CHECK(q.present());

    // Without t there is no reset; without a policy, no limit or window.
    q = read({{"ratelimit", R"("default";r=0)"}});
    CHECK(q.form == rate_limit_form::ietf);
    CHECK(q.remaining == 0);
    CHECK(q.exhausted());
    CHECK_FALSE(q.reset);
    CHECK_FALSE(q.limit);
    CHECK_FALSE(q.window);

    // The draft's examples: a partition key, a quota unit, other parameters.
    q = read({{"RateLimit", R"("default";r=300000000;t=60;pk=:QXBwLTk5OQ==:)"},
              {"RateLimit-Policy", R"("peruser";q=65535;qu="content-bytes";w=10;pk=:sdfjLJUOUH==:, "default";q=1000000000;w=60;acme-burst=?1)"}});
    CHECK(q.remaining == 300'000'000);
    CHECK(q.reset == duration{60s});
    CHECK(q.limit == 1'000'000'000);  // the policy named by the service limit
    CHECK(q.window == duration{60s});

    // A policy of another name says nothing about this limit.
    q = read({{"RateLimit", R"("burst";r=5;t=1)"}, {"RateLimit-Policy", R"("daily";q=1000;w=86400)"}});
    CHECK(q.remaining == 5);
    CHECK_FALSE(q.limit);
    CHECK_FALSE(q.window);
}

TEST_CASE("rate limit: several service limits, the most restrictive one wins") {
    // The slowest pace (remaining per second to the reset): 7 in 3000 s
    // binds more than 40 in 20 s...
    auto q = read({{"RateLimit", R"("permin";r=40;t=20, "perhr";r=7;t=3000)"}});
    CHECK(q.remaining == 7);
    CHECK(q.reset == duration{3000s});
    // ...even with more left: 50 in an hour is slower than 10 in a second.
    q = read({{"RateLimit", R"("persec";r=10;t=1, "perhr";r=50;t=3600)"}});
    CHECK(q.remaining == 50);
    CHECK(q.reset == duration{3600s});
    // An exhausted one before any other, and among exhausted ones the
    // later reset: all must be restored.
    q = read({{"RateLimit", R"("a";r=3;t=1, "b";r=0;t=5, "c";r=0;t=90, "d";r=0;t=10)"}});
    CHECK(q.remaining == 0);
    CHECK(q.reset == duration{90s});
    q = read({{"RateLimit", R"("a";r=0, "b";r=0;t=5)"}});
    CHECK(q.reset == duration{5s});  // a known reset over an unknown one
    // One that says a pace (a reset after now) over one that does not,
    // which are compared by what remains.
    q = read({{"RateLimit", R"("a";r=3, "b";r=5;t=60)"}});
    CHECK(q.remaining == 5);
    q = read({{"RateLimit", R"("a";r=5;t=0, "b";r=30;t=60)"}});  // a: restored now
    CHECK(q.remaining == 30);
    q = read({{"RateLimit", R"("a";r=5, "b";r=3;t=0, "c";r=4)"}});
    CHECK(q.remaining == 3);
    // The same pace (2 in 4 s, 1 in 2 s): the first stays; its policy is
    // matched by name.
    q = read({{"RateLimit", R"("a";r=2;t=4,"b";r=1;t=2)"}, {"RateLimit-Policy", R"("b";q=9,"a";q=4;w=3)"}});
    CHECK(q.reset == duration{4s});
    CHECK(q.limit == 4);
    CHECK(q.window == duration{3s});
    // 2 left for 9 s binds more than 2 left for 1 s.
    q = read({{"RateLimit", R"("a";r=2;t=1,"b";r=2;t=9)"}, {"RateLimit-Policy", R"("b";q=9,"a";q=4;w=3)"}});
    CHECK(q.reset == duration{9s});
    CHECK(q.limit == 9);
    CHECK_FALSE(q.window);
    // Paces compared exactly, where a 64-bit product would overflow: the
    // second is 2e-4 a second slower (465,661.28752 against 465,661.28774)
    // with one more left.
    q = read({{"RateLimit", R"("a";r=999999999999998;t=2147483646, "b";r=999999999999999;t=2147483647)"}});
    CHECK(q.remaining == 999'999'999'999'999);
    CHECK(resil::detail::product_less(3, 5, 4, 4));
    CHECK_FALSE(resil::detail::product_less(4, 4, 2, 8));
    CHECK(resil::detail::product_less(~0ULL, ~0ULL - 1, ~0ULL, ~0ULL));
    CHECK_FALSE(resil::detail::product_less(~0ULL, ~0ULL, ~0ULL, ~0ULL - 1));
    CHECK(resil::detail::product_less(1ULL << 32, 1ULL << 32, (1ULL << 32) + 1, 1ULL << 32));
}

TEST_CASE("rate limit: malformed RateLimit fields are ignored, never guessed") {
    const char* const malformed[] = {
        "",                                 // empty
        "   ",                              // blank
        R"("default";r=-1;t=30)",           // negative remaining
        R"("default";r=5;t=-30)",           // negative window
        R"("default";t=30)",                // r is required
        R"("default";r=abc;t=30)",          // a token where an integer belongs
        R"("default";r=5.5;t=30)",          // a decimal
        R"("default";r=5;t=1.5)",           // a decimal
        R"("default";r="5")",               // a string
        R"("default";r)",                   // a bare key is the Boolean true
        R"("default";r=1234567890123456)",  // 16 digits: over the Structured Field integer
        R"(default;r=5;t=30)",              // the policy's name must be a String
        R"(5;r=5)",                         // or an integer
        R"(("a" "b");r=5)",                 // an inner list is no service limit
        R"("default";r=5;t=30,)",           // a trailing comma
        R"("default";r=5;t=30,,"x";r=1)",   // an empty member
        R"("default";r=5 t=30)",            // no semicolon
        R"("default"; r=5;R=30)",           // an uppercase key
        R"("default";r=5;t=30 junk)",       // trailing bytes
        R"("default;r=5)",                  // an unterminated string
        R"("de\fault";r=5)",                // a bad escape
        R"("default";r=5;pk=:abc)",         // an unterminated byte sequence
        R"("default";r=5;pk=:a*c:)",        // not base64
        R"("default";r=5;x=?2)",            // not a Boolean
        R"("default";r=5;x=%"%ZZ")",        // a bad display string escape
        "r=50, t=30",                       // a dictionary without draft 07's limit and reset
        "remaining=0, reset=5",             // draft 07: limit is required
        "limit=100, remaining=0",           // draft 07: reset is required
        "limit=100, remaining=-1, reset=5", // negative
        "limit=100, remaining=0, reset=1.5",// a decimal
        "limit=(100 50), reset=5",          // an inner list where an integer belongs
        "limit=100, reset",                 // a bare key is the Boolean true
        "limit=100, reset=\"5\"",           // a string
        "Limit=100, reset=5",               // an uppercase key
        "limit=100; reset=5",               // a semicolon starts parameters: no reset
        "limit=100, remaining=0, reset=5,", // a trailing comma
        R"("d";r=0;t=5, limit=100, reset=5)", // the two forms mixed in one line
    };
    for (const char* value : malformed) {
        INFO(value);
        const auto q = read({{"RateLimit", value}});
        CHECK(q.form == rate_limit_form::none);
        CHECK(q == resil::rate_limit_info{});
        CHECK_FALSE(push({{"RateLimit", value}}));
    }

    // Well formed Structured Fields of every kind, in parameters nobody reads.
    auto q = read({{"RateLimit", R"("default";r=0;t=2;a=1.5;b=?0;c=@1717200000;d=%"caf%c3%a9";e=tok/en:x;f="q\"\\";g)"}});
    CHECK(q.remaining == 0);
    CHECK(q.reset == duration{2s});
    // Optional white space around members and after semicolons.
    q = read({{"RateLimit", " \"a\";r=1;  t=2 ,\t\"b\";r=3 "}});
    CHECK(q.remaining == 1);
    CHECK(q.reset == duration{2s});

    // RFC 9651 §4.2.3.2: a parameter given twice keeps its last value.
    q = read({{"RateLimit", R"("default";r=9;t=30;r=0)"}});
    CHECK(q.remaining == 0);
    CHECK(q.reset == duration{30s});

    // A malformed policy is ignored as a whole; the limit still counts.
    for (const char* policy : {R"("default";w=60)", R"("default";q=-1)", R"("default";q=10;w=0)",
                               R"(default;q=10)", R"("default";q=10,)", R"("default";q=10;w=1.5)"}) {
        INFO(policy);
        q = read({{"RateLimit", R"("default";r=4;t=2)"}, {"RateLimit-Policy", policy}});
        CHECK(q.form == rate_limit_form::ietf);
        CHECK(q.remaining == 4);
        CHECK_FALSE(q.limit);
        CHECK_FALSE(q.window);
    }

    // A malformed RateLimit field lets the next form speak.
    q = read({{"RateLimit", "garbage"}, {"X-RateLimit-Remaining", "3"}});
    CHECK(q.form == rate_limit_form::x_ratelimit);
    CHECK(q.remaining == 3);
}

TEST_CASE("rate limit: draft 07's RateLimit dictionary and RateLimit-Policy (express-rate-limit)") {
    // express-rate-limit with standardHeaders: 'draft-7' (source/headers.ts,
    // setDraft7Headers) sends exactly these two fields; the shapes are
    // draft-ietf-httpapi-ratelimit-headers-07, section 3.
    auto q = read({{"RateLimit-Policy", "100;w=60"}, {"RateLimit", "limit=100, remaining=0, reset=5"}});
    CHECK(q.form == rate_limit_form::ietf_dictionary);
    CHECK(q.limit == 100);
    CHECK(q.remaining == 0);
    CHECK(q.exhausted());
    CHECK(q.reset == duration{5s});
    CHECK(q.window == duration{60s});
    CHECK(push({{"RateLimit", "limit=100, remaining=0, reset=5"}}) ==
          resil::pushback{duration{5s}, pushback_source::quota_reset});

    // The draft's examples: several policies, the one with the expiring
    // limit's quota gives the window; remaining is optional.
    q = read({{"RateLimit", "limit=50, remaining=25, reset=7"},
              {"RateLimit-Policy", "10;w=1, 50;w=60, 1000;w=3600, 5000;w=86400"}});
    CHECK(q.remaining == 25);
    CHECK(q.window == duration{60s});
    q = read({{"RateLimit", "limit=10, reset=7"}, {"RateLimit-Policy", "10;w=1;burst=1000, 1000;w=3600"}});
    CHECK(q.form == rate_limit_form::ietf_dictionary);
    CHECK(q.limit == 10);
    CHECK_FALSE(q.remaining);
    CHECK_FALSE(q.exhausted());
    CHECK(q.reset == duration{7s});
    CHECK(q.window == duration{1s});
    // No policy of that quota, or a malformed policy field: no window.
    CHECK_FALSE(read({{"RateLimit", "limit=10, reset=7"}, {"RateLimit-Policy", "20;w=1"}}).window);
    for (const char* policy : {"10", "10;w=0", "10;w=1.5", "10;w=1,", R"("default";q=10;w=1)", "-10;w=1"}) {
        INFO(policy);
        q = read({{"RateLimit", "limit=10, remaining=3, reset=7"}, {"RateLimit-Policy", policy}});
        CHECK(q.remaining == 3);
        CHECK_FALSE(q.window);
    }

    // Dictionary syntax: any order, OWS, parameters and other keys ignored,
    // an inner list or a Boolean under another key, a key given twice keeps
    // its last value (RFC 9651 §4.2.2).
    q = read({{"RateLimit", " reset=30;x=1 ,\tremaining=4, acme-burst=?1, limit=9, pk=:QQ==:, w=(1 2);a, flag "}});
    CHECK(q.limit == 9);
    CHECK(q.remaining == 4);
    CHECK(q.reset == duration{30s});
    q = read({{"RateLimit", "limit=9, remaining=4, reset=30, remaining=0"}});
    CHECK(q.remaining == 0);
    // The draft's reset is delay-seconds only, capped as every wait is.
    CHECK(read({{"RateLimit", "limit=1, remaining=0, reset=1717200060"}}).reset == duration{1'717'200'060s});
    CHECK(read({{"RateLimit", "limit=1, remaining=0, reset=999999999999999"}}).reset == cap);

    // The old separate fields are not this form's: the dictionary wins only
    // by being the more restrictive.
    q = read({{"RateLimit", "limit=100, remaining=0, reset=5"}, {"RateLimit-Remaining", "40"}});
    CHECK(q.form == rate_limit_form::ietf_dictionary);
}

TEST_CASE("rate limit: a RateLimit field on several lines, the most restrictive member of all") {
    // express-rate-limit appends one RateLimit line per limiter in its
    // 'draft-8' mode (source/headers.ts, setDraft8Headers: response.append),
    // with a space after each semicolon.
    const fields two_limiters{{"RateLimit-Policy", R"("per-minute"; q=100; w=60; pk=:ZjE2ZDg3YmQ5MzFk:)"},
                              {"RateLimit", R"("per-minute"; r=99; t=60)"},
                              {"RateLimit-Policy", R"("per-day"; q=1000; w=86400; pk=:ZjE2ZDg3YmQ5MzFk:)"},
                              {"RateLimit", R"("per-day"; r=0; t=43200)"}};
    auto q = read(two_limiters);
    CHECK(q.form == rate_limit_form::ietf);
    CHECK(q.remaining == 0);
    CHECK(q.reset == duration{43200s});
    CHECK(q.limit == 1000);  // the policy found on the second line
    CHECK(q.window == duration{86400s});
    CHECK(push(two_limiters) == resil::pushback{duration{43200s}, pushback_source::quota_reset});
    // A lookup that finds only the first line reads the first limiter alone.
    q = resil::read_rate_limit(first_lines{&two_limiters}, now);
    CHECK(q.remaining == 99);
    CHECK(q.limit == 100);
    CHECK_FALSE(resil::pushback_from(first_lines{&two_limiters}, now));

    // Lines of either draft's form, each read by its own syntax.
    q = read({{"RateLimit", "limit=10, remaining=0, reset=20"}, {"RateLimit", R"("daily";r=0;t=600)"}});
    CHECK(q.form == rate_limit_form::ietf);
    CHECK(q.reset == duration{600s});
    q = read({{"RateLimit", R"("a";r=5;t=10, "b";r=3;t=10)"}, {"RateLimit", "limit=10, remaining=1, reset=10"}});
    CHECK(q.form == rate_limit_form::ietf_dictionary);
    CHECK(q.remaining == 1);

    // One malformed line and the field is ignored whole, as one malformed
    // list member is.
    q = read({{"RateLimit", R"("a";r=0;t=5)"}, {"RateLimit", "garbage"}, {"X-RateLimit-Remaining", "7"}});
    CHECK(q.form == rate_limit_form::x_ratelimit);
    CHECK(q.remaining == 7);
    // A policy field with one malformed line gives no limit.
    q = read({{"RateLimit", R"("a";r=1;t=5)"}, {"RateLimit-Policy", R"("a";q=10)"}, {"RateLimit-Policy", "junk"}});
    CHECK(q.remaining == 1);
    CHECK_FALSE(q.limit);

    // At most rate_limit_max_lines lines are read.
    fields many{};
    for (std::size_t i = 0; i < resil::rate_limit_max_lines; ++i) many.list.emplace_back("RateLimit", R"("x";r=9;t=9)");
    many.list.emplace_back("RateLimit", R"("late";r=0;t=9)");
    CHECK(read(many).remaining == 9);
    many.list.erase(many.list.begin());
    CHECK(read(many).remaining == 0);
}

TEST_CASE("rate limit: the older drafts' RateLimit-Limit, -Remaining and -Reset") {
    auto q = read({{"RateLimit-Limit", "100"}, {"RateLimit-Remaining", "0"}, {"RateLimit-Reset", "30"}});
    CHECK(q.form == rate_limit_form::ietf_legacy);
    CHECK(q.limit == 100);
    CHECK(q.remaining == 0);
    CHECK(q.reset == duration{30s});
    CHECK(q.exhausted());

    // Draft 00's limit with its quota policies; parameters allowed.
    q = read({{"RateLimit-Limit", "10, 10;w=1, 50;w=60"}, {"RateLimit-Remaining", "9;x=1"}});
    CHECK(q.limit == 10);
    CHECK(q.remaining == 9);
    CHECK_FALSE(q.reset);

    // express-rate-limit's 'draft-6' mode (setDraft6Headers) adds the
    // policy of drafts 03 to 06: its window is the policy of the same quota.
    q = read({{"RateLimit-Policy", "100;w=60"}, {"RateLimit-Limit", "100"}, {"RateLimit-Remaining", "99"},
              {"RateLimit-Reset", "60"}});
    CHECK(q.form == rate_limit_form::ietf_legacy);
    CHECK(q.window == duration{60s});
    CHECK_FALSE(read({{"RateLimit-Policy", "100;w=60"}, {"RateLimit-Remaining", "99"}}).window);  // no limit to match

    // GitLab sends Unix time in RateLimit-Reset: the reset heuristic reads it.
    q = read({{"RateLimit-Remaining", "0"}, {"RateLimit-Reset", std::to_string(now_s + 60)}});
    CHECK(q.reset == duration{60s});

    // Each malformed field is ignored by itself.
    q = read({{"RateLimit-Limit", "-5"}, {"RateLimit-Remaining", "1.5"}, {"RateLimit-Reset", "7"}});
    CHECK(q.form == rate_limit_form::ietf_legacy);
    CHECK_FALSE(q.limit);
    CHECK_FALSE(q.remaining);
    CHECK(q.reset == duration{7s});
    for (const char* bad : {"", "abc", "-1", "1,", "5 5", "1234567890123456", "\"5\"", "?1"}) {
        INFO(bad);
        CHECK_FALSE(read({{"RateLimit-Remaining", bad}}).present());
        CHECK_FALSE(read({{"RateLimit-Reset", bad}}).present());
    }
    CHECK_FALSE(read({{"RateLimit-Limit", "a, 10"}}).present());    // the first member must be the limit
    CHECK_FALSE(read({{"RateLimit-Limit", "10, 10;w=1,"}}).present());
    CHECK_FALSE(read({{"RateLimit-Remaining", "5, 6"}}).present());  // one item, not a list
}

TEST_CASE("rate limit: X-RateLimit-* and the reset heuristic") {
    // GitHub: Unix seconds.
    auto q = read({{"X-RateLimit-Limit", "5000"}, {"X-RateLimit-Remaining", "0"},
                   {"X-RateLimit-Reset", std::to_string(now_s + 120)}});
    CHECK(q.form == rate_limit_form::x_ratelimit);
    CHECK(q.limit == 5000);
    CHECK(q.remaining == 0);
    // now is 250 ms into its second: whole seconds are rounded up, as for
    // Retry-After's HTTP-date, so the wait never ends before the reset.
    CHECK(q.reset == duration{120s});

    const auto reset_of = [](std::string value) { return resil::parse_rate_limit_reset(value, now); };
    // Below 10^9: delay-seconds.
    CHECK(reset_of("0") == duration::zero());
    CHECK(reset_of("30") == duration{30s});
    CHECK(reset_of("999999999") == duration{999'999'999s});
    CHECK(reset_of("2.5") == duration{2500ms});
    // From 10^9: seconds since the epoch; a past one is zero.
    CHECK(reset_of("1000000000") == duration::zero());
    CHECK(reset_of(std::to_string(now_s)) == duration::zero());
    CHECK(reset_of(std::to_string(now_s + 1)) == duration{1s});
    CHECK(reset_of(std::to_string(now_s + 1) + ".5") == duration{1250ms});  // Discord's fractions: exact
    CHECK(reset_of("2000000000") == duration{std::chrono::seconds{2'000'000'000 - now_s}});
    CHECK(reset_of("9999999999") == cap);  // 2286: further than retry_after_max
    // From 10^12: milliseconds since the epoch.
    CHECK(reset_of(std::to_string(now_s * 1000 + 250)) == duration::zero());
    CHECK(reset_of(std::to_string(now_s * 1000 + 290)) == duration{40ms});
    CHECK(reset_of(std::to_string(now_s * 1000 + 290) + ".5") == duration{40500us});
    CHECK(reset_of(std::to_string(now_s * 1000 - 5000)) == duration::zero());
    // Absurd values are capped, however many digits.
    CHECK(reset_of("999999999999999") == cap);
    CHECK(reset_of(std::string(400, '9')) == cap);
    CHECK(reset_of("00000000000000000000000030") == duration{30s});  // leading zeros: still 30
    // Malformed: ignored.
    for (const char* bad : {"", " ", "-1", "+5", "1e9", "0x10", "1.", ".5", "1.2.3", "12 34", "soon",
                            "Sun, 06 Nov 1994 08:49:37 GMT"}) {
        INFO(bad);
        CHECK_FALSE(reset_of(bad));
    }
    CHECK(reset_of(" 30\t") == duration{30s});  // OWS around is fine

    q = read({{"x-ratelimit-limit", "abc"}, {"x-ratelimit-remaining", "-1"}, {"x-ratelimit-reset", "-3"}});
    CHECK_FALSE(q.present());
    q = read({{"X-RateLimit-Remaining", "99999999999999999999999"}});
    CHECK(q.remaining == resil::rate_limit_count_max);  // saturated
}

TEST_CASE("rate limit: Reddit's fractional remaining") {
    // Reddit sends X-Ratelimit-Used, -Remaining (a float: "599.0") and -Reset
    // (seconds to the end of its 10-minute window: r/redditdev, "Formal
    // ratelimiting headers"); prawcore reads the remaining as
    // int(float(value)). Rounded down: less than one request left is none.
    auto q = read({{"X-Ratelimit-Used", "1"}, {"X-Ratelimit-Remaining", "599.0"}, {"X-Ratelimit-Reset", "600"}});
    CHECK(q.form == rate_limit_form::x_ratelimit);
    CHECK(q.remaining == 599);
    CHECK(q.reset == duration{600s});
    q = read({{"X-Ratelimit-Used", "600"}, {"X-Ratelimit-Remaining", "0.0"}, {"X-Ratelimit-Reset", "208"}});
    CHECK(q.remaining == 0);
    CHECK(q.exhausted());
    CHECK(push({{"X-Ratelimit-Remaining", "0.0"}, {"X-Ratelimit-Reset", "208"}}) ==
          resil::pushback{duration{208s}, pushback_source::quota_reset});
    CHECK(read({{"X-Ratelimit-Remaining", "0.75"}}).remaining == 0);
    CHECK(read({{"X-Ratelimit-Remaining", "12.999"}}).remaining == 12);
    CHECK(read({{"X-RateLimit-Limit", "5000.0"}}).limit == 5000);
    CHECK(read({{"X-Ratelimit-Remaining", "99999999999999999999.5"}}).remaining == resil::rate_limit_count_max);
    for (const char* bad : {"1.", ".5", "1.2.3", "1,5", "-0.0", "+1.0", "1e3", "0x1", "1 .0", "1.0 5"}) {
        INFO(bad);
        CHECK_FALSE(read({{"X-Ratelimit-Remaining", bad}}).present());
    }
}

TEST_CASE("rate limit: X's x-rate-limit-* fields") {
    // docs.x.com, "Rate limits": "x-rate-limit-limit: 900",
    // "x-rate-limit-remaining: 847", "x-rate-limit-reset: 1705420800", the
    // reset a Unix timestamp.
    auto q = read({{"x-rate-limit-limit", "900"}, {"x-rate-limit-remaining", "847"},
                   {"x-rate-limit-reset", std::to_string(now_s + 900)}});
    CHECK(q.form == rate_limit_form::x_rate_limit);
    CHECK(q.limit == 900);
    CHECK(q.remaining == 847);
    CHECK(q.reset == duration{900s});
    q = read({{"x-rate-limit-limit", "900"}, {"x-rate-limit-remaining", "0"},
              {"x-rate-limit-reset", std::to_string(now_s + 61)}});
    CHECK(q.exhausted());
    CHECK(push({{"x-rate-limit-remaining", "0"}, {"x-rate-limit-reset", std::to_string(now_s + 61)}}) ==
          resil::pushback{duration{61s}, pushback_source::quota_reset});
    // Any letter case, the heuristic for the reset, malformed values ignored.
    CHECK(read({{"X-Rate-Limit-Remaining", "3"}, {"X-Rate-Limit-Reset", "30"}}).reset == duration{30s});
    CHECK_FALSE(read({{"x-rate-limit-remaining", "-1"}, {"x-rate-limit-reset", "soon"}}).present());
}

TEST_CASE("rate limit: Anthropic's anthropic-ratelimit-* fields, resets in RFC 3339") {
    // Headers of one api.anthropic.com/v1/messages response (recorded in
    // tidyllm's test fixtures; the names and the RFC 3339 reset as
    // Anthropic's "Rate limits" page documents them), moved to the test's
    // `now`, 2024-06-01T00:00:00.25Z.
    const fields fresh{{"anthropic-ratelimit-input-tokens-limit", "80000"},
                       {"anthropic-ratelimit-input-tokens-remaining", "80000"},
                       {"anthropic-ratelimit-input-tokens-reset", "2024-06-01T00:00:59Z"},
                       {"anthropic-ratelimit-output-tokens-limit", "16000"},
                       {"anthropic-ratelimit-output-tokens-remaining", "16000"},
                       {"anthropic-ratelimit-output-tokens-reset", "2024-06-01T00:01:00Z"},
                       {"anthropic-ratelimit-requests-limit", "1000"},
                       {"anthropic-ratelimit-requests-remaining", "999"},
                       {"anthropic-ratelimit-requests-reset", "2024-06-01T00:00:59Z"},
                       {"anthropic-ratelimit-tokens-limit", "96000"},
                       {"anthropic-ratelimit-tokens-remaining", "96000"},
                       {"anthropic-ratelimit-tokens-reset", "2024-06-01T00:00:59Z"}};
    auto q = read(fresh);
    CHECK(q.form == rate_limit_form::anthropic);
    CHECK(q.limit == 1000);  // 999 requests in 59 s: the slowest pace of the four
    CHECK(q.remaining == 999);
    CHECK(q.reset == duration{59s});  // whole seconds: rounded up from 58.75 s
    CHECK_FALSE(push(fresh));

    // Output tokens spent: that quota, until its reset.
    q = read({{"anthropic-ratelimit-requests-remaining", "998"},
              {"anthropic-ratelimit-requests-reset", "2024-06-01T00:00:59Z"},
              {"anthropic-ratelimit-output-tokens-limit", "16000"},
              {"anthropic-ratelimit-output-tokens-remaining", "0"},
              {"anthropic-ratelimit-output-tokens-reset", "2024-06-01T00:00:42.5Z"}});
    CHECK(q.limit == 16000);
    CHECK(q.exhausted());
    CHECK(q.reset == duration{42250ms});  // a fraction: exact
    CHECK(push({{"anthropic-ratelimit-tokens-remaining", "0"}, {"anthropic-ratelimit-tokens-reset", "2024-06-01T00:02:00Z"},
                {"anthropic-ratelimit-input-tokens-remaining", "0"},
                {"anthropic-ratelimit-input-tokens-reset", "2024-06-01T00:01:00Z"}}) ==
          resil::pushback{duration{120s}, pushback_source::quota_reset});  // both must be back
    // A malformed reset is ignored; the remaining still counts.
    q = read({{"anthropic-ratelimit-requests-remaining", "0"}, {"anthropic-ratelimit-requests-reset", "in a minute"}});
    CHECK(q.exhausted());
    CHECK_FALSE(q.reset);

    const auto at = [](std::string_view v) { return resil::parse_reset_timestamp(v, now); };
    CHECK(at("2024-06-01T00:01:00Z") == duration{60s});
    CHECK(at("2024-06-01t00:01:00z") == duration{60s});        // either letter case
    CHECK(at(" 2024-06-01T00:01:00Z\t") == duration{60s});     // OWS around
    CHECK(at("2024-06-01T02:01:00+02:00") == duration{60s});   // an offset east of UTC
    CHECK(at("2024-05-31T23:31:00-00:30") == duration{60s});   // west of it
    CHECK(at("2024-06-01T00:01:00-00:00") == duration{60s});   // offset unknown: UTC
    CHECK(at("2024-06-01T00:00:00.75Z") == duration{500ms});
    CHECK(at("2024-06-01T00:00:00.2500000019Z") == duration{1ns});  // past nanoseconds: dropped
    CHECK(at("2024-06-01T00:00:00Z") == duration::zero());
    CHECK(at("2024-06-01T00:00:00.1Z") == duration::zero());   // past
    CHECK(at("1999-12-31T23:59:60Z") == duration::zero());     // a leap second, long past
    CHECK(at("2024-02-29T00:00:00Z") == duration::zero());     // 2024 is a leap year
    CHECK(at("9999-12-31T23:59:59Z") == cap);
    CHECK(at("2024-06-01T00:01:00+23:59") == duration::zero());
    for (const char* bad : {"", "2024-06-01", "2024-06-01T00:01:00", "2024-06-01 00:01:00Z", "2024-06-01T00:01Z",
                            "2024-6-01T00:01:00Z", "24-06-01T00:01:00Z", "2024-13-01T00:00:00Z", "2024-06-31T00:00:00Z",
                            "2023-02-29T00:00:00Z", "2024-06-01T24:00:00Z", "2024-06-01T00:60:00Z",
                            "2024-06-01T00:00:61Z", "2024-06-01T00:01:00.Z", "2024-06-01T00:01:00+0200",
                            "2024-06-01T00:01:00+24:00", "2024-06-01T00:01:00+02:60", "2024-06-01T00:01:00ZZ",
                            "2024-06-01T00:01:00 Z", "+2024-06-01T00:01:00Z", "1717200060", "6m0s",
                            "Sat, 01 Jun 2024 00:01:00 GMT"}) {
        INFO(bad);
        CHECK_FALSE(at(bad));
    }
}

TEST_CASE("rate limit: requests and tokens with durations (OpenAI's form)") {
    auto q = read({{"x-ratelimit-limit-requests", "60"}, {"x-ratelimit-remaining-requests", "59"},
                   {"x-ratelimit-reset-requests", "1s"}, {"x-ratelimit-limit-tokens", "150000"},
                   {"x-ratelimit-remaining-tokens", "0"}, {"x-ratelimit-reset-tokens", "6m0s"}});
    CHECK(q.form == rate_limit_form::x_ratelimit_split);
    CHECK(q.limit == 150'000);  // the exhausted one
    CHECK(q.remaining == 0);
    CHECK(q.reset == duration{6min});
    q = read({{"x-ratelimit-limit-requests", "60"}, {"x-ratelimit-remaining-requests", "59"},
              {"x-ratelimit-reset-requests", "20ms"}, {"x-ratelimit-remaining-tokens", "149984"}});
    CHECK(q.limit == 60);  // the one with less left
    CHECK(q.remaining == 59);
    CHECK(q.reset == duration{20ms});
    q = read({{"x-ratelimit-remaining-tokens", "0"}, {"x-ratelimit-reset-tokens", "1.5s"}});
    CHECK(q.reset == duration{1500ms});

    const auto d = [](std::string_view v) { return resil::parse_reset_duration(v); };
    CHECK(d("0") == duration::zero());
    CHECK(d("0s") == duration::zero());
    CHECK(d("1h2m3.5s") == duration{1h + 2min + 3500ms});
    CHECK(d("1.5h") == duration{90min});
    CHECK(d("7ns") == duration{7ns});
    CHECK(d("1.9ns") == duration{1ns});  // below a nanosecond: dropped
    CHECK(d("3us") == duration{3us});
    CHECK(d("3\xC2\xB5s") == duration{3us});  // µ
    CHECK(d("3\xCE\xBCs") == duration{3us});  // μ
    CHECK(d("0.000000001s") == duration{1ns});
    CHECK(d("1s1s") == duration{2s});
    CHECK(d("9999999999h") == cap);
    CHECK(d("2147483647s999ms") == duration{2147483647s + 999ms});
    CHECK(d("2147483648s1ns") == cap);
    CHECK(d(std::string(300, '9') + "h") == cap);
    // Nineteen digits of nanoseconds are still below the cap (2^31 s is
    // about 2.1e18 ns): read whole, not cut to eighteen; more saturate.
    CHECK(d("1500000000000000000ns") == duration{1'500'000'000'000'000'000});
    CHECK(d("2147483647999999999ns") == duration{2'147'483'647'999'999'999});
    CHECK(d("2147483648000000001ns") == cap);
    CHECK(d("9999999999999999999ns") == cap);
    CHECK(d("1000000000000000000ns1s") == duration{1'000'000'001'000'000'000});
    for (const char* bad : {"", "5", "-1s", "+1s", "1 s", "1S", "1sec", "s", ".5s", "5.s", "1..5s", "1d", "1m-2s",
                            "6m0", "0x1s", "1e3ms"}) {
        INFO(bad);
        CHECK_FALSE(d(bad));
    }
    q = read({{"x-ratelimit-remaining-requests", "x"}, {"x-ratelimit-reset-requests", "soon"}});
    CHECK_FALSE(q.present());
}

TEST_CASE("rate limit: several forms in one response, the most restrictive one wins") {
    // Each form alone is read; of several, the one that leaves the least.
    const fields all{{"anthropic-ratelimit-requests-remaining", "6"},
                     {"x-ratelimit-remaining-requests", "5"},
                     {"x-rate-limit-remaining", "4"},
                     {"X-RateLimit-Remaining", "3"},
                     {"RateLimit-Remaining", "2"},
                     {"RateLimit", R"("a";r=1)"}};
    CHECK(read(all).remaining == 1);
    CHECK(read(all).form == rate_limit_form::ietf);
    for (std::size_t n = all.list.size(); n > 0; --n) {
        fields some{};
        some.list.assign(all.list.begin(), all.list.begin() + static_cast<std::ptrdiff_t>(n));
        INFO(n);
        CHECK(read(some).remaining == static_cast<std::int64_t>(7 - n));
    }
    // A gateway's exhausted quota in one family, the origin's in another.
    auto q = read({{"RateLimit", R"("default";r=50;t=30)"}, {"X-RateLimit-Remaining", "0"},
                   {"X-RateLimit-Reset", std::to_string(now_s + 90)}});
    CHECK(q.form == rate_limit_form::x_ratelimit);
    CHECK(q.reset == duration{90s});
    q = read({{"RateLimit", "limit=10, remaining=0, reset=20"}, {"x-ratelimit-remaining-tokens", "0"},
              {"x-ratelimit-reset-tokens", "6m0s"}, {"x-rate-limit-remaining", "0"}});  // the last: no reset
    CHECK(q.form == rate_limit_form::x_ratelimit_split);
    CHECK(q.reset == duration{6min});
    // One that says what remains over one that does not; on a tie, the
    // earlier form.
    q = read({{"RateLimit-Reset", "5"}, {"X-RateLimit-Remaining", "10"}});
    CHECK(q.form == rate_limit_form::x_ratelimit);
    q = read({{"RateLimit-Remaining", "10"}, {"RateLimit-Reset", "5"}, {"x-rate-limit-remaining", "10"},
              {"x-rate-limit-reset", "5"}});
    CHECK(q.form == rate_limit_form::ietf_legacy);
    CHECK_FALSE(read({{"Content-Type", "text/plain"}}).present());
    CHECK(read({}) == resil::rate_limit_info{});
}

TEST_CASE("rate limit: retry-after-ms") {
    const auto ms = [](std::string_view v) { return resil::parse_retry_after_ms(v); };
    CHECK(ms("0") == duration::zero());
    CHECK(ms("30") == duration{30ms});
    CHECK(ms("1500.5") == duration{1500500us});
    CHECK(ms(" 7 ") == duration{7ms});
    CHECK(ms("99999999999999999999") == cap);
    CHECK(ms("2147483648000") == cap);
    CHECK(ms("2147483647999") == duration{2147483647999ms});
    for (const char* bad : {"", "-5", "+5", "1e3", "5ms", "5 5", "abc", "1.", ".5", "0x10"}) {
        INFO(bad);
        CHECK_FALSE(ms(bad));
    }
}

TEST_CASE("pushback: Retry-After, then retry-after-ms, then an exhausted quota's reset") {
    const std::pair<std::string, std::string> retry_after{"Retry-After", "2"};
    const std::pair<std::string, std::string> ms{"retry-after-ms", "700"};
    const std::pair<std::string, std::string> quota{"RateLimit", R"("default";r=0;t=9)"};

    // Retry-After first, whatever the others say (the draft: it MUST take precedence).
    auto p = push({quota, ms, retry_after});
    REQUIRE(p);
    CHECK(p->wait == duration{2s});
    CHECK(p->source == pushback_source::retry_after);
    // An HTTP-date Retry-After, against now.
    p = push({{"Retry-After", "Sat, 01 Jun 2024 00:00:10 GMT"}});
    CHECK(p == resil::pushback{duration{10s}, pushback_source::retry_after});
    // Then the millisecond pushback.
    p = push({quota, ms});
    CHECK(p == resil::pushback{duration{700ms}, pushback_source::retry_after_ms});
    // Then an exhausted quota's reset.
    p = push({quota});
    CHECK(p == resil::pushback{duration{9s}, pushback_source::quota_reset});
    p = push({{"X-RateLimit-Remaining", "0"}, {"X-RateLimit-Reset", std::to_string(now_s + 3)}});
    CHECK(p == resil::pushback{duration{3s}, pushback_source::quota_reset});
    p = push({{"x-ratelimit-remaining-tokens", "0"}, {"x-ratelimit-reset-tokens", "6m0s"}});
    CHECK(p == resil::pushback{duration{6min}, pushback_source::quota_reset});

    // A quota not exhausted, or exhausted without a reset: nothing; backoff decides.
    CHECK_FALSE(push({{"RateLimit", R"("default";r=1;t=9)"}}));
    CHECK_FALSE(push({{"RateLimit", R"("default";r=0)"}}));
    CHECK_FALSE(push({{"X-RateLimit-Remaining", "0"}}));
    CHECK_FALSE(push({{"X-RateLimit-Reset", "30"}}));
    CHECK_FALSE(push({}));

    // A malformed field is skipped, not guessed: the next one speaks.
    p = push({{"Retry-After", "soon"}, ms, quota});
    CHECK(p == resil::pushback{duration{700ms}, pushback_source::retry_after_ms});
    p = push({{"Retry-After", "-1"}, {"retry-after-ms", "-700"}, quota});
    CHECK(p == resil::pushback{duration{9s}, pushback_source::quota_reset});
    CHECK_FALSE(push({{"Retry-After", "1.5"}, {"retry-after-ms", "12x"}, {"RateLimit", R"("d";r=0;t=-1)"}}));
}

TEST_CASE("pushback: the floor keeps Retry-After: 0 from being a hot loop") {
    CHECK(resil::default_pushback_floor == duration{50ms});
    CHECK(push({{"Retry-After", "0"}}) == resil::pushback{duration{50ms}, pushback_source::retry_after});
    CHECK(push({{"Retry-After", "Sun, 06 Nov 1994 08:49:37 GMT"}})->wait == duration{50ms});  // past
    CHECK(push({{"retry-after-ms", "3"}})->wait == duration{50ms});
    CHECK(push({{"retry-after-ms", "50"}})->wait == duration{50ms});
    CHECK(push({{"retry-after-ms", "51"}})->wait == duration{51ms});
    CHECK(push({{"RateLimit", R"("d";r=0;t=0)"}}) == resil::pushback{duration{50ms}, pushback_source::quota_reset});
    // Configurable, zero included.
    CHECK(push({{"Retry-After", "0"}}, {.floor = 200ms})->wait == duration{200ms});
    CHECK(push({{"Retry-After", "1"}}, {.floor = 200ms})->wait == duration{1s});
    CHECK(push({{"Retry-After", "0"}}, {.floor = duration::zero()})->wait == duration::zero());
    // Caps hold too: no value waits years.
    CHECK(push({{"Retry-After", "99999999999999"}})->wait == cap);
    CHECK(push({{"retry-after-ms", "99999999999999999"}})->wait == cap);
    CHECK(push({{"RateLimit", R"("d";r=0;t=999999999999999)"}})->wait == cap);
    CHECK(push({{"RateLimit", R"("d";r=0;t=2147483648)"}})->wait == cap);
    CHECK(push({{"RateLimit", R"("d";r=0;t=2147483647)"}})->wait == duration{2147483647s});
    CHECK(read({{"RateLimit", R"("d";r=1)"}, {"RateLimit-Policy", R"("d";q=1;w=999999999999999)"}}).window == cap);
}

TEST_CASE("pushback options: the floor is validated") {
    CHECK_FALSE(resil::pushback_options{}.validate());
    CHECK_FALSE(resil::pushback_options{.floor = duration::zero()}.validate());
    CHECK_FALSE(resil::pushback_options{.floor = 1min}.validate());
    const auto negative = resil::pushback_options{.floor = -1ms}.validate();
    REQUIRE(negative);
    CHECK(negative->message() == "`floor` must be in [0s, 1m], got -1ms");
    const auto long_floor = resil::pushback_options{.floor = 61s}.validate();
    REQUIRE(long_floor);
    CHECK(long_floor->field == "floor");
}

TEST_CASE("rate limit: names of forms and sources") {
    CHECK(resil::to_string(rate_limit_form::none) == "none");
    CHECK(resil::to_string(rate_limit_form::ietf) == "ietf");
    CHECK(resil::to_string(rate_limit_form::ietf_legacy) == "ietf_legacy");
    CHECK(resil::to_string(rate_limit_form::x_ratelimit) == "x_ratelimit");
    CHECK(resil::to_string(rate_limit_form::x_ratelimit_split) == "x_ratelimit_split");
    CHECK(resil::to_string(rate_limit_form::ietf_dictionary) == "ietf_dictionary");
    CHECK(resil::to_string(rate_limit_form::x_rate_limit) == "x_rate_limit");
    CHECK(resil::to_string(rate_limit_form::anthropic) == "anthropic");
    CHECK(resil::to_string(pushback_source::retry_after) == "retry_after");
    CHECK(resil::to_string(pushback_source::retry_after_ms) == "retry_after_ms");
    CHECK(resil::to_string(pushback_source::quota_reset) == "quota_reset");
}
