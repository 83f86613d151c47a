// Events and metrics from a whole pipeline — fallback → deadline → retry
// (budget) → breaker → timeout — driven through a scripted failure sequence
// on the manual clock: the exact event sequence, the counters, the time the
// breaker spent open, the attempt latency histogram, and the Prometheus
// export (one dependency, and several at once) parsed back by a checker of
// the text format.
#include <resil/adaptive_limit.hpp>
#include <resil/circuit_breaker.hpp>
#include <resil/concurrency_limit.hpp>
#include <resil/deadline_policy.hpp>
#include <resil/events.hpp>
#include <resil/fallback.hpp>
#include <resil/metrics.hpp>
#include <resil/paced_bucket.hpp>
#include <resil/pipeline.hpp>
#include <resil/retry.hpp>
#include <resil/retry_budget.hpp>
#include <resil/testing/manual_clock.hpp>
#include <resil/timeout_policy.hpp>
#include <resil/token_bucket.hpp>

#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <type_traits>
#include <vector>

#include "catch.hpp"
#include "support/allocation_counter.hpp"

using namespace std::chrono_literals;
using resil::circuit_state;
using resil::duration;
using resil::reason;
using resil::time_point;
using resil::verdict;
using resil::testing::manual_clock;
namespace events = resil::events;

namespace {

// ---------------------------------------------------------------------------
// Events as one line each, so a whole sequence compares (and prints) at once.

std::string ms(duration d) {
    return std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(d).count()) + "ms";
}

std::string number(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", v);
    return buf;
}

struct describer {
    time_point origin;  // breaker transitions print their time relative to this

    std::string operator()(const events::attempt_started& e) const {
        return "attempt_started " + std::to_string(e.attempt);
    }
    std::string operator()(const events::attempt_finished& e) const {
        return "attempt_finished " + std::to_string(e.attempt) + " " + std::string(to_string(e.verdict)) + " " +
               ms(e.elapsed);
    }
    std::string operator()(const events::retry_scheduled& e) const {
        return "retry_scheduled " + std::to_string(e.attempt) + " " + ms(e.delay) + " " +
               std::string(to_string(e.verdict)) + (e.from_retry_after ? " retry-after" : "");
    }
    std::string operator()(const events::retries_exhausted& e) const {
        return "retries_exhausted " + std::to_string(e.attempts);
    }
    std::string operator()(const events::budget_refused& e) const {
        return "budget_refused " + std::to_string(e.attempt);
    }
    std::string operator()(const events::breaker_state_changed& e) const {
        return "breaker " + std::string(to_string(e.from)) + "->" + std::string(to_string(e.to)) + " " +
               number(e.failure_ratio) + " " + std::to_string(e.calls_in_window) + " @" + ms(e.at - origin);
    }
    std::string operator()(const events::rejected& e) const {
        return "rejected " + std::string(to_string(e.reason)) + " " + (e.retry_after ? ms(*e.retry_after) : "-");
    }
    std::string operator()(const events::fallback_used& e) const {
        return "fallback_used " + std::string(to_string(e.reason));
    }
    std::string operator()(const events::call_finished& e) const {
        return "call_finished " + std::string(to_string(e.reason)) + " " + std::to_string(e.attempts) +
               (e.from_fallback ? " fallback" : "");
    }
    std::string operator()(const events::deadline_exceeded& e) const {
        return "deadline_exceeded " + std::to_string(e.attempts);
    }
};

// ---------------------------------------------------------------------------
// The dependency: each attempt takes the next scripted reply.

struct reply {
    int status = 200;
    std::optional<duration> retry_after{};
};

resil::classification classify(const reply& r) {
    if (r.status < 400) return verdict::success;
    if (r.status == 429 || r.status >= 500) return {verdict::retryable, resil::server_hint{r.retry_after, false}};
    return verdict::permanent;
}

struct step {
    reply answer;
    duration takes = 10ms;
};

using breaker_type = resil::basic_circuit_breaker<manual_clock>;

// A listener that asks the pipeline to time each attempt.
template <class F>
struct timed_listener {
    static constexpr bool times_attempts = true;
    F f;
    template <class Event>
    void operator()(const Event& e) const {
        f(e);
    }
};
template <class F>
timed_listener(F) -> timed_listener<F>;

// Everything one run needs, built the same way for every listener.
struct rig {
    manual_clock clock;
    time_point origin = clock.now();
    resil::metrics metrics{"triton"};
    std::vector<events::breaker_state_changed> hooked;  // what the breaker's own hook saw
    resil::retry_budget budget{{.ratio = 0.0, .min_per_second = 3, .window = 1s}};  // 3 retries a second
    breaker_type breaker{{.failure_ratio = 0.5,
                          .window = 10s,
                          .min_calls = 5,
                          .open_for = 30s,
                          .half_open_probes = 1,
                          .on_state_change =
                              [this](const events::breaker_state_changed& e) {
                                  metrics.breaker_hook()(e);
                                  hooked.push_back(e);
                              }},
                         clock};
    resil::fallback_policy<reply (*)()> plan_b{[] { return reply{-1}; }};
    std::deque<step> script;

    rig() = default;
    rig(const rig&) = delete;
    rig& operator=(const rig&) = delete;

    template <class Listener>
    auto pipeline(Listener listener) {
        return resil::pipeline(clock, plan_b, resil::deadline_policy{5s},
                               resil::retry_policy{{.max_attempts = 3,
                                                    .backoff = resil::exponential_backoff{100ms, 1s},
                                                    .budget = &budget}},
                               std::ref(breaker), resil::timeout_policy{{.total = 1s}})
            .with_listener(std::move(listener));
    }

    auto dependency() {
        return [this] {
            REQUIRE_FALSE(script.empty());
            const auto s = script.front();
            script.pop_front();
            clock.advance(s.takes);
            return s.answer;
        };
    }
};

// The scripted sequence: seven calls, one per line of the story.
template <class Pipeline>
std::vector<resil::reason> run_script(rig& r, const Pipeline& pipe) {
    std::vector<resil::reason> outcomes;
    auto call = [&](std::initializer_list<step> steps) {
        r.script.assign(steps.begin(), steps.end());
        auto out = pipe(r.dependency());
        CHECK(r.script.empty());
        outcomes.push_back(out.ok() ? out.fallback_reason() : out.reason());
    };
    // A: two 503s, then a 200 (two retries from the budget's three).
    call({{{503}}, {{503}}, {{200}}});
    // B: the second 503 opens the breaker; the budget refuses the retry.
    call({{{503}}, {{503}}});
    // C: the breaker is open: rejected before any attempt.
    call({});
    r.clock.advance(30s);
    // D: after open_for, one probe succeeds and closes it.
    call({{{200}}});
    // E: three 503s: retries exhausted.
    call({{{503}}, {{503}}, {{503}}});
    // F: a 429 with Retry-After: 1 s is honoured; then a 404 is permanent.
    call({{{429, 1s}}, {{404}}});
    // G: an attempt slower than the whole deadline: deadline exceeded, and
    //    the breaker opens again.
    call({{{503}, 6s}});
    return outcomes;
}

