// resil::json for every options type of the library (item 5 of
// resil/policy_checklist.hpp): each is written and read back equal, with
// every field set away from its default; an unknown key anywhere gets the
// JSON path and "did you mean"; a nested options type's errors land at its
// path. The pipeline's own seven are also in json_fields.cpp, json_read.cpp
// and json_config.cpp.
#include <resil/json.hpp>

#include <resil/adaptive_limit.hpp>
#include <resil/adaptive_throttle.hpp>
#include <resil/balancer.hpp>
#include <resil/circuit_breaker.hpp>
#include <resil/concurrency_limit.hpp>
#include <resil/deadline_policy.hpp>
#include <resil/fallback.hpp>
#include <resil/fault_injection.hpp>
#include <resil/hedge.hpp>
#include <resil/paced_bucket.hpp>
#include <resil/policy_checklist.hpp>
#include <resil/retry.hpp>
#include <resil/retry_budget.hpp>
#include <resil/timeout_policy.hpp>
#include <resil/token_bucket.hpp>

#if RESIL_TEST_WITH_CURL
#include <resil/json/curl.hpp>
#include <resil/json/dependency.hpp>
#endif

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>

#include "catch.hpp"

using namespace std::chrono_literals;
namespace rj = resil::json;
using resil::reason;
using resil::verdict;

namespace {

struct plan_b {
    int operator()() const { return 0; }
};

// Item 5 for every policy of the library; the Redis limiter by its options
// (its class needs the resil::redis target).
static_assert(rj::configurable<resil::deadline_policy>);
static_assert(rj::configurable<resil::timeout_policy>);
static_assert(rj::configurable<resil::retry_policy>);
static_assert(rj::configurable<resil::retry_budget>);
static_assert(rj::configurable<resil::circuit_breaker>);
static_assert(rj::configurable<resil::token_bucket>);
static_assert(rj::configurable<resil::paced_bucket>);
static_assert(rj::configurable<resil::concurrency_limit>);
static_assert(rj::configurable<resil::adaptive_limit>);
static_assert(rj::configurable<resil::adaptive_throttle>);
static_assert(rj::configurable<resil::fallback_policy<plan_b>>);
static_assert(rj::configurable<resil::hedge_policy>);
static_assert(rj::configurable<resil::fault_injection>);
static_assert(rj::configurable<resil::balancer>);
static_assert(rj::configurable<resil::health_checker>);
static_assert(rj::detail::options_type<resil::redis::rate_limiter_options>);
static_assert(rj::detail::options_type<resil::outlier_detection_options>);

}  // namespace

// The members of an aggregate, counted by brace-initializing it from
// placeholders that convert to any member (unevaluated only: declared, not
// defined, so outside the anonymous namespace, where clang would want a
// definition).
namespace json_options_test {
struct any_member {
    std::size_t index;
    template <class M>
    operator M&() const&& noexcept;
};
}  // namespace json_options_test

