// An interactive call with a plan B: a photo-classification gateway that
// suggests a category for a listing, and shows the category picker instead
// whenever the model cannot answer in time.
//
//   $ ./example_interactive_plan_b
//
// The chain of deadlines, every layer giving up before the one above it:
//
//   300 ms  the caller (the marketplace backend) gives up and shows the picker
//   250 ms  the gateway's deadline: 50 ms left to answer before the caller leaves
//   150 ms  the model call's cap: min(150 ms, what is left of the 250 ms)
//   100 ms  the model's own queue rejects what waited longer (a 503)
//
// No retries on this path, on purpose: a second attempt would get what is left
// after the first could not do it in 150 ms, it would double the load on the
// most expensive piece exactly when it is struggling, and the plan B (the
// picker: cheap, and independent of the model) is a good answer. Batch callers,
// with nobody waiting, retry (see batch_caller.cpp).
//
// Plan B is counted, by reason: a fallback used in silence hides an outage.
//
// The model is simulated on resil's manual clock (a call "takes" 60 ms by
// advancing the clock 60 ms), so the output is the same on every run. What the
// reader should see:
//   #1  a fast model: the category in 100 ms (40 ms to prepare the photo + 60 ms).
//   #2  a slow model: the call is cut at its 150 ms cap -> picker at 190 ms.
//   #3  the model's queue is full: 503 after 100 ms -> picker at 140 ms.
//   #4  a big photo takes 160 ms to prepare: the model gets min(150, 250 - 160)
//       = 90 ms, and the gateway answers at exactly 250 ms (deadline_exceeded),
//       still 50 ms before the caller gives up.
//   #5-20  the model hangs: each call waits its 150 ms. The breaker (more than
//       50 % of at least 20 calls failed in 10 s) opens after #20: 19 of 20 failed.
//   #21-23  open: the picker at once (0 ms), without calling the model; the
//       rejection says when the next probe is due (30 s, 20 s, 10 s).
//   #24-28  30 s later, 5 probe calls find the model healthy: the breaker closes.
//   the counters: 18 pickers after a failed call, 1 after the deadline, 3 with
//       the breaker open (timeouts 18, 503 1, open 3 by cause); one open,
//       half-open and close each, 30 s open.
#include <resil/circuit_breaker.hpp>
#include <resil/context.hpp>
#include <resil/deadline.hpp>
#include <resil/deadline_policy.hpp>
#include <resil/events.hpp>
#include <resil/fallback.hpp>
#include <resil/metrics.hpp>
#include <resil/outcome.hpp>
#include <resil/pipeline.hpp>
#include <resil/testing/manual_clock.hpp>
#include <resil/timeout_policy.hpp>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

using namespace std::chrono_literals;

namespace {

using clock_type = resil::testing::manual_clock;

// What the gateway answers: a suggested category, or the picker (plan B).
struct suggestion {
    int model_status = 0;            // the model's HTTP status; 0: no answer before the cap
    const char* category = nullptr;  // set on a 200
    bool show_picker = false;        // plan B
};

// The classifier: how one model call went. A timeout is ambiguous (the model
// may still be working on it); nothing is retried here anyway, but the breaker
// counts both timeouts and 503s as failures of the model.
resil::classification classify_model(const suggestion& s) {
    if (s.model_status == 200) return resil::verdict::success;
    if (s.model_status == 0) return resil::verdict::ambiguous;
    if (s.model_status == 503) return resil::verdict::retryable;
    return resil::verdict::permanent;  // e.g. 422, an invalid photo: the model is fine
}

// How the simulated model behaves for one request.
struct model_behaviour {
    resil::duration latency;  // how long it takes to answer (or, hung, "forever")
    int status;
    const char* category;
};

// The simulated model server. The caller hands it its cap; when the answer
// would come later, the caller stops waiting at the cap and cancels (a real
// client aborts the transfer, so the model does not keep working for nobody).
suggestion call_model(const clock_type& clock, const model_behaviour& model, std::chrono::milliseconds cap) {
    if (model.latency > cap) {
        clock.advance(cap);
        return {};  // no answer in time
    }
    clock.advance(model.latency);
    return {model.status, model.category, false};
}

// Plan B by cause, for the dashboard: the fallback policy counts by the
// library's reason (failed, deadline_exceeded, circuit_open); this splits
// "failed" into what the model did. Atomics: the fallback may run on many
// threads at once.
enum class cause : std::size_t { model_timeout, model_503, circuit_open, other, count };
constexpr std::array<const char*, static_cast<std::size_t>(cause::count)> cause_names{"model timeout", "model 503",
                                                                                       "breaker open", "other"};

struct plan_b_causes {
    std::array<std::atomic<std::uint64_t>, static_cast<std::size_t>(cause::count)> counts{};