const std::vector<reason> expected_outcomes{reason::none,
                                            reason::budget_exhausted,
                                            reason::circuit_open,
                                            reason::none,
                                            reason::retries_exhausted,
                                            reason::failed,
                                            reason::deadline_exceeded};

// ---------------------------------------------------------------------------
// A small checker of the Prometheus text exposition format (0.0.4).

struct prometheus_sample {
    std::string name;
    std::map<std::string, std::string> labels;  // unescaped values
    double value = 0;
};

struct prometheus_parse {
    std::vector<prometheus_sample> samples;
    std::map<std::string, std::string> types;  // metric → type
    std::vector<std::string> errors;

    [[nodiscard]] std::optional<double> value(std::string_view name,
                                              const std::map<std::string, std::string>& labels) const {
        for (const auto& s : samples)
            if (s.name == name && s.labels == labels) return s.value;
        return std::nullopt;
    }
};

bool valid_metric_name(std::string_view n) {
    if (n.empty()) return false;
    for (std::size_t i = 0; i < n.size(); ++i) {
        const auto c = static_cast<unsigned char>(n[i]);
        const bool ok = std::isalpha(c) || c == '_' || c == ':' || (i > 0 && std::isdigit(c));
        if (!ok) return false;
    }
    return true;
}

bool valid_label_name(std::string_view n) {
    if (n.empty()) return false;
    for (std::size_t i = 0; i < n.size(); ++i) {
        const auto c = static_cast<unsigned char>(n[i]);
        const bool ok = std::isalpha(c) || c == '_' || (i > 0 && std::isdigit(c));
        if (!ok) return false;
    }
    return true;
}

prometheus_parse parse_prometheus(std::string_view text) {
    prometheus_parse out;
    std::set<std::string> helped;
    std::set<std::string> series;
    struct histogram_state {
        std::size_t buckets = 0;
        double last_bound = 0;
        double last_count = 0;
        bool saw_inf = false;
    };
    std::map<std::string, histogram_state> histograms;  // family and labels but le → its buckets so far
    auto fail = [&](std::size_t line_no, std::string_view line, const std::string& why) {
        out.errors.push_back("line " + std::to_string(line_no) + " (" + std::string(line) + "): " + why);
    };
    if (text.empty() || text.back() != '\n') out.errors.push_back("the text must end with a newline");
    std::size_t line_no = 0;
    for (std::size_t pos = 0; pos < text.size();) {
        const auto end = text.find('\n', pos);
        const auto line = text.substr(pos, end - pos);
        pos = end == std::string_view::npos ? text.size() : end + 1;
        ++line_no;
        if (line.empty()) {
            fail(line_no, line, "empty line");
            continue;
        }
        if (line.front() == '#') {
            // "# HELP name text" or "# TYPE name type"; nothing else is expected.
            const bool help = line.starts_with("# HELP ");
            const bool type = line.starts_with("# TYPE ");
            if (!help && !type) {
                fail(line_no, line, "a comment other than HELP or TYPE");
                continue;
            }
            const auto rest = line.substr(7);
            const auto space = rest.find(' ');
            const auto name = std::string(rest.substr(0, space));
            const auto tail = space == std::string_view::npos ? std::string_view{} : rest.substr(space + 1);
            if (!valid_metric_name(name)) fail(line_no, line, "invalid metric name");
            if (help) {
                if (!helped.insert(name).second) fail(line_no, line, "second HELP for " + name);
                if (tail.empty()) fail(line_no, line, "empty HELP text");
                for (std::size_t i = 0; i < tail.size(); ++i)
                    if (tail[i] == '\\' && (i + 1 == tail.size() || (tail[i + 1] != '\\' && tail[i + 1] != 'n')))
                        fail(line_no, line, "bad escape in HELP text");
            } else {
                static const std::set<std::string_view> kinds{"counter", "gauge", "histogram", "summary", "untyped"};
                if (!kinds.contains(tail)) fail(line_no, line, "unknown type");
                if (out.types.contains(name)) fail(line_no, line, "second TYPE for " + name);
                for (const auto& s : out.samples)
                    if (s.name == name) fail(line_no, line, "TYPE after a sample of " + name);
                out.types[name] = std::string(tail);
                if (tail == "counter" && !name.ends_with("_total"))
                    fail(line_no, line, "a counter's name must end in _total");
            }
            continue;
        }
        // name{label="value",...} value
        prometheus_sample s;
        std::size_t i = 0;
        while (i < line.size() && line[i] != '{' && line[i] != ' ') ++i;
        s.name = std::string(line.substr(0, i));
        if (!valid_metric_name(s.name)) fail(line_no, line, "invalid metric name");
        if (i < line.size() && line[i] == '{') {
            ++i;
            while (i < line.size() && line[i] != '}') {
                std::size_t j = i;
                while (j < line.size() && line[j] != '=') ++j;
                const auto label = std::string(line.substr(i, j - i));
                if (!valid_label_name(label)) fail(line_no, line, "invalid label name '" + label + "'");
                if (j + 1 >= line.size() || line[j + 1] != '"') {
                    fail(line_no, line, "label value not quoted");
                    break;
                }
                std::string value;
                bool closed = false;
                for (j += 2; j < line.size(); ++j) {
                    if (line[j] == '\\') {
                        if (j + 1 >= line.size()) break;
                        const char next = line[++j];
                        if (next == 'n')
                            value += '\n';
                        else if (next == '\\' || next == '"')
                            value += next;
                        else
                            fail(line_no, line, "bad escape in a label value");
                    } else if (line[j] == '"') {
                        closed = true;
                        break;
                    } else {
                        value += line[j];
                    }
                }
                if (!closed) {
                    fail(line_no, line, "unterminated label value");
                    break;
                }
                if (!s.labels.emplace(label, value).second) fail(line_no, line, "repeated label " + label);
                i = j + 1;
                if (i < line.size() && line[i] == ',') ++i;
            }
            if (i >= line.size() || line[i] != '}') {
                fail(line_no, line, "labels not closed");
                continue;
            }
            ++i;
        }
        if (i >= line.size() || line[i] != ' ') {
            fail(line_no, line, "no value");
            continue;
        }
        const auto value_text = std::string(line.substr(i + 1));
        char* parsed_end = nullptr;
        s.value = std::strtod(value_text.c_str(), &parsed_end);
        if (value_text.empty() || parsed_end != value_text.c_str() + value_text.size())
            fail(line_no, line, "value is not a number");
        // A histogram's samples are <family>_bucket (with an `le` label),
        // <family>_sum and <family>_count.
        std::string family = s.name;
        std::string_view part;
        for (std::string_view suffix : {"_bucket", "_sum", "_count"}) {
            if (!s.name.ends_with(suffix)) continue;
            const auto base = s.name.substr(0, s.name.size() - suffix.size());
            const auto t = out.types.find(base);
            if (t != out.types.end() && t->second == "histogram") {
                family = base;
                part = suffix;
            }
        }
        const auto type = out.types.find(family);
        if (type == out.types.end()) {
            fail(line_no, line, "sample before its TYPE line");
        } else if (type->second == "counter" && !(s.value >= 0)) {
            fail(line_no, line, "a counter must be non-negative");
        } else if (type->second == "histogram") {
            if (part.empty()) fail(line_no, line, "a histogram's sample is not _bucket, _sum or _count");
            if ((part == "_bucket") != s.labels.contains("le"))
                fail(line_no, line, "`le` belongs on a histogram's buckets, and only there");
            if (part != "_sum" && !(s.value >= 0)) fail(line_no, line, "a histogram count must be non-negative");
            if ((part == "_bucket" && s.labels.contains("le")) || part == "_count") {
                // Buckets in increasing `le`, cumulative, the last +Inf and
                // equal to _count.
                auto labels = s.labels;
                labels.erase("le");
                std::string key = family;
                for (const auto& [k, v] : labels) key += "|" + k + "=" + v;
                auto& h = histograms[key];
                if (part == "_count") {
                    if (!h.saw_inf) fail(line_no, line, "_count before the +Inf bucket");
                    if (h.last_count != s.value) fail(line_no, line, "_count differs from the +Inf bucket");
                } else {
                    const auto& le = s.labels.at("le");
                    char* le_end = nullptr;
                    const double bound = le == "+Inf" ? HUGE_VAL : std::strtod(le.c_str(), &le_end);
                    if (le != "+Inf" && (le.empty() || le_end != le.c_str() + le.size()))
                        fail(line_no, line, "`le` is not a number");
                    if (h.saw_inf) fail(line_no, line, "a bucket after +Inf");
                    if (h.buckets > 0 && !(bound > h.last_bound)) fail(line_no, line, "buckets not in increasing le");
                    if (h.buckets > 0 && s.value < h.last_count) fail(line_no, line, "buckets not cumulative");
                    h.saw_inf = le == "+Inf";
                    h.last_bound = bound;
                    h.last_count = s.value;
                    ++h.buckets;
                }
            }
        }
        std::string key = s.name;
        for (const auto& [k, v] : s.labels) key += "|" + k + "=" + v;
        if (!series.insert(key).second) fail(line_no, line, "duplicate series");
        out.samples.push_back(std::move(s));
    }
    for (const auto& [key, h] : histograms)
        if (!h.saw_inf) out.errors.push_back("histogram " + key + " has no +Inf bucket");
    return out;
}

}  // namespace