namespace {
using json_options_test::any_member;
template <class T, std::size_t... I>
constexpr bool initializable_from(std::index_sequence<I...>) {
    return requires { T{any_member{I}...}; };
}
template <class T, std::size_t N = 0>
constexpr std::size_t member_count() {
    if constexpr (initializable_from<T>(std::make_index_sequence<N + 1>{}))
        return member_count<T, N + 1>();
    else
        return N;
}

// Every member of an options type has a JSON key, but those that are code
// (pointers, callbacks), counted here: a member added without a key fails.
template <class T>
constexpr bool every_member_keyed(std::size_t code_members = 0) {
    return member_count<T>() == rj::detail::fields<T>::list.size + code_members;
}
static_assert(every_member_keyed<resil::timeouts>());
static_assert(every_member_keyed<resil::retry_options>(1));  // budget
static_assert(every_member_keyed<resil::retry_budget_options>());
static_assert(every_member_keyed<resil::circuit_breaker_options>(1));  // on_state_change
static_assert(every_member_keyed<resil::token_bucket_options>());
static_assert(every_member_keyed<resil::concurrency_limit_options>());
static_assert(every_member_keyed<resil::deadline_policy_options>());
static_assert(every_member_keyed<rj::pipeline_config>());
static_assert(every_member_keyed<resil::paced_bucket_options>());
static_assert(every_member_keyed<resil::adaptive_limit_options>());
static_assert(every_member_keyed<resil::adaptive_throttle_options>());
static_assert(every_member_keyed<resil::fallback_options>());
static_assert(every_member_keyed<resil::hedge_options>(1));  // budget
static_assert(every_member_keyed<resil::outlier_detection_options>());
static_assert(every_member_keyed<resil::affinity_options>());
static_assert(every_member_keyed<resil::balancer_options>(2));  // on_ejected, on_returned
static_assert(every_member_keyed<resil::health_check_options>());
static_assert(every_member_keyed<resil::fault_injection_options>());
static_assert(every_member_keyed<resil::fault_injection_options::delay_fault>());
static_assert(every_member_keyed<resil::fault_injection_options::abort_fault>());
static_assert(every_member_keyed<resil::redis::rate_limiter_options>());
static_assert(every_member_keyed<resil::dns_discovery_options>(1));  // on_lookup
static_assert(every_member_keyed<resil::endpoint>());
static_assert(every_member_keyed<resil::pushback_options>());
static_assert(every_member_keyed<resil::sse::reader_options>());
#if RESIL_TEST_WITH_CURL
static_assert(every_member_keyed<resil::curl::tls_options>());
static_assert(every_member_keyed<resil::curl::proxy_options>());
static_assert(every_member_keyed<resil::curl::redirect_options>());
static_assert(every_member_keyed<resil::curl::connection_options>());
static_assert(every_member_keyed<resil::curl::client_options>(2));  // shared, configure_handle
static_assert(every_member_keyed<resil::curl::shared_cache_options>());
static_assert(every_member_keyed<resil::curl::stream_options>());
static_assert(every_member_keyed<resil::curl::sse_stream_options>());
static_assert(every_member_keyed<resil::http::health_check_settings>());
static_assert(every_member_keyed<resil::http::dependency_options>());
#endif
static_assert(member_count<resil::timeouts>() == 3);  // the count itself

// g++ 12 at -O3 follows the field-by-field comparison of a default-built
// dependency_options through std::optional<std::chrono::seconds> and warns
// that the empty optional's duration "may be used uninitialized" (it is read
// only when engaged): a false positive of -Wmaybe-uninitialized in this
// test's helpers, not in the library.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

// How a value read back from write() compares with the one written: equal,
// but for secrets, which write() leaves out and so read back empty.
enum class compare { as_is, read_back };

template <compare Mode = compare::as_is, class T>
bool same_fields(const T& a, const T& b);

// Two values of one member equal: nested options types and optional ones
// field by field (some options types hold callbacks, and have no ==).
template <compare Mode, class M>
bool same_member(const M& x, const M& y) {
    if constexpr (rj::detail::options_type<M>) {
        return same_fields<Mode>(x, y);
    } else if constexpr (rj::detail::is_optional<M>) {
        if constexpr (rj::detail::options_type<typename M::value_type>)
            return x.has_value() == y.has_value() && (!x || same_fields<Mode>(*x, *y));
        else
            return x == y;
    } else {
        return x == y;
    }
}

// Each field of T's table, compared: `same` for each, in the table's order.
template <compare Mode, class T, class Combine>
bool compare_fields(const T& a, const T& b, Combine combine) {
    return rj::detail::fields<T>::list.apply([&](const auto&... f) {
        const auto one = [&](const auto& field) {
            using entry = std::remove_cvref_t<decltype(field)>;
            if constexpr (Mode == compare::read_back && std::is_same_v<typename entry::codec, rj::detail::as_secret>)
                return std::pair{field.name, (a.*field.member).empty()};
            else
                return std::pair{field.name, same_member<Mode>(a.*field.member, b.*field.member)};
        };
        return combine(one(f)...);
    });
}
template <compare Mode, class T>
bool same_fields(const T& a, const T& b) {
    return compare_fields<Mode>(a, b, [](auto... same) { return (same.second && ...); });
}
// Every field differs, but those named in `left`.
template <class T>
bool every_field_differs(const T& a, const T& b, std::initializer_list<std::string_view> left = {}) {
    return compare_fields<compare::as_is>(a, b, [&](auto... same) {
        const auto differs = [&](const auto& s) {
            for (auto name : left)
                if (name == s.first) return true;
            if (s.second) UNSCOPED_INFO("field left at its default: " << s.first);
            return !s.second;
        };
        return (differs(same) && ...);
    });
}

// What read<T> checks T with: its checker, else its validate().
template <class T>
resil::validation_result check_of(const T& options) {
    if constexpr (rj::detail::has_checker<T>) return rj::detail::checker<T>::check(options);
    else if constexpr (requires { options.validate(); }) return options.validate();
    else return std::nullopt;
}

// Written, then read back (through resil::json and through nlohmann's own
// conversions): the same options (secrets aside: never written); and
// written again, the same text. `left` names fields that may keep their
// default (one of two that exclude each other).
template <class T>
void round_trip(const T& options, std::initializer_list<std::string_view> left = {}) {
    static_assert(rj::detail::options_type<T>);
    REQUIRE(check_of(options) == std::nullopt);
    const auto j = rj::write(options);
    INFO(j.dump());
    const auto back = rj::read<T>(j, "x");
    CHECK(same_fields<compare::read_back>(back, options));
    CHECK(rj::write(back) == j);
    // Every field differs from its default, so a key the reader skipped would show.
    CHECK(every_field_differs(T{}, options, left));
    const nlohmann::json converted = options;
    CHECK(same_fields<compare::read_back>(converted.get<T>(), options));
}

// A backoff, written and read back: the same kind and values; the same text.
void round_trip(const resil::backoff& b) {
    const auto j = rj::write(b);
    INFO(j.dump());
    const auto back = rj::read<resil::backoff>(j, "backoff");
    CHECK(back == b);
    CHECK(rj::write(back) == j);
}

std::string error_of(auto read) {
    try {
        read();
    } catch (const rj::config_error& e) {
        return e.what();
    }
    return "(accepted)";
}

// Each key of T's table, misspelt (one letter more): refused at its path,
// with the key meant.
template <class T>
void every_key_misspelt(const T& options) {
    const auto written = rj::write<nlohmann::json>(options);
    for (const auto name : rj::detail::key_names<T>()) {
        const std::string typo = std::string(name) + "x";
        auto j = written;
        j[typo] = j[std::string(name)];
        j.erase(std::string(name));
        INFO(typo);
        const auto error = error_of([&] { (void)rj::read<T>(j, "cfg"); });
        CHECK(error.rfind("cfg." + typo + ": unknown key; did you mean \"" + std::string(name) + "\"? (expected one of: ", 0) ==
              0);
    }
}

// The same for a backoff object's keys (its kind and its strategy's).
void every_backoff_key_misspelt(const resil::backoff& b) {
    const auto written = rj::write<nlohmann::json>(b);
    for (const auto& [name, value] : written.items()) {
        const std::string typo = name + "x";
        auto j = written;
        j[typo] = value;
        j.erase(name);
        INFO(typo);
        const auto error = error_of([&] { (void)rj::read<resil::backoff>(j, "cfg"); });
        CHECK(error.rfind("cfg." + typo + ": unknown key; did you mean \"" + name + "\"?", 0) == 0);
    }
}

#if RESIL_TEST_WITH_CURL
// Files the TLS options name: validate() wants them readable, not valid PEM.
struct tls_files {
    std::filesystem::path dir = std::filesystem::temp_directory_path() / "resil_json_options_tls";
    tls_files() {
        std::filesystem::create_directories(dir);
        for (const char* name : {"ca.pem", "client.pem", "client.key", "pin.pem"}) std::ofstream(dir / name) << "x\n";
    }
    [[nodiscard]] std::string file(const char* name) const { return (dir / name).string(); }
};

resil::curl::client_options every_transport_option(const tls_files& files) {
    return {.limits = {.connect = 2s, .read = 5s, .total = 20s},
            .idempotency_key = resil::curl::key_header_format::unquoted,
            .idempotency_key_header = "X-Idempotency-Key",
            .propagate_deadline = true,
            .max_body_bytes = 1 << 20,
            .max_header_bytes = 8192,
            .pushback_header = "x-pushback-ms",
            .user_agent = "checkout/1.0",
            .tls = {.ca_file = files.file("ca.pem"),
                    .ca_directory = files.dir.string(),
                    .client_certificate = files.file("client.pem"),
                    .private_key = files.file("client.key"),
                    .private_key_password = "s3cret",
                    .pinned_public_key = files.file("pin.pem"),
                    .minimum_version = resil::curl::tls_version::tls1_3,
                    .accept_invalid_certificates = true},
            .proxy = {.url = "http://proxy.internal:3128",
                      .no_proxy = "localhost,.internal",
                      .username = "svc",
                      .password = "hunter2"},
            .http_version = resil::curl::http_version::http1_1,
            .redirects = {.max = 3, .allow_https_to_http = true},
            .connections = {.resolve = {"api.internal:443:10.0.0.7"},
                            .connect_to = {"api.internal:443:10.0.0.9:8443"},
                            .dns_cache_lifetime = 30s,
                            .max_connection_age = 5min,
                            .max_connection_idle = 50s,
                            .max_idle_for_unrepeatable = 500ms,
                            .tcp_keepalive = true,
                            .tcp_keepalive_idle = 30s,
                            .tcp_keepalive_interval = 10s}};
}

resil::http::dependency_options every_dependency_option(const tls_files& files) {
    resil::http::dependency_options d{
        .name = "payments",
        .endpoints = {{.address = "https://pay-a.internal", .weight = 3, .zone = "eu-1a", .idempotency_scope = "a"},
                      {.address = "https://pay-b.internal", .priority = 1, .idempotency_scope = "b"}},
        .balancing = {.policy = resil::balancing_policy::least_outstanding,
                      .endpoint_breaker = resil::circuit_breaker_options{.open_for = 20s}},
        .health_check = resil::http::health_check_settings{.probe = {.interval = 5s, .timeout = 1s}, .path = "/ready"},
        .transport = every_transport_option(files),
        .deadline = {.budget = 2s},
        .timeouts = {.connect = 100ms, .total = 800ms},
        .retry = {.max_attempts = 2},
        .retry_budget = resil::retry_budget_options{.ratio = 0.2},
        .circuit_breaker = resil::circuit_breaker_options{.failure_ratio = 0.3},
        .concurrency_limit = resil::concurrency_limit_options{.max_in_flight = 32},
        .adaptive_limit = std::nullopt,
        .pacing = resil::paced_bucket_options{.rate = 20, .burst = 5},
        .quota = resil::token_bucket_options{.rate = 100, .burst = 50},
        .shared_quota = resil::redis::rate_limiter_options{.rate = 50, .burst = 100, .key = "payments"},
        .hedge = resil::hedge_options{.delay = 50ms},
        .faults = resil::fault_injection_options{.enabled = true, .abort = {.probability = 0.01}},
    };
    return d;
}
#endif

}  // namespace