    static cause of(const resil::outcome<suggestion>& failed) {
        if (failed.reason() == resil::reason::circuit_open) return cause::circuit_open;
        if (!failed.has_value()) return cause::other;
        if (failed->model_status == 0) return cause::model_timeout;
        if (failed->model_status == 503) return cause::model_503;
        return cause::other;
    }
    void count(cause c) { counts[static_cast<std::size_t>(c)].fetch_add(1, std::memory_order_relaxed); }
};

// One row of the script: what the next request meets.
struct scripted_request {
    const char* what;
    resil::duration prepare;  // receiving, decoding and resizing the photo
    model_behaviour model;
    int repeat = 1;
    resil::duration pause_after{};  // quiet time before the next request
};

double seconds(resil::duration d) { return std::chrono::duration<double>(d).count(); }
long long millis(resil::duration d) {
    return static_cast<long long>(std::chrono::round<std::chrono::milliseconds>(d).count());
}

}  // namespace

int main() {
    const clock_type clock;
    const auto start = clock.now();

    // One metrics object per dependency: a pipeline listener (calls, fallbacks,
    // rejections) and the breaker's state-change hook (transitions, time open).
    resil::metrics model_metrics{"model"};
    std::optional<resil::events::breaker_state_changed> breaker_change;  // printed after its request

    // The classic breaker: opens when more than 50 % of at least 20 calls in the
    // last 10 s failed; stays open 30 s; then lets 5 probe calls through.
    resil::basic_circuit_breaker<clock_type> breaker{
        {.failure_ratio = 0.5,
         .window = 10s,
         .min_calls = 20,
         .open_for = 30s,
         .half_open_probes = 5,
         .on_state_change =
             [&](const resil::events::breaker_state_changed& e) {
                 model_metrics.record_transition(e);
                 breaker_change = e;
             }},
        clock};

    plan_b_causes causes;
    cause last_cause = cause::other;  // for the printout only
    const resil::fallback_policy picker{[&causes, &last_cause](const resil::outcome<suggestion>& failed) {
        last_cause = plan_b_causes::of(failed);
        causes.count(last_cause);
        return suggestion{.show_picker = true};
    }};

    // Outermost first: plan B around everything, then the gateway's 250 ms
    // deadline, the breaker (each model call counts), and the model call's cap.
    // No retry_policy: this path never retries.
    const auto gateway = resil::pipeline(clock, picker, resil::deadline_policy{250ms}, std::ref(breaker),
                                         resil::timeout_policy{{.total = 150ms}})
                             .with_listener(std::ref(model_metrics));

    constexpr model_behaviour fast{60ms, 200, "sneakers"};
    constexpr model_behaviour slow{400ms, 200, "sneakers"};
    constexpr model_behaviour queue_full{100ms, 503, nullptr};  // its queue rejects after 100 ms
    constexpr model_behaviour hung{1h, 200, nullptr};           // accepts, never answers
    const std::vector<scripted_request> script{
        {"fast model", 40ms, fast},
        {"slow model (400 ms)", 40ms, slow},
        {"model's queue full", 40ms, queue_full},
        {"big photo: 160 ms to prep", 160ms, slow},
        {"model hangs", 40ms, hung, 16},
        {"model still hangs", 40ms, hung, 3, 10s},  // the breaker is open by now
        {"model back (probes)", 40ms, fast, 5},
        {"model back", 40ms, fast},
    };

    std::puts("caller gives up at 300 ms · gateway deadline 250 ms · model call cap 150 ms · no retries\n");
    std::puts("  #  arrives at  what the request meets      model cap  answered in  answer");

    const auto print_change = [](std::optional<resil::events::breaker_state_changed>& change) {
        if (!change) return;
        std::printf("%16sbreaker: %s -> %s", "", std::string(resil::to_string(change->from)).c_str(),
                    std::string(resil::to_string(change->to)).c_str());
        if (change->to == resil::circuit_state::open && change->calls_in_window > 0)
            std::printf(" (%.0f %% of the last %llu calls failed)", 100.0 * change->failure_ratio,
                        static_cast<unsigned long long>(change->calls_in_window));
        std::puts("");
        change.reset();
    };

    int number = 0;
    resil::duration slowest{};
    for (const auto& step : script) {
        for (int i = 0; i < step.repeat; ++i) {
            ++number;
            const auto arrived = clock.now();
            std::optional<std::chrono::milliseconds> cap;  // set only if the model is called

            // The caller's deadline arrives with the request (say, decoded from
            // its timeout header); the gateway's own 250 ms only tightens it.
            resil::basic_context<clock_type> ctx{resil::basic_call_options<clock_type>{
                .deadline = resil::basic_deadline<clock_type>::after(300ms, clock)}};
            const auto out = gateway.execute(
                ctx,
                [&](resil::basic_context<clock_type>& call) {
                    clock.advance(step.prepare);
                    // min(150 ms, what is left of the deadline): 150 ms, or
                    // less once preparing the photo ate into the 250 ms.
                    cap = call.attempt_timeouts().total;
                    return call_model(clock, step.model, *cap);
                },
                classify_model);

            const auto took = clock.now() - arrived;
            if (took > slowest) slowest = took;

            // A breaker that changed state as this request arrived (open ->
            // half-open) is told before its row; one that changed on its result, after.
            const bool changed_on_arrival = breaker_change && breaker_change->at == arrived;
            if (changed_on_arrival) print_change(breaker_change);

            // The burst of identical failures is long: show its ends only.
            const bool elide = step.repeat > 6 && i >= 2 && i < step.repeat - 2;
            if (elide && i == 2) std::printf("%16s(%d more like these)\n", "", step.repeat - 4);
            if (!elide) {
                const std::string cap_text = cap ? std::to_string(cap->count()) + " ms" : "not called";
                std::string answer;
                if (!out->show_picker) {
                    answer = std::string("category \"") + out->category + "\"";
                } else {
                    // The cause, then the library's reason for the failed call.
                    answer = std::string("picker: ") + cause_names[static_cast<std::size_t>(last_cause)] + " (" +
                             std::string(resil::to_string(out.fallback_reason()));
                    if (out.fallback_reason() == resil::reason::circuit_open && out.retry_after())
                        answer += ", next probe in " +
                                  std::to_string(std::chrono::ceil<std::chrono::seconds>(*out.retry_after()).count()) +
                                  " s";
                    answer += ")";
                }
                std::printf("%3d  %8.3f s  %-26s  %10s  %8lld ms  %s\n", number, seconds(arrived - start), step.what,
                            cap_text.c_str(), millis(took), answer.c_str());
            }
            print_change(breaker_change);
            clock.advance(step.pause_after);
        }
        if (breaker.state() == resil::circuit_state::open && step.pause_after > 0s)
            std::printf("%16s(30 s after it opened, and the model is healthy again)\n", "");
    }

    std::printf("\nslowest answer: %lld ms; the caller's 300 ms never ran out.\n", millis(slowest));

    std::puts("\nplan B, counted by the fallback policy (by the library's reason):");
    const auto counts = picker.metrics();
    for (std::size_t r = 1; r < resil::reason_count; ++r)
        if (counts.by_reason[r] != 0)
            std::printf("  %-18s %3llu\n", std::string(resil::to_string(static_cast<resil::reason>(r))).c_str(),
                        static_cast<unsigned long long>(counts.by_reason[r]));
    std::puts("plan B by cause (the picker's own counter):");
    for (std::size_t c = 0; c < causes.counts.size(); ++c)
        if (const auto n = causes.counts[c].load(std::memory_order_relaxed); n != 0)
            std::printf("  %-18s %3llu\n", cause_names[c], static_cast<unsigned long long>(n));

    // What a dashboard scrapes: the non-zero fallback, rejection and breaker
    // series of the Prometheus export.
    std::puts("resil::metrics, as scraped (non-zero plan B, rejection and breaker series):");
    std::istringstream exported{model_metrics.prometheus(clock.now())};
    for (std::string line; std::getline(exported, line);) {
        const auto starts_with = [&line](const char* prefix) { return line.rfind(prefix, 0) == 0; };
        const bool wanted = starts_with("resil_calls_total") || starts_with("resil_successes_total") ||
                            starts_with("resil_rejections_total") || starts_with("resil_fallbacks_total") ||
                            starts_with("resil_breaker_");
        if (wanted && line.substr(line.size() - 2) != " 0") std::printf("  %s\n", line.c_str());
    }
}