TEST_CASE("metrics: a scripted failure sequence gives the exact events and counters") {
    rig r;
    const describer describe{r.origin};
    std::vector<std::string> log;
    // One generic lambda sees every event, with attempt durations; it also
    // feeds the counters.
    const auto pipe = r.pipeline(timed_listener{[&](const auto& event) {
        log.push_back(describe(event));
        if constexpr (resil::listens_to<resil::metrics, std::remove_cvref_t<decltype(event)>>) r.metrics(event);
    }});

    CHECK(run_script(r, pipe) == expected_outcomes);

    const std::vector<std::string> expected{
        // A
        "attempt_started 1", "attempt_finished 1 retryable 10ms", "retry_scheduled 1 200ms retryable",
        "attempt_started 2", "attempt_finished 2 retryable 10ms", "retry_scheduled 2 400ms retryable",
        "attempt_started 3", "attempt_finished 3 success 10ms", "call_finished none 3",
        // B
        "attempt_started 1", "attempt_finished 1 retryable 10ms", "retry_scheduled 1 200ms retryable",
        "attempt_started 2", "attempt_finished 2 retryable 10ms", "breaker closed->open 0.8 5 @850ms",
        "budget_refused 2", "fallback_used budget_exhausted", "call_finished budget_exhausted 2 fallback",
        // C: one rejection, however many policies it passes through
        "rejected circuit_open 30000ms", "fallback_used circuit_open", "call_finished circuit_open 0 fallback",
        // D
        "breaker open->half_open 0 0 @30850ms", "attempt_started 1", "attempt_finished 1 success 10ms",
        "breaker half_open->closed 0 1 @30860ms", "call_finished none 1",
        // E
        "attempt_started 1", "attempt_finished 1 retryable 10ms", "retry_scheduled 1 200ms retryable",
        "attempt_started 2", "attempt_finished 2 retryable 10ms", "retry_scheduled 2 400ms retryable",
        "attempt_started 3", "attempt_finished 3 retryable 10ms", "retries_exhausted 3",
        "fallback_used retries_exhausted", "call_finished retries_exhausted 3 fallback",
        // F
        "attempt_started 1", "attempt_finished 1 retryable 10ms", "retry_scheduled 1 1000ms retryable retry-after",
        "attempt_started 2", "attempt_finished 2 permanent 10ms", "fallback_used failed",
        "call_finished failed 2 fallback",
        // G
        "attempt_started 1", "attempt_finished 1 retryable 6000ms", "breaker closed->open 0.833333 6 @38510ms",
        "deadline_exceeded 1", "fallback_used deadline_exceeded", "call_finished deadline_exceeded 1 fallback"};
    CHECK(log == expected);

    // The breaker's own hook saw the same four transitions, with their times.
    std::vector<std::string> hooked;
    for (const auto& e : r.hooked) hooked.push_back(describe(e));
    CHECK(hooked == std::vector<std::string>{"breaker closed->open 0.8 5 @850ms", "breaker open->half_open 0 0 @30850ms",
                                             "breaker half_open->closed 0 1 @30860ms",
                                             "breaker closed->open 0.833333 6 @38510ms"});

    const auto s = r.metrics.snapshot();
    CHECK(s.calls == 7);
    CHECK(s.successes == 2);
    CHECK(s.attempts == 12);
    CHECK(s.retries == 6);
    CHECK(s.retries_after_server_hint == 1);
    CHECK(s.retries_exhausted == 1);  // once per call that ran out, not once per attempt
    CHECK(s.budget_refusals == 1);
    CHECK(s.deadlines_exceeded == 1);
    // The breaker's rejection passed through retry, deadline and fallback:
    // counted once.
    CHECK(s.rejections[reason::circuit_open] == 1);
    CHECK(s.rejections.total() == 1);
    for (auto why : {reason::budget_exhausted, reason::circuit_open, reason::retries_exhausted, reason::failed,
                     reason::deadline_exceeded}) {
        CHECK(s.failures[why] == 1);
        CHECK(s.fallbacks[why] == 1);
    }
    CHECK(s.failures.total() == 5);
    CHECK(s.fallbacks.total() == 5);
    CHECK(s.fallbacks == s.failures);
    // Every plan B is counted by reason, and agrees with the fallback's own counters.
    for (std::size_t i = 0; i < resil::reason_count; ++i)
        CHECK(r.plan_b.metrics().by_reason[i] == s.fallbacks.by_reason[i]);
    CHECK(s.breaker_opened == 2);
    CHECK(s.breaker_half_opened == 1);
    CHECK(s.breaker_closed == 1);
    // Open from 850 ms to 30 850 ms; the second open period has not ended.
    CHECK(s.time_open == 30s);
    CHECK(r.metrics.snapshot(r.clock.now() + 5s).time_open == 35s);
    CHECK(s.calls == s.successes + s.failures.total());
}