TEST_CASE("json options: every options type round-trips, every field away from its default") {
    round_trip(resil::timeouts{.connect = 20ms, .read = 100ms, .total = 150ms});
    round_trip(resil::retry_options{.max_attempts = 5,
                                    .backoff = resil::equal_jitter{50ms, 2s, 3.0},
                                    .retry_on = {verdict::retryable},
                                    .max_wait = 30s,
                                    .tell_callers_dont_retry = false});
    round_trip(resil::retry_budget_options{.ratio = 0.2, .min_per_second = 3, .window = 5s});
    round_trip(resil::circuit_breaker_options{.mode = resil::breaker_mode::count_window,
                                              .failure_ratio = 0.25,
                                              .window = 3s,
                                              .window_calls = 40,
                                              .min_calls = 10,
                                              .consecutive_failures = 7,
                                              .slow_call_threshold = 2s,
                                              .open_for = 12s,
                                              .half_open_probes = 2,
                                              .probe_timeout = 4s,
                                              .failure_verdicts = {verdict::ambiguous}});
    round_trip(resil::token_bucket_options{.rate = 12.5, .burst = 30, .max_wait = 250ms});
    round_trip(resil::concurrency_limit_options{.max_in_flight = 64});
    round_trip(resil::deadline_policy_options{.budget = 750ms});
    round_trip(resil::paced_bucket_options{.rate = 4,
                                           .burst = 8,
                                           .min_rate = 0.5,
                                           .max_rate = 5000,
                                           .burst_window = 2s,
                                           .max_pause = 90s,
                                           .max_wait = 1500ms});
    round_trip(resil::adaptive_limit_options{.algorithm = resil::adaptive_algorithm::gradient2,
                                             .initial_limit = 30,
                                             .min_limit = 5,
                                             .max_limit = 300,
                                             .backoff_ratio = 0.8,
                                             .smoothing = 0.5,
                                             .rtt_tolerance = 2.0,
                                             .long_window = 100,
                                             .queue_size = 6,
                                             .cut_once_per_round = false,
                                             .increase_per_success = true,
                                             .overload_latency = 3s,
                                             .overload_verdicts = {verdict::retryable}});
    round_trip(resil::adaptive_throttle_options{.k = 1.5, .window = 1min, .overload_verdicts = {verdict::ambiguous}});
    round_trip(resil::fallback_options{.handles = {reason::circuit_open, reason::shed, reason::no_endpoint_in_scope}});
    round_trip(resil::hedge_options{.max_hedges = 2,
                                    .delay = 30ms,
                                    .percentile = 0.9,
                                    .min_delay = 2ms,
                                    .max_delay = 5s,
                                    .window = 20s,
                                    .min_samples = 20});
    round_trip(resil::outlier_detection_options{.consecutive_failures = 3,
                                                .base_ejection_time = 10s,
                                                .max_ejection_time = 100s,
                                                .ejection_decay_interval = 20s,
                                                .max_ejection_share = 0.3});
    round_trip(resil::affinity_options{.min_ring_size = 2048,
                                       .max_ring_size = 4096,
                                       .maglev_table_size = 5003,
                                       .load_bound_factor = 1.25});
    round_trip(resil::balancer_options{.policy = resil::balancing_policy::peak_ewma,
                                       .decay_time = 5s,
                                       .unmeasured_penalty = 200ms,
                                       .affinity = {.maglev_table_size = 131071, .load_bound_factor = 1.5},
                                       .outlier = {.consecutive_failures = 3, .max_ejection_share = 0.5},
                                       .panic_threshold = 0.3,
                                       .failover_threshold = 0.6,
                                       .endpoint_breaker = resil::circuit_breaker_options{.open_for = 5s}});
    round_trip(resil::health_check_options{.interval = 20s, .timeout = 1s, .unhealthy_threshold = 3,
                                           .healthy_threshold = 4});
    // ipv6 stays true: with ipv4 false, one family must remain.
    round_trip(resil::dns_discovery_options{.name = "_http._tcp.triton.ml.svc.cluster.local",
                                            .records = resil::dns_records::srv,
                                            .port = 8000,
                                            .scheme = "https",
                                            .ipv4 = false,
                                            .nameserver = "127.0.0.1:5353",
                                            .idempotency_scope = "triton",
                                            .interval = 10s,
                                            .min_ttl = 2s,
                                            .max_ttl = 1min,
                                            .retry_after_failure = 500ms,
                                            .query_timeout = 3s,
                                            .query_attempts = 3},
               {"ipv6"});
    round_trip(resil::fault_injection_options{
        .enabled = true,
        .tag = "chaos",
        .delay = {.probability = 0.25, .latency = 1500ms},
        .abort = {.probability = 0.05, .verdict = verdict::permanent, .never_sent = true, .retry_after = 2s}});
    using faults = resil::fault_injection_options;
    round_trip(faults::delay_fault{.probability = 0.5, .latency = 20ms});
    round_trip(faults::abort_fault{.probability = 1, .verdict = verdict::permanent, .never_sent = true, .retry_after = 250ms});
    const auto quota = resil::redis::rate_limiter_options{.rate = 20,
                                                          .burst = 40,
                                                          .host = "10.0.0.7",
                                                          .port = 6380,
                                                          .cluster_nodes = "10.0.0.7:7000,10.0.0.8:7000",
                                                          .max_redirections = 3,
                                                          .key = "llm-api",
                                                          .key_prefix = "svc:",
                                                          .connect_timeout = 30ms,
                                                          .reply_timeout = 15ms,
                                                          .connections = 4,
                                                          .reconnect_backoff = 100ms,
                                                          .reconnect_backoff_max = 3s,
                                                          .on_failure = resil::redis::failure_policy::fail_closed,
                                                          .expected_pods = 10,
                                                          .lease = 5,
                                                          .lease_ttl = 500ms,
                                                          .max_wait = 2s};
    round_trip(quota, {"sentinels", "sentinel_master"});
    auto watched = quota;  // Sentinel instead of a cluster
    watched.cluster_nodes.clear();
    watched.sentinels = "10.0.0.7:26379, 10.0.0.8:26379";
    watched.sentinel_master = "quota-primary";
    round_trip(watched, {"cluster_nodes"});
    round_trip(rj::pipeline_config{.deadline = 300ms,
                                   .timeouts = resil::timeouts{.connect = 20ms},
                                   .retry = resil::retry_options{.max_attempts = 2},
                                   .retry_budget = resil::retry_budget_options{.ratio = 0.2},
                                   .circuit_breaker = resil::circuit_breaker_options{.open_for = 5s},
                                   .token_bucket = resil::token_bucket_options{.rate = 5},
                                   .concurrency_limit = resil::concurrency_limit_options{.max_in_flight = 8}});
    round_trip(resil::backoff{resil::exponential_backoff{10ms, 5s, 3.0}});
    round_trip(resil::backoff{resil::full_jitter{20ms, 2s}});
    round_trip(resil::backoff{resil::equal_jitter{30ms, 3s, 1.5}});
    round_trip(resil::backoff{resil::decorrelated_jitter{40ms, 4s}});
    round_trip(resil::endpoint{.address = "https://inv-1.internal:8443/v2",
                               .weight = 4,
                               .zone = "eu-west-1a",
                               .priority = 2,
                               .idempotency_scope = "inventory"});
    round_trip(resil::pushback_options{.floor = 200ms});
    round_trip(resil::sse::reader_options{.max_line_bytes = 1024,
                                          .max_event_bytes = 4096,
                                          .max_body_bytes = 1 << 20,
                                          .validate_utf8 = false});
#if RESIL_TEST_WITH_CURL
    const tls_files files;
    const auto transport = every_transport_option(files);
    round_trip(transport.tls);
    round_trip(resil::curl::proxy_options{transport.proxy});
    round_trip(resil::curl::redirect_options{transport.redirects});
    round_trip(resil::curl::connection_options{transport.connections});
    round_trip(transport);
    round_trip(resil::curl::client_options{transport});
    round_trip(resil::curl::tls_options{.minimum_version = resil::curl::tls_version::tls1_2},
               {"ca_file", "ca_directory", "client_certificate", "private_key", "private_key_password",
                "pinned_public_key", "accept_invalid_certificates"});
    round_trip(resil::curl::shared_cache_options{.dns = false, .tls_sessions = false});
    round_trip(resil::curl::stream_options{.first_byte = 2s, .idle = 30s});
    round_trip(resil::curl::sse_stream_options{
        .reader = {.max_line_bytes = 100}, .require_event_stream = false, .resume = true});
    round_trip(resil::http::health_check_settings{.probe = {.interval = 3s}, .path = "/live"});
    // concurrency_limit and adaptive_limit exclude each other: each in its own round trip.
    auto payments = every_dependency_option(files);
    round_trip(payments, {"adaptive_limit"});
    payments.concurrency_limit.reset();
    payments.adaptive_limit = resil::adaptive_limit_options{.initial_limit = 10};
    round_trip(payments, {"concurrency_limit"});
    round_trip(resil::http::dependency_options{.name = "one", .endpoints = {{.address = "http://one:80"}}},
               {"balancing", "health_check", "transport", "deadline", "timeouts", "retry", "retry_budget",
                "circuit_breaker", "concurrency_limit", "adaptive_limit", "pacing", "quota", "shared_quota", "hedge",
                "faults"});
#endif
}