TEST_CASE("metrics: std::ref(metrics) as the only listener counts the same") {
    rig traced;
    std::vector<std::string> ignored;
    const describer describe{traced.origin};
    const auto traced_pipe = traced.pipeline([&](const auto& event) {
        ignored.push_back(describe(event));
        if constexpr (resil::listens_to<resil::metrics, std::remove_cvref_t<decltype(event)>>) traced.metrics(event);
    });
    run_script(traced, traced_pipe);

    rig plain;
    const auto pipe = plain.pipeline(std::ref(plain.metrics));
    CHECK(run_script(plain, pipe) == expected_outcomes);
    CHECK(plain.metrics.snapshot() == traced.metrics.snapshot());
    // The transitions the pipeline forwards are not counted a second time.
    CHECK(plain.metrics.snapshot().breaker_opened == 2);
}

TEST_CASE("metrics: the breaker's transitions are counted through its hook, not the pipeline listener") {
    // A metrics object does not handle breaker_state_changed as a listener:
    // the pipeline forwards the transitions its calls cause, the breaker's hook
    // reports all of them (reset() too), and counting both would double them.
    STATIC_REQUIRE_FALSE(resil::listens_to<resil::metrics, events::breaker_state_changed>);
    STATIC_REQUIRE(resil::listens_to<resil::metrics, events::rejected>);
    STATIC_REQUIRE(
        std::is_invocable_v<resil::metrics::breaker_hook_type, const events::breaker_state_changed&>);

    manual_clock clock;
    resil::metrics m{"dep"};
    breaker_type breaker{{.min_calls = 1, .open_for = 1s, .on_state_change = m.breaker_hook()}, clock};
    breaker.isolate();  // outside any call
    clock.advance(250ms);
    CHECK(m.snapshot(clock.now()).time_open == 250ms);
    breaker.reset();
    auto s = m.snapshot();
    CHECK(s.breaker_opened == 1);
    CHECK(s.breaker_closed == 1);
    CHECK(s.time_open == 250ms);
    CHECK(m.snapshot(clock.now() + 1h).time_open == 250ms);  // closed: nothing more accrues
}

TEST_CASE("metrics: a rate-limit rejection passing through retry and fallback is counted once") {
    manual_clock clock;
    resil::basic_token_bucket<manual_clock> bucket{{.rate = 50, .burst = 1}, clock};
    resil::metrics m{"bucketed"};
    std::vector<std::string> log;
    const describer describe{clock.now()};
    const auto pipe =
        resil::pipeline(clock, resil::fallback_policy{[] { return 0; }}, resil::deadline_policy{1s},
                        resil::retry_policy{}, std::ref(bucket))
            .with_listener([&](const auto& event) {
                log.push_back(describe(event));
                if constexpr (resil::listens_to<resil::metrics, std::remove_cvref_t<decltype(event)>>) m(event);
            });
    CHECK(pipe([] { return 1; }, resil::always_success).value() == 1);
    log.clear();
    auto out = pipe([] { return 1; }, resil::always_success);
    CHECK(out.fallback_reason() == reason::rate_limited);
    CHECK(log == std::vector<std::string>{"rejected rate_limited 20ms", "fallback_used rate_limited",
                                          "call_finished rate_limited 0 fallback"});
    const auto s = m.snapshot();
    CHECK(s.rejections[reason::rate_limited] == 1);
    CHECK(s.rejections.total() == 1);
    CHECK(s.failures[reason::rate_limited] == 1);
    CHECK(s.attempts == 1);
    CHECK(s.calls == 2);
}