TEST_CASE("json options: a balancer without a per-endpoint breaker writes null, and reads it back") {
    const resil::balancer_options none{};
    const auto j = rj::write(none);
    CHECK(j["endpoint_breaker"].is_null());
    CHECK(j["outlier"] == rj::write(resil::outlier_detection_options{}));
    CHECK_FALSE(rj::read<resil::balancer_options>(j).endpoint_breaker);
    const auto with = rj::read<resil::balancer_options>(nlohmann::json::parse(R"({"endpoint_breaker": {}})"));
    REQUIRE(with.endpoint_breaker);
    CHECK(same_fields(*with.endpoint_breaker, resil::circuit_breaker_options{}));
}

TEST_CASE("json options: every key of every options type, misspelt, is refused with the key meant") {
    every_key_misspelt(resil::timeouts{});
    every_key_misspelt(resil::retry_options{});
    every_key_misspelt(resil::retry_budget_options{});
    every_key_misspelt(resil::circuit_breaker_options{});
    every_key_misspelt(resil::token_bucket_options{});
    every_key_misspelt(resil::concurrency_limit_options{});
    every_key_misspelt(resil::deadline_policy_options{.budget = 1s});
    every_key_misspelt(resil::paced_bucket_options{});
    every_key_misspelt(resil::adaptive_limit_options{});
    every_key_misspelt(resil::adaptive_throttle_options{});
    every_key_misspelt(resil::fallback_options{});
    every_key_misspelt(resil::hedge_options{});
    every_key_misspelt(resil::outlier_detection_options{});
    every_key_misspelt(resil::affinity_options{});
    every_key_misspelt(resil::balancer_options{});
    every_key_misspelt(resil::health_check_options{});
    every_key_misspelt(resil::dns_discovery_options{.name = "svc.test"});
    every_key_misspelt(resil::fault_injection_options{});
    every_key_misspelt(resil::fault_injection_options::delay_fault{});
    every_key_misspelt(resil::fault_injection_options::abort_fault{});
    every_key_misspelt(resil::redis::rate_limiter_options{.key = "k"});
    every_key_misspelt(rj::pipeline_config{.deadline = 1s,
                                           .timeouts = resil::timeouts{},
                                           .retry = resil::retry_options{},
                                           .retry_budget = resil::retry_budget_options{},
                                           .circuit_breaker = resil::circuit_breaker_options{},
                                           .token_bucket = resil::token_bucket_options{},
                                           .concurrency_limit = resil::concurrency_limit_options{}});
    every_backoff_key_misspelt(resil::full_jitter{});
    every_backoff_key_misspelt(resil::decorrelated_jitter{});
    every_key_misspelt(resil::endpoint{.address = "http://a:80"});
    every_key_misspelt(resil::pushback_options{});
    every_key_misspelt(resil::sse::reader_options{});
#if RESIL_TEST_WITH_CURL
    every_key_misspelt(resil::curl::tls_options{});
    every_key_misspelt(resil::curl::proxy_options{});
    every_key_misspelt(resil::curl::redirect_options{});
    every_key_misspelt(resil::curl::connection_options{});
    every_key_misspelt(resil::curl::client_options{});
    every_key_misspelt(resil::curl::shared_cache_options{});
    every_key_misspelt(resil::curl::stream_options{});
    every_key_misspelt(resil::curl::sse_stream_options{});
    every_key_misspelt(resil::http::health_check_settings{});
    every_key_misspelt(resil::http::dependency_options{});
#endif
}

TEST_CASE("json options: fault injection, off unless the file enables it, its errors at their path") {
    const auto read = [](std::string_view text) {
        return rj::read<resil::fault_injection_options>(nlohmann::json::parse(text), "faults");
    };
    const auto error = [&](std::string_view text) { return error_of([&] { (void)read(text); }); };
    CHECK(read("{}") == resil::fault_injection_options{});
    CHECK_FALSE(read(R"({"abort": {"probability": 1}})").enabled);
    const auto on = read(R"({"enabled": true, "delay": {"probability": 0.1, "latency": "300ms"},
                             "abort": {"probability": 0.05, "verdict": "ambiguous"}})");
    CHECK(on == resil::fault_injection_options{.enabled = true,
                                               .delay = {.probability = 0.1, .latency = 300ms},
                                               .abort = {.probability = 0.05, .verdict = verdict::ambiguous}});
    CHECK(error(R"({"delay": {"probability": 1.5}})") == "faults.delay.probability: must be in [0, 1], got 1.5");
    CHECK(error(R"({"delay": {"latency": "2h"}})") == R"(faults.delay.latency: must be in [0s, 1h], got "2h")");
    CHECK(error(R"({"delay": {"latency": 300}})").rfind("faults.delay.latency: ", 0) == 0);  // no unit
    CHECK(error(R"({"abort": {"verdict": "success"}})") ==
          R"(faults.abort.verdict: must be retryable, permanent or ambiguous, got "success")");
    CHECK(error(R"({"abort": {"verdict": "flaky"}})") ==
          R"(faults.abort.verdict: must be one of "success", "retryable", "permanent", "ambiguous", got "flaky")");
    CHECK(error(R"({"abort": {"probabilty": 0.1}})").rfind(
              R"(faults.abort.probabilty: unknown key; did you mean "probability"?)", 0) == 0);
    CHECK(error(R"({"enabled": "yes"})") == R"(faults.enabled: must be true or false, got "yes")");
}