TEST_CASE("metrics: counters are exact under concurrent calls") {
    resil::metrics m{"concurrent"};
    resil::concurrency_limit limit{{.max_in_flight = 1'000}};
    const auto pipe = resil::pipeline(resil::retry_policy{{.max_attempts = 2,
                                                            .backoff = resil::exponential_backoff{1ns, 1ns}}},
                                      std::ref(limit))
                          .with_listener(std::ref(m));
    constexpr int threads = 4;
    constexpr int calls = 2'000;
    std::vector<std::thread> workers;
    for (int t = 0; t < threads; ++t)
        workers.emplace_back([&] {
            for (int i = 0; i < calls; ++i) {
                int attempt = 0;
                (void)pipe([&] { return ++attempt; },
                           [](int a) { return a == 1 ? verdict::retryable : verdict::success; });
            }
        });
    for (auto& w : workers) w.join();
    const auto s = m.snapshot();
    CHECK(s.calls == threads * calls);
    CHECK(s.successes == threads * calls);
    CHECK(s.attempts == 2 * threads * calls);
    CHECK(s.retries == threads * calls);
}

TEST_CASE("metrics: the Prometheus export is valid text format, with every counter of the parts it has") {
    rig r;
    const auto pipe = r.pipeline(std::ref(r.metrics));
    run_script(r, pipe);
    const auto text = r.metrics.prometheus();
    const auto parsed = parse_prometheus(text);
    INFO(text);
    CHECK(parsed.errors == std::vector<std::string>{});

    const std::map<std::string, std::string> triton{{"policy", "triton"}};
    auto with = [&](std::string k, std::string v) {
        auto labels = triton;
        labels.emplace(std::move(k), std::move(v));
        return labels;
    };
    CHECK(parsed.value("resil_calls_total", triton) == 7.0);
    CHECK(parsed.value("resil_successes_total", triton) == 2.0);
    CHECK(parsed.value("resil_attempts_total", triton) == 12.0);
    CHECK(parsed.value("resil_retries_total", triton) == 6.0);
    CHECK(parsed.value("resil_retries_after_server_hint_total", triton) == 1.0);
    CHECK(parsed.value("resil_retries_exhausted_total", triton) == 1.0);
    CHECK(parsed.value("resil_budget_refusals_total", triton) == 1.0);
    CHECK(parsed.value("resil_deadlines_exceeded_total", triton) == 1.0);
    CHECK(parsed.value("resil_rejections_total", with("reason", "circuit_open")) == 1.0);
    // No rate limiter: no series for its reason (until one is declared or counted).
    CHECK_FALSE(parsed.value("resil_rejections_total", with("reason", "rate_limited")).has_value());
    CHECK(parsed.value("resil_failures_total", with("reason", "retries_exhausted")) == 1.0);
    CHECK(parsed.value("resil_fallbacks_total", with("reason", "budget_exhausted")) == 1.0);
    CHECK(parsed.value("resil_breaker_transitions_total", with("to", "open")) == 2.0);
    CHECK(parsed.value("resil_breaker_transitions_total", with("to", "half_open")) == 1.0);
    CHECK(parsed.value("resil_breaker_transitions_total", with("to", "closed")) == 1.0);
    CHECK(parsed.value("resil_breaker_open_seconds_total", triton) == 30.0);
    // "none" is not a reason for a failure: no such series.
    CHECK_FALSE(parsed.value("resil_failures_total", with("reason", "none")).has_value());
    // Every reason of the parts the dependency has (a retry and a fallback,
    // seen; a breaker, hooked) has its series, so a rate() over a reason that
    // never happened yet reads 0 rather than nothing; the others have none,
    // and rejections have none for the reasons that end calls but never
    // refuse one (failed, the retry's).
    using part = resil::metrics::part;
    CHECK(r.metrics.parts() == (part::retry | part::breaker | part::fallback));
    std::size_t reasons = 0;
    for (std::size_t i = 1; i < resil::reason_count; ++i) {
        const auto why = static_cast<reason>(i);
        const auto name = std::string(to_string(why));
        INFO(name);
        const bool expected = resil::metrics::reason_belongs(why, r.metrics.parts());
        reasons += expected ? 1 : 0;
        CHECK(parsed.value("resil_rejections_total", with("reason", name)).has_value() ==
              (expected && resil::metrics::reason_rejects(why)));
        CHECK(parsed.value("resil_fallbacks_total", with("reason", name)).has_value() == expected);
        CHECK(parsed.value("resil_failures_total", with("reason", name)).has_value() == expected);
    }
    CHECK(reasons == 10);  // failed, deadline_exceeded, cancelled; six of the retry; circuit_open
    for (const auto& [name, type] : parsed.types) CHECK(type == (name == "resil_breaker_open" ? "gauge" : "counter"));
    CHECK(parsed.value("resil_breaker_open", triton) == 1.0);  // opened again by the script's end
    // snapshot(now) counts the open period still running.
    const auto later = parse_prometheus(r.metrics.prometheus(r.clock.now() + 1500ms));
    CHECK(later.value("resil_breaker_open_seconds_total", triton) == 31.5);
}

TEST_CASE("metrics: label values are escaped in the Prometheus export") {
    const std::string awkward = "db \"primary\"\\eu\nwest";
    resil::metrics m{awkward};
    m(events::rejected{reason::shed, std::nullopt});
    const auto text = m.prometheus();
    CHECK(text.find(R"(resil_rejections_total{policy="db \"primary\"\\eu\nwest",reason="shed"} 1)") != std::string::npos);
    const auto parsed = parse_prometheus(text);
    CHECK(parsed.errors == std::vector<std::string>{});
    CHECK(parsed.value("resil_rejections_total", {{"policy", awkward}, {"reason", "shed"}}) == 1.0);
}

TEST_CASE("metrics: the Prometheus checker rejects what is not the text format") {
    // The checker itself: each of these must be caught.
    const std::vector<std::string> bad{
        "resil_calls_total{policy=\"x\"} 1\n",                                        // no TYPE before it
        "# TYPE resil_calls counter\nresil_calls{policy=\"x\"} 1\n",                   // counter without _total
        "# TYPE resil_calls_total counter\nresil_calls_total{policy=\"x} 1\n",         // unterminated value
        "# TYPE resil_calls_total counter\nresil_calls_total{policy=\"a\\q\"} 1\n",    // bad escape
        "# TYPE resil_calls_total counter\nresil_calls_total{1abel=\"x\"} 1\n",        // bad label name
        "# TYPE resil-calls_total counter\nresil-calls_total 1\n",                     // bad metric name
        "# TYPE resil_calls_total counter\nresil_calls_total one\n",                   // not a number
        "# TYPE resil_calls_total counter\nresil_calls_total 1",                       // no final newline
        "# TYPE resil_calls_total counter\nresil_calls_total 1\nresil_calls_total 2\n",  // duplicate series
        "# a stray comment\n",                                                         // not HELP/TYPE
        "# TYPE resil_calls_total counter\nresil_calls_total -1\n",                    // negative counter
        "# TYPE resil_calls_total counter\n\nresil_calls_total 1\n",                   // empty line
    };
    for (const auto& text : bad) {
        INFO(text);
        CHECK_FALSE(parse_prometheus(text).errors.empty());
    }
    CHECK(parse_prometheus("# HELP a_total Things.\n# TYPE a_total counter\na_total{x=\"1\",y=\"\"} 3\n").errors.empty());
}

TEST_CASE("metrics: the Prometheus checker checks histograms") {
    const std::string head = "# HELP h_seconds H.\n# TYPE h_seconds histogram\n";
    CHECK(parse_prometheus(head + "h_seconds_bucket{le=\"0.1\"} 1\nh_seconds_bucket{le=\"+Inf\"} 2\n"
                                  "h_seconds_sum 0.5\nh_seconds_count 2\n")
              .errors.empty());
    const std::vector<std::string> bad{
        "h_seconds_bucket{le=\"0.1\"} 2\nh_seconds_bucket{le=\"+Inf\"} 1\nh_seconds_count 1\n",  // not cumulative
        "h_seconds_bucket{le=\"1\"} 1\nh_seconds_bucket{le=\"0.1\"} 1\nh_seconds_bucket{le=\"+Inf\"} 1\n",  // le order
        "h_seconds_bucket{le=\"0.1\"} 1\nh_seconds_count 1\n",                               // no +Inf
        "h_seconds_bucket{le=\"+Inf\"} 2\nh_seconds_count 3\n",                              // count differs
        "h_seconds_bucket 1\n",                                                                // bucket without le
        "h_seconds_count{le=\"1\"} 1\n",                                                       // le off a bucket
        "h_seconds_bucket{le=\"fast\"} 1\nh_seconds_bucket{le=\"+Inf\"} 1\n",                 // le not a number
        "h_seconds 1\n",                                                                       // bare family name
    };
    for (const auto& tail : bad) {
        INFO(tail);
        CHECK_FALSE(parse_prometheus(head + tail).errors.empty());
    }
}

namespace {

// The labels of `labels` with policy="x" renamed dependency="x".
std::map<std::string, std::string> as_dependency(std::map<std::string, std::string> labels) {
    const auto node = labels.extract("policy");
    if (!node.empty()) labels.emplace("dependency", node.mapped());
    return labels;
}

}  // namespace

TEST_CASE("metrics: prometheus_text writes several dependencies, each family's HELP and TYPE once") {
    rig r;
    const auto pipe = r.pipeline(std::ref(r.metrics));
    run_script(r, pipe);
    resil::metrics payments{"payments"};
    payments(events::attempt_started{1});
    payments(events::attempt_finished{1, verdict::success, 40ms});
    payments(events::call_finished{reason::none, 1, false, false});

    // What a user tried first: two single texts, each with its HELP and TYPE.
    CHECK_FALSE(parse_prometheus(r.metrics.prometheus() + payments.prometheus()).errors.empty());

    const auto text = resil::prometheus_text({r.metrics, payments});
    INFO(text);
    const auto parsed = parse_prometheus(text);
    CHECK(parsed.errors == std::vector<std::string>{});

    // Every counter of each object's own export, under dependency= instead of policy=.
    for (const auto* m : {&r.metrics, &payments}) {
        const auto own = parse_prometheus(m->prometheus());
        REQUIRE(own.errors.empty());
        for (const auto& sample : own.samples) {
            INFO(sample.name);
            CHECK(parsed.value(sample.name, as_dependency(sample.labels)) == sample.value);
        }
    }
    const std::map<std::string, std::string> triton{{"dependency", "triton"}};
    const std::map<std::string, std::string> pay{{"dependency", "payments"}};
    CHECK(parsed.value("resil_calls_total", triton) == 7.0);
    CHECK(parsed.value("resil_calls_total", pay) == 1.0);
    // payments has no breaker: no breaker series for it.
    CHECK_FALSE(parsed.value("resil_breaker_open_seconds_total", pay).has_value());
    CHECK_FALSE(parsed.value("resil_breaker_transitions_total", {{"dependency", "payments"}, {"to", "open"}}).has_value());
    CHECK_FALSE(parsed.value("resil_retries_total", pay).has_value());
    CHECK(parsed.value("resil_retries_total", triton) == 6.0);
    for (const auto& [name, type] : parsed.types)
        CHECK(type == (name == "resil_attempt_duration_seconds" || name == "resil_call_duration_seconds" ? "histogram"
                       : name == "resil_breaker_open"                                                   ? "gauge"
                                                                                                         : "counter"));
    // Pipeline families (7), the retry's (4), the breaker's (3), the histograms (2).
    CHECK(parsed.types.size() == 16);
    CHECK(parsed.value("resil_call_duration_seconds_count", triton) == 7.0);
    CHECK(parsed.value("resil_call_duration_seconds_count", pay) == 1.0);

    // Attempt durations, timed by the pipeline on the manual clock: eleven
    // attempts of 10 ms and one of 6 s.
    auto bucket = [&](const std::map<std::string, std::string>& who, std::string le) {
        auto labels = who;
        labels.emplace("le", std::move(le));
        return parsed.value("resil_attempt_duration_seconds_bucket", labels);
    };
    CHECK(bucket(triton, "0.005") == 0.0);
    CHECK(bucket(triton, "0.01") == 11.0);  // a duration equal to a bound counts in its bucket
    CHECK(bucket(triton, "5") == 11.0);
    CHECK(bucket(triton, "10") == 12.0);
    CHECK(bucket(triton, "+Inf") == 12.0);
    CHECK(parsed.value("resil_attempt_duration_seconds_count", triton) == 12.0);
    CHECK(parsed.value("resil_attempt_duration_seconds_sum", triton) == Approx(6.11));
    CHECK(bucket(pay, "0.025") == 0.0);
    CHECK(bucket(pay, "0.05") == 1.0);
    CHECK(bucket(pay, "+Inf") == 1.0);
    CHECK(parsed.value("resil_attempt_duration_seconds_sum", pay) == Approx(0.04));
    // Every bucket of the documented bounds, and +Inf.
    for (const auto bound : resil::latency_bucket_bounds) {
        char le[32];
        std::snprintf(le, sizeof le, "%g", std::chrono::duration<double>(bound).count());
        CHECK(bucket(pay, le).has_value());
    }
    CHECK(r.metrics.latencies().attempt.count() == 12);

    // A list built at run time, and the open period still running.
    const std::vector<std::reference_wrapper<const resil::metrics>> all{r.metrics, payments};
    CHECK(resil::prometheus_text(all) == text);
    const auto later = parse_prometheus(resil::prometheus_text(all, r.clock.now() + 1500ms));
    CHECK(later.value("resil_breaker_open_seconds_total", triton) == 31.5);
    std::string appended = "# HELP other_total Mine.\n# TYPE other_total counter\nother_total 1\n";
    resil::write_prometheus(appended, {r.metrics, payments});
    CHECK(parse_prometheus(appended).errors.empty());
    // No dependency: no families, no text.
    CHECK(resil::prometheus_text(std::span<const std::reference_wrapper<const resil::metrics>>{}).empty());
}

TEST_CASE("metrics: prometheus_text escapes the dependency label and refuses a repeated name") {
    const std::string awkward = "db \"primary\"\\eu\nwest";
    resil::metrics a{awkward};
    resil::metrics b{"plain"};
    a(events::rejected{reason::shed, std::nullopt});
    const auto text = resil::prometheus_text({a, b});
    CHECK(text.find(R"(resil_rejections_total{dependency="db \"primary\"\\eu\nwest",reason="shed"} 1)") !=
          std::string::npos);
    const auto parsed = parse_prometheus(text);
    CHECK(parsed.errors == std::vector<std::string>{});
    CHECK(parsed.value("resil_rejections_total", {{"dependency", awkward}, {"reason", "shed"}}) == 1.0);
    CHECK(parsed.value("resil_attempt_duration_seconds_bucket", {{"dependency", awkward}, {"le", "+Inf"}}) == 0.0);

    resil::metrics twin{"plain"};
    CHECK_THROWS_AS(resil::prometheus_text({a, b, twin}), std::invalid_argument);
}

TEST_CASE("metrics: a duration counts in the first bucket whose bound it does not exceed") {
    resil::metrics m;
    STATIC_REQUIRE(resil::listener_times_attempts<resil::metrics>);
    STATIC_REQUIRE(resil::latency_bucket_bounds.front() == 1ms);
    STATIC_REQUIRE(resil::latency_bucket_bounds.back() == 10s);
    auto record = [&](duration d) { m(events::attempt_finished{1, verdict::success, d}); };
    record(0ns);
    record(-5ms);  // a clock that went backwards: counted as zero
    record(1ms);
    record(1ms + 1ns);
    record(2500us);
    record(10s);
    record(10s + 1ns);
    record(1h);
    const auto h = m.latencies().attempt;
    CHECK(h.buckets[0] == 3);  // 0, -5 ms, 1 ms
    CHECK(h.buckets[1] == 2);  // 1 ms + 1 ns, 2.5 ms
    CHECK(h.buckets[12] == 1);  // 10 s
    CHECK(h.buckets[13] == 2);  // past 10 s: +Inf
    CHECK(h.count() == 8);
    CHECK(h.cumulative(0) == 3);
    CHECK(h.cumulative(12) == 6);
    CHECK(h.cumulative(13) == 8);
    CHECK(h.sum == 0ns + 1ms + 1ms + 1ns + 2500us + 10s + 10s + 1ns + 1h);
    // The counters are untouched by attempt_finished.
    CHECK(m.snapshot() == resil::metrics_snapshot{});
}

TEST_CASE("metrics: a pipeline times attempts for a metrics listener, with no allocation per call") {
    manual_clock clock;
    resil::metrics m{"timed"};
    const auto pipe = resil::pipeline(clock, resil::retry_policy{{.max_attempts = 2,
                                                                   .backoff = resil::exponential_backoff{1ms, 1ms}}})
                          .with_listener(std::ref(m));
    auto call = [&] {
        int attempt = 0;
        return pipe(
            [&] {
                clock.advance(++attempt == 1 ? 30ms : 200ms);
                return attempt;
            },
            [](int a) { return a == 1 ? verdict::retryable : verdict::success; });
    };
    CHECK(call().ok());
    const auto before = resil_test::allocations.load();
    for (int i = 0; i < 100; ++i) (void)call();
    CHECK(resil_test::allocations.load() == before);
    const auto h = m.latencies().attempt;
    CHECK(h.count() == 202);
    CHECK(h.buckets[5] == 101);  // 30 ms: (25 ms, 50 ms]
    CHECK(h.buckets[7] == 101);  // 200 ms: (100 ms, 250 ms]
    CHECK(h.sum == 101 * 230ms);
}

TEST_CASE("metrics: the latency histogram is exact under concurrent recording") {
    resil::metrics m{"concurrent"};
    constexpr int threads = 4;
    constexpr int per_thread = 5'000;
    std::vector<std::thread> workers;
    for (int t = 0; t < threads; ++t)
        workers.emplace_back([&m, t] {
            for (int i = 0; i < per_thread; ++i)
                m(events::attempt_finished{1, verdict::success, t % 2 == 0 ? 3ms : 700ms});
        });
    for (auto& w : workers) w.join();
    const auto h = m.latencies().attempt;
    CHECK(h.count() == threads * per_thread);
    CHECK(h.buckets[2] == 2 * per_thread);   // 3 ms: (2.5 ms, 5 ms]
    CHECK(h.buckets[9] == 2 * per_thread);   // 700 ms: (500 ms, 1 s]
    CHECK(h.sum == 2 * per_thread * (3ms + 700ms));
}

TEST_CASE("metrics: the call latency histogram holds whole calls, waits between attempts included") {
    resil::testing::manual_clock clock;
    resil::metrics m{"inventory"};
    const auto pipe = resil::pipeline(clock, resil::retry_policy{{.max_attempts = 3,
                                                                  .backoff = resil::exponential_backoff{100ms, 1s}}})
                          .with_listener(std::ref(m));
    int calls = 0;
    // 10 ms that fail, the backoff's wait, 20 ms that succeed.
    const auto began = clock.now();
    const auto out = pipe([&] {
        clock.advance(++calls == 1 ? 10ms : 20ms);
        return calls == 1 ? resil::classification{verdict::retryable} : resil::classification{verdict::success};
    }, [](const resil::classification& c) { return c; });
    REQUIRE(out.ok());
    const auto took = clock.now() - began;
    const auto latencies = m.latencies();
    CHECK(latencies.attempt.count() == 2);
    CHECK(latencies.attempt.sum == 30ms);
    REQUIRE(latencies.call.count() == 1);
    CHECK(took > 30ms);  // the wait counts too
    CHECK(latencies.call.sum == took);
    // In the first bucket whose bound is at least the call's duration.
    for (std::size_t i = 0; i < resil::latency_bucket_bounds.size(); ++i)
        CHECK(latencies.call.cumulative(i) == (took <= resil::latency_bucket_bounds[i] ? 1u : 0u));

    const auto parsed = parse_prometheus(resil::prometheus_text({m}));
    CHECK(parsed.errors == std::vector<std::string>{});
    const std::map<std::string, std::string> inventory{{"dependency", "inventory"}};
    CHECK(parsed.types.at("resil_call_duration_seconds") == "histogram");
    CHECK(parsed.value("resil_call_duration_seconds_count", inventory) == 1.0);
    CHECK(parsed.value("resil_call_duration_seconds_sum", inventory) == Approx(std::chrono::duration<double>(took).count()));
}

TEST_CASE("metrics: every counter and histogram, kept in per-thread stripes, is exact from many threads, read while written") {
    resil::metrics m{"striped"};
    constexpr int threads = 12;
    constexpr int per_thread = 3'000;
    std::atomic<bool> writing{true};
    std::atomic<std::uint64_t> reads{0};
    std::thread reader([&] {
        // Sums of stripes being written: never more than what was written in all.
        while (writing.load()) {
            const auto s = m.snapshot();
            const auto l = m.latencies();
            CHECK(s.calls <= std::uint64_t{threads} * per_thread);
            CHECK(l.attempt.count() <= 2 * std::uint64_t{threads} * per_thread);
            reads.fetch_add(1);
        }
    });
    {
        std::vector<std::jthread> pool;
        for (int t = 0; t < threads; ++t)
            pool.emplace_back([&m, t] {
                for (int i = 0; i < per_thread; ++i) {
                    m(events::attempt_started{.attempt = 1});
                    m(events::attempt_finished{.attempt = 1, .verdict = verdict::retryable, .elapsed = 3ms});
                    m(events::retry_scheduled{.attempt = 1, .delay = 1ms, .from_retry_after = i % 2 == 0});
                    m(events::attempt_started{.attempt = 2});
                    m(events::attempt_finished{.attempt = 2, .verdict = verdict::success, .elapsed = 700ms});
                    if (t % 3 == 0) {
                        m(events::rejected{.reason = reason::circuit_open});
                        m(events::fallback_used{.reason = reason::circuit_open});
                        m(events::budget_refused{.attempt = 1});
                    }
                    if (t % 3 == 1) {
                        m(events::retries_exhausted{.attempts = 2});
                        m(events::deadline_exceeded{.attempts = 2});
                    }
                    const auto why = t % 3 == 0 ? reason::circuit_open : reason::none;
                    m(events::call_finished{.reason = why, .attempts = 2, .elapsed = 710ms});
                }
            });
    }
    writing = false;
    reader.join();
    CHECK(reads.load() > 0);
    constexpr auto all = std::uint64_t{threads} * per_thread;
    constexpr auto third = all / 3;  // threads 0, 3, 6, 9 / 1, 4, 7, 10 / 2, 5, 8, 11
    const auto s = m.snapshot();
    CHECK(s.calls == all);
    CHECK(s.attempts == 2 * all);
    CHECK(s.retries == all);
    CHECK(s.retries_after_server_hint == all / 2);
    CHECK(s.successes == all - third);
    CHECK(s.failures.by_reason[static_cast<std::size_t>(reason::circuit_open)] == third);
    CHECK(s.rejections.by_reason[static_cast<std::size_t>(reason::circuit_open)] == third);
    CHECK(s.fallbacks.by_reason[static_cast<std::size_t>(reason::circuit_open)] == third);
    CHECK(s.budget_refusals == third);
    CHECK(s.retries_exhausted == third);
    CHECK(s.deadlines_exceeded == third);
    const auto l = m.latencies();
    CHECK(l.attempt.count() == 2 * all);
    CHECK(l.attempt.buckets[2] == all);  // 3 ms: (2.5 ms, 5 ms]
    CHECK(l.attempt.buckets[9] == all);  // 700 ms: (500 ms, 1 s]
    CHECK(l.attempt.sum == static_cast<std::int64_t>(all) * (3ms + 700ms));
    CHECK(l.call.count() == all);
    CHECK(l.call.buckets[9] == all);
    CHECK(l.call.sum == static_cast<std::int64_t>(all) * 710ms);
    // The exports read the same sums.
    const auto text = resil::prometheus_text({m});
    CHECK(text.find("resil_calls_total{dependency=\"striped\"} " + std::to_string(all) + "\n") != std::string::npos);
}

TEST_CASE("metrics: every change of an adaptive limit and of a pace is counted, and exported") {
    manual_clock clock;
    resil::metrics m{"batch"};
    resil::basic_adaptive_limit<manual_clock> limit{{.initial_limit = 2, .min_limit = 1, .max_limit = 10}, clock};
    const auto pipe = resil::pipeline(clock, std::ref(limit)).with_listener(std::ref(m));
    const auto by_status = [](int status) { return status == 503 ? verdict::retryable : verdict::success; };
    // Limit 2: two successes (1 in flight each, which tests half the limit) make a round: 2 -> 3.
    for (int i = 0; i < 2; ++i) CHECK(pipe([] { return 200; }, by_status).ok());
    // A 503: 3 -> 2; then a round of 2 successes: 2 -> 3, and a round of 3 (at 1 in flight, under half): none.
    CHECK(pipe([] { return 503; }, by_status).reason() == reason::failed);
    for (int i = 0; i < 5; ++i) CHECK(pipe([] { return 200; }, by_status).ok());
    const auto lm = limit.metrics();
    auto s = m.snapshot();
    CHECK(s.limit_increases == lm.increases);
    CHECK(s.limit_decreases == lm.decreases);
    CHECK(s.limit_increases == 2);
    CHECK(s.limit_decreases == 1);
    CHECK(s.pace_changes == 0);

    // A paced bucket's changes: a new pace (20/s), the same pace again (no event), a pause.
    resil::basic_paced_bucket<manual_clock> pace{{.rate = 10, .burst = 10}, clock};
    for (const auto& info : {resil::rate_limit_info{.remaining = 200, .reset = duration{10s}},
                             resil::rate_limit_info{.remaining = 200, .reset = duration{10s}},
                             resil::rate_limit_info{.remaining = 0, .reset = duration{5s}}})
        if (const auto change = pace.update(info, clock.now())) m(*change);
    s = m.snapshot();
    CHECK(s.pace_changes == 2);
    // A limit_changed that moves nothing is not a change.
    m(events::limit_changed{4, 4, resil::load_signal::accepted, 9});
    CHECK(m.snapshot().limit_increases == 2);

    const auto parsed = parse_prometheus(m.prometheus());
    CHECK(parsed.errors == std::vector<std::string>{});
    const std::map<std::string, std::string> batch{{"policy", "batch"}};
    CHECK(parsed.value("resil_limit_increases_total", batch) == 2.0);
    CHECK(parsed.value("resil_limit_decreases_total", batch) == 1.0);
    CHECK(parsed.value("resil_pace_changes_total", batch) == 2.0);
    const auto several = parse_prometheus(resil::prometheus_text({m}));
    CHECK(several.value("resil_limit_decreases_total", {{"dependency", "batch"}}) == 1.0);
}

TEST_CASE("metrics: a shared quota's store failures are counted, failing open as failing closed") {
    resil::metrics m{"quota"};
    CHECK(m.snapshot().quota_store_failures == 0);
    m(events::quota_store_failed{.fail_open = true, .admitted = true});
    m(events::quota_store_failed{.fail_open = true, .admitted = false});
    m(events::quota_store_failed{.fail_open = false, .admitted = false});
    const auto s = m.snapshot();
    CHECK(s.quota_store_failures == 3);
    CHECK(s.rejections.total() == 0);  // the event is no rejection: the pipeline reports those itself
    const auto parsed = parse_prometheus(m.prometheus());
    CHECK(parsed.errors == std::vector<std::string>{});
    CHECK(parsed.value("resil_quota_store_failures_total", {{"policy", "quota"}}) == 3.0);
}