TEST_CASE("json options: nested objects report at their path, shape and ranges alike") {
    const auto error = [](std::string_view text) {
        return error_of([&] { (void)rj::read<resil::balancer_options>(nlohmann::json::parse(text), "balancer"); });
    };
    CHECK(error(R"({"outlier": {"consecutive_failure": 3}})") ==
          R"(balancer.outlier.consecutive_failure: unknown key; did you mean "consecutive_failures"? )"
          R"((expected one of: consecutive_failures, base_ejection_time, max_ejection_time, ejection_decay_interval, )"
          R"(max_ejection_share))");
    CHECK(error(R"({"outlier": {"max_ejection_share": 2}})") == "balancer.outlier.max_ejection_share: must be in [0, 1], got 2");
    CHECK(error(R"({"outlier": 5})") == "balancer.outlier: must be an object, got 5");
    CHECK(error(R"({"endpoint_breaker": {"window": "5ms"}})") ==
          R"(balancer.endpoint_breaker.window: must be in [10ms, 24h], got "5ms")");
    CHECK(error(R"({"endpoint_breaker": {"open_fr": "5s"}})").rfind(
              R"(balancer.endpoint_breaker.open_fr: unknown key; did you mean "open_for"?)", 0) == 0);
    CHECK(error(R"({"endpoint_breaker": []})") == "balancer.endpoint_breaker: must be an object, got an array");
    CHECK(error(R"({"policy": "peak_ewm"})") ==
          R"(balancer.policy: must be one of "round_robin", "random", "least_outstanding", "power_of_two_choices", )"
          R"("peak_ewma", "ring_hash", "maglev", "rendezvous", got "peak_ewm")");
    CHECK(error(R"({"policy": "maglev", "affinity": {"maglev_table_size": 65536}})") ==
          "balancer.affinity.maglev_table_size: must be a prime in [2, 5000011], got 65536");
    CHECK(error(R"({"affinity": {"load_bound_factor": 1}})") ==
          "balancer.affinity.load_bound_factor: must be 0 (off) or in (1, 100], got 1");
    CHECK(error(R"({"policy": 4})") == "balancer.policy: must be a balancing policy, got 4");
    CHECK(error(R"({"on_ejected": null})").rfind(R"(balancer.on_ejected: unknown key)", 0) == 0);  // code, not configuration
}

TEST_CASE("json options: enumerations, reasons, strings and whole milliseconds, by their rules") {
    const auto quota = [](std::string_view text) {
        return error_of(
            [&] { (void)rj::read<resil::redis::rate_limiter_options>(nlohmann::json::parse(text), "quota"); });
    };
    CHECK(quota(R"({"key": "k", "on_failure": "fail_opn"})") ==
          R"(quota.on_failure: must be one of "fail_open", "fail_closed", got "fail_opn")");
    CHECK(quota(R"({"key": "k", "connect_timeout": "1.5ms"})") ==
          R"(quota.connect_timeout: must be a whole number of milliseconds, got "1.5ms")");
    CHECK(quota(R"({"key": "k", "connect_timeout": 50})").rfind("quota.connect_timeout: must be a duration string", 0) == 0);
    CHECK(quota(R"({"key": 7})") == "quota.key: must be a string, got 7");
    CHECK(quota(R"({"key": "bad key"})").rfind("quota.key: must be 1 to 200 printable ASCII characters", 0) == 0);
    CHECK(quota(R"({"rate": 50})").rfind(R"(quota.key: must be 1 to 200 printable ASCII characters)", 0) == 0);  // required
    CHECK(quota(R"({"key": "k", "port": 70000})") == "quota.port: must be in [1, 65535], got 70000");
    CHECK(quota(R"({"key": "k", "cluster_nodes": "10.0.0.7"})") ==
          R"(quota.cluster_nodes: must be empty or 1 to 64 host:port separated by commas (port in [1, 65535]), got "10.0.0.7")");
    CHECK(quota(R"({"key": "k", "max_redirections": 20})") == "quota.max_redirections: must be in [0, 16], got 20");
    CHECK(quota(R"({"key": "k", "sentinels": "10.0.0.7:26379"})")
              .rfind("quota.sentinel_master: must be 1 to 200 printable ASCII characters", 0) == 0);

    const auto fallback = [](std::string_view text) {
        return error_of([&] { (void)rj::read<resil::fallback_options>(nlohmann::json::parse(text), "fallback"); });
    };
    CHECK(fallback(R"({"handles": ["circuit_open", "circuit_open"]})") ==
          R"(fallback.handles[1]: "circuit_open" is listed twice)");
    CHECK(fallback(R"({"handles": ["circuit_opn"]})").rfind(R"(fallback.handles[0]: must be one of "none", "failed", )", 0) ==
          0);
    CHECK(fallback(R"({"handles": []})") == "fallback.handles: must name at least one reason, got none");
    CHECK(fallback(R"({"handles": "shed"})").rfind("fallback.handles: must be an array of reasons", 0) == 0);
    CHECK(rj::read<resil::fallback_options>(nlohmann::json::parse(R"({"handles": ["shed"]})")).handles ==
          resil::reason_set{reason::shed});

    const auto limit = [](std::string_view text) {
        return error_of([&] { (void)rj::read<resil::adaptive_limit_options>(nlohmann::json::parse(text), "limit"); });
    };
    CHECK(limit(R"({"algorithm": "vegas"})") == R"(limit.algorithm: must be one of "aimd", "gradient2", got "vegas")");
    CHECK(limit(R"({"min_limit": 300})") == "limit.min_limit: must be in [1, max_limit (200)], got 300");
    CHECK(error_of([] { (void)rj::read<resil::hedge_options>(nlohmann::json::parse(R"({"percentile": 1.5})"), "hedge"); }) ==
          "hedge.percentile: must be 0 (a fixed delay) or in (0, 1), got 1.5");
    CHECK(error_of([] {
              (void)rj::read<resil::deadline_policy_options>(nlohmann::json::parse(R"({"budget": "0s"})"), "deadline");
          }) == R"(deadline.budget: must be in [1ms, 24h], got "0s")");
}
