// resil/adaptive_limit.hpp — a concurrency limit that moves with what is
// measured: AIMD on overload signals, or Gradient2 on latency (two of the
// algorithms of Netflix's concurrency-limits, AIMDLimit and Gradient2Limit,
// with their defaults; where resil differs from them is said below, and
// tests/adaptive_limit.cpp checks each against a port of its update rule).
//
//   resil::adaptive_limit limit{{.algorithm = resil::adaptive_algorithm::aimd}};
//
//   // Directly (or from an asynchronous pipeline): the decision core.
//   if (auto permit = limit.try_acquire()) {
//       auto r = call();                                       // may take a while
//       limit.complete(std::move(permit), resil::load_signal_of(classify(r).verdict));
//   } else {
//       reply(503);                                           // shed at once
//   }
//
//   // In a pipeline: reason::shed when full; the limit learns from each attempt.
//   auto pipe = resil::pipeline(resil::retry_policy{}, std::ref(limit));
//
// AIMD (additive increase, multiplicative decrease, as TCP's congestion
// window): by default the limit rises by 1 once a window of successes as
// large as the limit itself has been counted (one "round trip" of the limit),
// and is cut to ⌊limit × backoff_ratio⌋ (0.9) on an overload signal (429,
// 503, a timeout: options.overload_verdicts; and, as AIMDLimit's timeout, an
// accepted call that took longer than options.overload_latency, 5 s). Only
// calls admitted while at least half the limit was in flight count towards a
// rise (concurrency-limits' guard: an idle client has not tested its limit,
// so it must not raise it), and one cut per round (RFC 6582's rule for TCP):
// an overload from a call admitted before the last cut says nothing new, as
// it was sent under the old limit — without this, 20 calls failing at once
// would cut 20 → 2.
// concurrency-limits' AIMDLimit differs on both counts: +1 per success and a
// cut on every drop (options increase_per_success = true and
// cut_once_per_round = false give its rule exactly, decision by decision,
// overload_latency being its timeout; min_limit = 20 adds its floor). The
// default is TCP's rule because AIMDLimit's climbs by up to the limit per round trip (it
// doubles, as TCP's slow start) and cuts once per failing call, so one burst
// of failures takes it to min_limit. In the capacity drop of
// examples/adaptive_simulation.cpp, AIMDLimit's rule keeps 19.7 useful
// answers a second (0.1 with its min_limit of 20, above what the reduced
// capacity allows in flight), the default 26.9 (docs/adaptive.md).
//
// Gradient2 (concurrency-limits' Gradient2Limit): compares each call's
// latency (short RTT) with a long exponential average (long RTT, 600
// samples after a plain average of the first 10): gradient =
// clamp(rtt_tolerance × long / short, 0.5, 1); new = limit × gradient +
// queue_size, smoothed: limit × (1 − smoothing) + new × smoothing. Latency at
// its long-run level lets the limit grow by about queue_size × smoothing per
// call; latency above 1.5× the long average shrinks it, at most halving per
// step. When the long average is more than twice the latest sample it decays
// by 5% (recovery after a long overload), from the tenth sample on: the
// exponential average starts from the decayed value. Accepted calls follow
// Gradient2Limit's rule and arithmetic exactly, sample by sample (a latency
// of 0 counts as 1 ns, where Gradient2Limit would divide by zero). Chosen
// over Vegas because Vegas needs the no-load RTT: concurrency-limits'
// VegasLimit keeps the minimum since its last probe, and a probe (every 15
// to 30 × limit samples) takes that moment's latency as the new baseline —
// a loaded one if the dependency is busy then, after which Vegas sees no
// queue; between probes the baseline goes stale when the dependency's normal
// latency moves. Gradient2 compares against its own recent past.
// Unlike Gradient2Limit, which reads no drop (a 503 or a timeout is one more
// latency sample there), an overload signal is no latency sample here: it
// cuts the limit × backoff_ratio (once per round, as AIMD) and leaves the
// long RTT as it is. A 503 returned in a millisecond would otherwise read as
// "fast, raise the limit", and a timeout's latency is the client's patience,
// not the dependency's (in examples/adaptive_simulation.cpp, Gradient2Limit's
// handling keeps 1.0 useful answer a second, resil's 7.8).
//
// Defaults (concurrency-limits'): initial 20, max 200, backoff_ratio 0.9,
// overload_latency 5 s (AIMDLimit's timeout), smoothing 0.2, rtt_tolerance
// 1.5, long_window 600, queue_size 4. The minimum is 1, not
// concurrency-limits' 20: a floor equal to the start would let the limit
// never go below where it began, and a client knows nothing of its
// dependency's capacity. The limit is never 0: some call always gets through
// to measure recovery.
//
// Lock-free: the in-flight count is one word (a compare-and-swap admits, one
// subtraction releases, as in resil::concurrency_limit), which also counts
// the calls admitted (the same compare-and-swap); AIMD's state is one
// word (limit, successes in the round, the round's number) changed by
// compare-and-swap; Gradient2's is two doubles (the estimate, the long RTT),
// each changed by its own compare-and-swap (the long RTT's warm-up keeps its
// sum, count and latest decay in one word). Gradient2Limit takes a lock per
// sample; here the two updates of samples completing at once on several
// threads may interleave (each sample still counts once); samples one at a
// time give Gradient2Limit's results exactly. The shed counter is per-thread
// stripes, and so are AIMD's successes: each thread counts them in its stripe and adds them
// to the shared word in batches of ⌈(successes the round still needs) /
// stripes⌉, so a round of L successes writes the shared word about log(L)
// times per thread instead of L times. A thread alone adds its last success
// exactly when the round is full (the batches shrink to 1 as the round
// fills), so the limit moves on the same call as with one shared count; with
// several threads a rise can wait for up to one batch per other thread, and
// a batch counted under a limit that has moved since is dropped (it was a
// round of the old limit). Every change of the limit is counted (metrics())
// and returned by complete() as an events::limit_changed, which the pipeline
// policy emits.
#pragma once

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string_view>
#include <type_traits>
#include <utility>

#include "enum_name.hpp"
#include "clock.hpp"
#include "detail/platform.hpp"
#include "detail/stripes.hpp"
#include "events.hpp"
#include "load_signal.hpp"
#include "outcome.hpp"
#include "policy_steps.hpp"
#include "validation.hpp"

namespace resil {

/// How an adaptive_limit moves its limit.
enum class adaptive_algorithm : std::uint8_t {
    aimd,       ///< +1 per round of successes, × backoff_ratio on overload
    gradient2,  ///< by latency: short RTT against its long average (and × backoff_ratio on overload)
};

/// The algorithm's name: "aimd" or "gradient2".
[[nodiscard]] constexpr enum_name to_string(adaptive_algorithm a) noexcept {
    switch (a) {
        case adaptive_algorithm::aimd: return "aimd";
        case adaptive_algorithm::gradient2: return "gradient2";
    }
    return "unknown";
}

/// Options of an adaptive_limit; the defaults are the documented ones.
struct adaptive_limit_options {
    /// How the limit moves: aimd (the default) or gradient2.
    adaptive_algorithm algorithm = adaptive_algorithm::aimd;
    /// The limit at construction, in [min_limit, max_limit]. Default 20.
    std::uint32_t initial_limit = 20;
    /// The lowest limit, in [1, max_limit]: never 0. Default 1.
    std::uint32_t min_limit = 1;
    /// The highest limit, in [1, largest_limit]. Default 200.
    std::uint32_t max_limit = 200;
    /// The cut on an overload signal: limit → ⌊limit × backoff_ratio⌋, in
    /// [0.1, 0.99]. Default 0.9.
    double backoff_ratio = 0.9;
    /// Gradient2: the weight of a new estimate, in (0, 1]. Default 0.2.
    double smoothing = 0.2;
    /// Gradient2: latency up to this multiple of its long average is not
    /// queueing, in [1, 100]. Default 1.5.
    double rtt_tolerance = 1.5;
    /// Gradient2: samples in the long RTT's exponential average, in [1, 1000000]. Default 600.
    std::uint32_t long_window = 600;
    /// Gradient2: calls the limit may grow past the estimate (the queue it
    /// allows), in [1, max_limit] (its only way up; AIMD ignores it). Default 4.
    std::uint32_t queue_size = 4;
    /// Cut once per round (a call admitted before the last cut does not cut
    /// again, as TCP cuts once per window of losses), for AIMD and for
    /// Gradient2's overload cut; false cuts on every overload signal, as
    /// concurrency-limits' AIMDLimit does. Default true.
    bool cut_once_per_round = true;
    /// AIMD: +1 per success (each admitted with at least half the limit in
    /// flight), as concurrency-limits' AIMDLimit; false: +1 per round of
    /// successes as many as the limit (TCP's congestion avoidance). Default
    /// false. With cut_once_per_round = false too, AIMD is AIMDLimit's rule.
    bool increase_per_success = false;
    /// AIMD: an accepted call that took longer than this, from admission to
    /// complete(), counts as an overload signal (concurrency-limits'
    /// AIMDLimit `timeout`: a success that slow says the dependency queues),
    /// in [0, 24h]; zero: latency is not read (AIMD then reads no clock).
    /// Gradient2 ignores it (latency is its signal). Default 5 s.
    duration overload_latency = std::chrono::seconds{5};
    /// Verdicts that mean overload. Default retryable and ambiguous.
    verdict_set overload_verdicts = default_overload_verdicts;

    /// Fits AIMD's 24-bit field (and far above any useful concurrency).
    static constexpr std::uint32_t largest_limit = 1'000'000;

    /// The first field outside its range: "`min_limit` must be at most
    /// max_limit (200), got 300".
    [[nodiscard]] RESIL_DECL validation_result validate() const;

    /// Field-by-field equality.
    friend bool operator==(const adaptive_limit_options&, const adaptive_limit_options&) = default;
};

#if RESIL_DETAIL_BODIES
RESIL_DECL validation_result adaptive_limit_options::validate() const {
    if (auto bad = detail::check_in_range("max_limit", max_limit, std::uint32_t{1}, largest_limit)) return bad;
    if (auto bad = detail::check_that(min_limit >= 1 && min_limit <= max_limit, "min_limit",
                                      {"in [1, max_limit (", detail::format_option_value(max_limit), ")]"}, min_limit))
        return bad;
    if (auto bad = detail::check_that(initial_limit >= min_limit && initial_limit <= max_limit, "initial_limit",
                                      {"in [min_limit, max_limit] = [", detail::format_option_value(min_limit), ", ",
                                       detail::format_option_value(max_limit), "]"},
                                      initial_limit))
        return bad;
    if (auto bad = detail::check_in_range("backoff_ratio", backoff_ratio, 0.1, 0.99)) return bad;
    if (auto bad = detail::check_that(smoothing > 0.0 && smoothing <= 1.0, "smoothing", "in (0, 1]", smoothing))
        return bad;
    if (auto bad = detail::check_that(rtt_tolerance >= 1.0 && rtt_tolerance <= 100.0, "rtt_tolerance", "in [1, 100]",
                                      rtt_tolerance))
        return bad;
    if (auto bad = detail::check_in_range("long_window", long_window, std::uint32_t{1}, std::uint32_t{1'000'000}))
        return bad;
    if (auto bad = detail::check_in_range("overload_latency", overload_latency, duration::zero(),
                                          duration{std::chrono::hours{24}}))
        return bad;
    // Gradient2 grows only through queue_size: at 0 its limit could only fall.
    if (algorithm == adaptive_algorithm::gradient2)
        return detail::check_that(queue_size >= 1 && queue_size <= max_limit, "queue_size",
                                  {"in [1, ", detail::format_option_value(max_limit), "]"}, queue_size);
    return detail::check_that(queue_size <= max_limit, "queue_size",
                              {"at most max_limit (", detail::format_option_value(max_limit), ")"}, queue_size);
}
#endif

/// What an adaptive_limit has done since construction.
struct adaptive_limit_metrics {
    std::uint32_t limit = 0;          ///< now
    std::uint32_t in_flight = 0;      ///< now
    /// Calls admitted since construction.
    std::uint64_t admitted = 0;
    /// Calls refused with reason::shed because the limit was full.
    std::uint64_t shed = 0;
    std::uint64_t limit_changes = 0;  ///< increases + decreases
    /// Times the limit rose.
    std::uint64_t increases = 0;
    /// Times the limit fell.
    std::uint64_t decreases = 0;
};

/// An adaptive concurrency limit on `Clock` (read only for latencies: by
/// Gradient2, and by AIMD unless overload_latency is zero). Thread-safe and
/// lock-free; members are const (the state is atomic), so pipelines share it
/// by std::ref. Not copyable.
template <clock Clock = steady_clock>
class basic_adaptive_limit {
public:
    /// The clock type it reads.
    using clock_type = Clock;
    /// Reads its own clock (resil/clock.hpp, time_source).
    static constexpr resil::time_source time_source = resil::time_source::own_clock;

    /// The right to be in flight, with what complete() needs to learn from
    /// the call. Move-only; released (learning nothing) when destroyed
    /// without complete(). Must not outlive its limit.
    class permit {
    public:
        permit() noexcept = default;
        /// Takes over `o`'s slot; `o` holds nothing after.
        permit(permit&& o) noexcept
            : owner_(std::exchange(o.owner_, nullptr)), started_(o.started_), in_flight_(o.in_flight_), round_(o.round_) {}
        /// Releases the slot it holds (learning nothing), then takes over
        /// `o`'s.
        permit& operator=(permit&& o) noexcept {
            if (this != &o) {
                release();
                owner_ = std::exchange(o.owner_, nullptr);
                started_ = o.started_;
                in_flight_ = o.in_flight_;
                round_ = o.round_;
            }
            return *this;
        }
        permit(const permit&) = delete;
        permit& operator=(const permit&) = delete;
        ~permit() { release(); }

        /// True while it holds a slot in the limit (not moved from, not
        /// completed).
        [[nodiscard]] bool held() const noexcept { return owner_ != nullptr; }
        /// held().
        explicit operator bool() const& noexcept { return held(); }
        explicit operator bool() const&& = delete;
        /// When the call was admitted (Gradient2 measures from here).
        [[nodiscard]] time_point started() const noexcept { return started_; }

        /// Gives the place back without teaching the limit anything. Idempotent.
        void release() noexcept {
            if (auto* o = std::exchange(owner_, nullptr)) o->release_one();
        }

    private:
        friend class basic_adaptive_limit;
        permit(const basic_adaptive_limit* o, time_point t, std::uint32_t in_flight, std::uint32_t round) noexcept
            : owner_(o), started_(t), in_flight_(in_flight), round_(round) {}
        const basic_adaptive_limit* owner_ = nullptr;
        time_point started_{};
        std::uint32_t in_flight_ = 0;  // counting this call, at admission
        std::uint32_t round_ = 0;      // the cut count at admission
    };

    /// Throws std::invalid_argument when options.validate() names a field:
    /// "resil::adaptive_limit: `min_limit` must be in [1, max_limit (200)], got 300".
    explicit basic_adaptive_limit(adaptive_limit_options options = {}, Clock clock = {})
        : options_(validated(options)), clock_(std::move(clock)) {
        aimd_.store(pack(options_.initial_limit, 0, 0), std::memory_order_relaxed);
        estimate_.store(static_cast<double>(options_.initial_limit), std::memory_order_relaxed);
    }
    basic_adaptive_limit(const basic_adaptive_limit&) = delete;
    basic_adaptive_limit& operator=(const basic_adaptive_limit&) = delete;

    /// A permit when fewer than limit() calls are in flight; an empty one
    /// (counted as shed) otherwise. `now` is when the call starts (Gradient2
    /// measures latency from it, AIMD finds a call slower than
    /// overload_latency). Never waits, never allocates.
    [[nodiscard]] permit try_acquire(time_point now) const noexcept {
        const auto state = aimd_.load(std::memory_order_relaxed);
        const auto lim = gradient() ? gradient_limit() : limit_of(state);
        auto current = admissions_.load(std::memory_order_relaxed);
        do {
            if ((current & field_mask) >= lim) {
                counts_.local().shed.fetch_add(1, std::memory_order_relaxed);
                return permit{};
            }
        } while (!admissions_.compare_exchange_weak(current, current + one_admission, std::memory_order_acquire,
                                                    std::memory_order_relaxed));
        // The admissions counted wrapped past 2^40: carry it.
        if ((current >> 24) == admitted_field_max) wraps_.fetch_add(1, std::memory_order_relaxed);
        return permit{this, now, static_cast<std::uint32_t>(current & field_mask) + 1, round_of(state)};
    }
    /// try_acquire() at the clock's reading (read only when latency is:
    /// Gradient2, and AIMD with an overload_latency).
    [[nodiscard]] permit try_acquire() const noexcept {
        return try_acquire(reads_latency() ? clock_.now() : time_point{});
    }

    /// Ends the call held by `p` (released here) and learns from it: `now` is
    /// when it ended (latency = now − p.started(): Gradient2's sample; for
    /// AIMD, an accepted call slower than overload_latency is an overload).
    /// Returns the change when the limit moved. An empty permit teaches nothing.
    std::optional<events::limit_changed> complete(permit&& p, load_signal s, time_point now) const noexcept {
        if (!p.held()) return std::nullopt;
        const auto in_flight_then = p.in_flight_;
        const auto round = p.round_;
        const auto started = p.started_;
        p.release();
        if (s == load_signal::ignored) return std::nullopt;
        if (gradient()) return learn_gradient(s, now - started, in_flight_then, round);
        // AIMDLimit's timeout: strictly longer is a drop.
        if (s == load_signal::accepted && options_.overload_latency > duration::zero() &&
            now - started > options_.overload_latency)
            s = load_signal::overload;
        return learn_aimd(s, in_flight_then, round);
    }
    /// complete() at the clock's reading (read only when latency is).
    std::optional<events::limit_changed> complete(permit&& p, load_signal s) const noexcept {
        return complete(std::move(p), s, reads_latency() ? clock_.now() : time_point{});
    }

    /// The limit now, in [min_limit, max_limit].
    [[nodiscard]] std::uint32_t limit() const noexcept {
        return gradient() ? gradient_limit() : limit_of(aimd_.load(std::memory_order_relaxed));
    }
    /// Calls holding a permit now.
    [[nodiscard]] std::uint32_t in_flight() const noexcept {
        return static_cast<std::uint32_t>(admissions_.load(std::memory_order_relaxed) & field_mask);
    }
    /// Gradient2's long RTT average (zero before the first sample, and for AIMD).
    [[nodiscard]] duration long_rtt() const noexcept {
        const auto w = samples_.load(std::memory_order_relaxed);
        double r = count_of(w) < warm_up ? warm_value(w) : long_rtt_.load(std::memory_order_relaxed);
        if (r == 0.0) r = warm_value(w);
        return duration{static_cast<duration::rep>(r)};
    }
    /// A snapshot of its counts, read with relaxed loads: each count is exact,
    /// the set is not one instant.
    [[nodiscard]] adaptive_limit_metrics metrics() const noexcept {
        adaptive_limit_metrics m;
        m.limit = limit();
        m.in_flight = in_flight();
        m.admitted = (wraps_.load(std::memory_order_relaxed) << 40) + (admissions_.load(std::memory_order_relaxed) >> 24);
        for (std::size_t i = 0; i < counts_.size(); ++i) m.shed += counts_[i].shed.load(std::memory_order_relaxed);
        m.increases = increases_.load(std::memory_order_relaxed);
        m.decreases = decreases_.load(std::memory_order_relaxed);
        m.limit_changes = m.increases + m.decreases;
        return m;
    }
    /// The options it was built with.
    [[nodiscard]] const adaptive_limit_options& options() const noexcept { return options_; }
    /// The clock it reads.
    [[nodiscard]] const Clock& clock() const noexcept { return clock_; }

    /// As a pipeline policy: holds a permit around the rest of the pipeline
    /// (one attempt, when placed inside a retry policy) and rejects with
    /// reason::shed at once when full (events::rejected). The attempt's
    /// verdict is the signal (load_signal_of_outcome); a change of the limit
    /// is emitted as events::limit_changed.
    template <class Context, class Next>
    auto execute(Context& ctx, Next&& next) const {
        return detail::run_steps(*this, ctx, next);  // the steps below, driven blocking
    }

    /// What the policy holds during a call (policy_steps.hpp): its permit,
    /// and whether the context reads the limit's time line. A call that
    /// unwinds releases the permit, learning nothing.
    class admission {
    private:
        friend class basic_adaptive_limit;
        permit held_;
        bool shared_ = false;
    };
    /// What it keeps between its steps for one call (resil/policy_steps.hpp).
    template <class Context, class Outcome>
    using call_state = admission;

    /// The policy's first step: a permit, or the call refused with
    /// reason::shed at once when full (emitting events::rejected).
    template <class Context>
    layer_in enter(Context& ctx, admission& a) const {
        a.shared_ = detail::context_reads(ctx, clock_);
        a.held_ = try_acquire(latency_reading(ctx, a.shared_));
        if (a.held_) return layer_in::proceed();
        ctx.emit(events::rejected{reason::shed, std::nullopt});
        return layer_in::refuse(reason::shed);
    }

    /// The policy's last step: learns from the outcome (its verdict is the
    /// signal: load_signal_of_outcome), emitting events::limit_changed when
    /// the limit moves.
    template <class Context, class Outcome>
    layer_out leave(Context& ctx, admission& a, Outcome& out) const {
        if (const auto change = complete(std::move(a.held_), load_signal_of_outcome(out, options_.overload_verdicts),
                                         latency_reading(ctx, a.shared_)))
            ctx.emit(*change);
        return layer_out::proceed();
    }

private:
    // A reading for latency, only when the algorithm uses one.
    template <class Context>
    time_point latency_reading(Context& ctx, bool shared) const noexcept {
        return !reads_latency() ? time_point{} : shared ? ctx.cached_now() : clock_.now();
    }

    static constexpr std::uint64_t warm_up = 10;  // samples averaged plainly before the exponential average
    // The warm-up's word: the latest sample decayed the average (1 bit) |
    // samples counted (7 bits) | their sum in ns (56 bits; each sample at
    // most 2^52 ns, about 52 days, so ten of them fit).
    static constexpr std::int64_t largest_rtt_ns = std::int64_t{1} << 52;
    static constexpr std::uint64_t decayed_bit = std::uint64_t{1} << 63;
    static constexpr std::uint64_t count_of(std::uint64_t w) noexcept { return (w >> 56) & 0x7Fu; }
    static constexpr std::uint64_t sum_of(std::uint64_t w) noexcept { return w & ((std::uint64_t{1} << 56) - 1); }
    static double warm_average(std::uint64_t w) noexcept {
        return count_of(w) == 0 ? 0.0 : static_cast<double>(sum_of(w)) / static_cast<double>(count_of(w));
    }
    // Back to normal after a long overload: the long average is cut by 5% when
    // it is more than twice the sample (Gradient2Limit's rule).
    static constexpr double decay = 0.95;
    static bool decays(double long_rtt, double rtt) noexcept { return long_rtt / rtt > 2.0; }
    // The long RTT as the warm-up left it: the plain average, × 0.95 when the
    // latest sample decayed it (the tenth's decay is where the exponential
    // average starts from, as in ExpAvgMeasurement).
    static double warm_value(std::uint64_t w) noexcept {
        const double a = warm_average(w);
        return (w & decayed_bit) != 0 ? a * decay : a;
    }

    // AIMD's word: limit (24 bits) | successes in the round (24) | cut count (16).
    static constexpr std::uint64_t field_mask = (std::uint64_t{1} << 24) - 1;
    static constexpr std::uint64_t pack(std::uint32_t lim, std::uint64_t successes, std::uint64_t round) noexcept {
        return (std::uint64_t{lim} & field_mask) | (successes & field_mask) << 24 | (round & 0xFFFFu) << 48;
    }
    static constexpr std::uint32_t limit_of(std::uint64_t w) noexcept { return static_cast<std::uint32_t>(w & field_mask); }
    static constexpr std::uint64_t successes_of(std::uint64_t w) noexcept { return (w >> 24) & field_mask; }
    static constexpr std::uint32_t round_of(std::uint64_t w) noexcept { return static_cast<std::uint32_t>(w >> 48); }
    // Which round of successes a word is in: its limit and cut count (both
    // change when a round ends, by a rise or a cut). 40 bits.
    static constexpr std::uint64_t epoch_of(std::uint64_t w) noexcept { return (w & field_mask) | (w >> 48) << 24; }

    static const adaptive_limit_options& validated(const adaptive_limit_options& o) {
        throw_if_invalid("resil::adaptive_limit", o.validate());
        return o;
    }
    [[nodiscard]] bool gradient() const noexcept { return options_.algorithm == adaptive_algorithm::gradient2; }
    [[nodiscard]] bool reads_latency() const noexcept {
        return gradient() || options_.overload_latency > duration::zero();
    }
    [[nodiscard]] std::uint32_t gradient_limit() const noexcept {
        return static_cast<std::uint32_t>(estimate_.load(std::memory_order_relaxed));  // ⌊estimate⌋ ≥ min_limit ≥ 1
    }
    [[nodiscard]] std::uint32_t cut(std::uint32_t lim) const noexcept {
        const auto c = static_cast<std::uint32_t>(static_cast<double>(lim) * options_.backoff_ratio);
        return std::max(c, options_.min_limit);
    }

    std::optional<events::limit_changed> changed(std::uint32_t from, std::uint32_t to, load_signal s) const noexcept {
        if (from == to) return std::nullopt;
        (to > from ? increases_ : decreases_).fetch_add(1, std::memory_order_relaxed);
        return events::limit_changed{from, to, s, generation_.fetch_add(1, std::memory_order_relaxed) + 1};
    }

    std::optional<events::limit_changed> learn_aimd(load_signal s, std::uint32_t in_flight_then,
                                                    std::uint32_t round) const noexcept {
        auto w = aimd_.load(std::memory_order_relaxed);
        // A success counted towards a round: first in this thread's stripe,
        // then, once per batch, in the shared word (below).
        std::uint64_t batch = 0;
        if (s != load_signal::overload && !options_.increase_per_success) {
            if (2 * std::uint64_t{in_flight_then} < limit_of(w)) return std::nullopt;  // the limit was not tested
            batch = count_success(w);
            if (batch == 0) return std::nullopt;  // kept in this thread's stripe for now
        }
        std::uint64_t next = 0;
        do {
            const auto lim = limit_of(w);
            if (s == load_signal::overload) {
                // One cut per round: a call sent before the last cut was sent under the old limit.
                if (options_.cut_once_per_round && (round & 0xFFFFu) != round_of(w)) return std::nullopt;
                next = pack(cut(lim), 0, round_of(w) + 1u);
            } else if (options_.increase_per_success) {
                if (2 * std::uint64_t{in_flight_then} < lim) return std::nullopt;  // the limit was not tested
                if (lim >= options_.max_limit) return std::nullopt;  // at max_limit: nothing to write
                next = pack(lim + 1, 0, round_of(w));
            } else {
                if (epoch_of(w) != batch >> 24) return std::nullopt;  // counted in a round that has ended since
                const auto successes = successes_of(w) + (batch & field_mask);
                next = successes >= lim && lim < options_.max_limit
                           ? pack(lim + 1, 0, round_of(w))
                           : pack(lim, std::min<std::uint64_t>(successes, lim), round_of(w));
                if (next == w) return std::nullopt;  // at max_limit with a full round: nothing to write
            }
        } while (!aimd_.compare_exchange_weak(w, next, std::memory_order_relaxed));
        return changed(limit_of(w), limit_of(next), s);
    }

    // Counts one success of the round `w` is in, in the calling thread's
    // stripe. Returns 0 while the stripe keeps it, or the batch to add to the
    // shared word (its round's epoch << 24 | its count; the stripe is then
    // empty): once the stripe holds ⌈(lim − successes so far) / stripes⌉.
    // The stripe is changed by compare-and-swap: threads that share one
    // count each success once.
    std::uint64_t count_success(std::uint64_t w) const noexcept {
        const auto lim = limit_of(w);
        const auto shared = successes_of(w);
        if (shared >= lim) return epoch_of(w) << 24 | 1;  // a full round at max_limit: nothing to count
        const auto quota = (lim - shared + counts_.size() - 1) / counts_.size();
        auto& pending = counts_.local().pending;
        auto p = pending.load(std::memory_order_relaxed);
        for (;;) {
            const auto mine = ((p >> 24) == epoch_of(w) ? (p & field_mask) : 0) + 1;
            if (mine >= quota) {
                if (pending.compare_exchange_weak(p, 0, std::memory_order_relaxed)) return epoch_of(w) << 24 | mine;
            } else if (pending.compare_exchange_weak(p, epoch_of(w) << 24 | mine, std::memory_order_relaxed)) {
                return 0;
            }
        }
    }

    std::optional<events::limit_changed> learn_gradient(load_signal s, duration rtt_d, std::uint32_t in_flight_then,
                                                        std::uint32_t round) const noexcept {
        const auto lo = static_cast<double>(options_.min_limit);
        const auto hi = static_cast<double>(options_.max_limit);
        if (s == load_signal::overload) {
            // One cut per round, as AIMD: claim the round in aimd_'s round field
            // (unused otherwise by Gradient2) before cutting, so that 20 calls
            // failing at once cut once, not 20 times.
            if (options_.cut_once_per_round) {
                auto w = aimd_.load(std::memory_order_relaxed);
                do {
                    if ((round & 0xFFFFu) != round_of(w)) return std::nullopt;
                } while (!aimd_.compare_exchange_weak(w, pack(limit_of(w), 0, round_of(w) + 1u),
                                                      std::memory_order_relaxed));
            }
            double e = estimate_.load(std::memory_order_relaxed);
            double next = 0;
            do {
                next = std::clamp(std::floor(e * options_.backoff_ratio), lo, hi);
            } while (!estimate_.compare_exchange_weak(e, next, std::memory_order_relaxed));
            return changed(static_cast<std::uint32_t>(e), static_cast<std::uint32_t>(next), s);
        }
        const auto rtt_ns = std::clamp<std::int64_t>(rtt_d.count(), 1, largest_rtt_ns);
        const double rtt = static_cast<double>(rtt_ns);
        // The long RTT: a plain average over the first 10 samples (warm-up,
        // as concurrency-limits' ExpAvgMeasurement), then exponential, in
        // ExpAvgMeasurement's arithmetic. The gradient uses the average before
        // its 5% decay; the decay is stored, the tenth sample's included (the
        // exponential average starts from the decayed value, as there). The
        // warm-up's sum, count and decay share one word, so racing samples
        // each count exactly once. (Past the warm-up the word is only read.)
        double averaged = 0;
        bool warming = false;
        auto w = samples_.load(std::memory_order_relaxed);
        while (count_of(w) < warm_up) {
            const auto n = count_of(w) + 1;
            const auto sum = sum_of(w) + static_cast<std::uint64_t>(rtt_ns);
            averaged = static_cast<double>(sum) / static_cast<double>(n);
            const auto next = n << 56 | sum | (decays(averaged, rtt) ? decayed_bit : 0);
            if (samples_.compare_exchange_weak(w, next, std::memory_order_relaxed)) {
                warming = true;
                if (n == warm_up) {  // the exponential average starts from the warm-up's value
                    double unset = 0.0;
                    long_rtt_.compare_exchange_strong(unset, warm_value(next), std::memory_order_relaxed);
                }
                break;
            }
        }
        if (!warming) {
            const double factor = 2.0 / (options_.long_window + 1.0);
            double long_rtt = long_rtt_.load(std::memory_order_relaxed);
            for (;;) {
                // Warm-up just ended on another thread, which has not stored its value yet: the word has it.
                const double base = long_rtt == 0.0 ? warm_value(w) : long_rtt;
                averaged = base * (1.0 - factor) + rtt * factor;
                const double stored = decays(averaged, rtt) ? averaged * decay : averaged;
                // A steady latency leaves the average as it is: no write (threads would take turns on the line).
                if (stored == long_rtt || long_rtt_.compare_exchange_weak(long_rtt, stored, std::memory_order_relaxed)) break;
            }
        }
        double e = estimate_.load(std::memory_order_relaxed);
        if (static_cast<double>(in_flight_then) < e / 2.0) return std::nullopt;  // the limit was not tested
        const double gradient = std::clamp(options_.rtt_tolerance * averaged / rtt, 0.5, 1.0);
        double next = 0;
        do {
            const double target = e * gradient + static_cast<double>(options_.queue_size);
            next = std::clamp(e * (1.0 - options_.smoothing) + target * options_.smoothing, lo, hi);
            if (next == e) return std::nullopt;  // e.g. at max_limit: nothing to write
        } while (!estimate_.compare_exchange_weak(e, next, std::memory_order_relaxed));
        return changed(static_cast<std::uint32_t>(e), static_cast<std::uint32_t>(next), s);
    }

    void release_one() const noexcept { admissions_.fetch_sub(1, std::memory_order_release); }

    // The in-flight count and the admissions, one word: calls admitted (40
    // bits, mod 2^40; wraps_ counts the wraps) << 24 | in flight (24 bits: at
    // most largest_limit). One compare-and-swap admits and counts.
    static constexpr std::uint64_t one_admission = (std::uint64_t{1} << 24) + 1;
    static constexpr std::uint64_t admitted_field_max = (std::uint64_t{1} << 40) - 1;

    // Per-thread: calls shed; AIMD's successes not yet added to the shared
    // word (the round's epoch << 24 | their count).
    struct stripe_counts {
        std::atomic<std::uint64_t> shed{0};
        std::atomic<std::uint64_t> pending{0};
    };

    // Read by every call, never written after construction.
    adaptive_limit_options options_;
    [[no_unique_address]] Clock clock_;
    detail::stripes<stripe_counts> counts_;
    // Written by every admission and release.
    alignas(detail::stripe_alignment) mutable std::atomic<std::uint64_t> admissions_{0};
    mutable std::atomic<std::uint64_t> wraps_{0};  // written once per 2^40 admissions (a reading at that moment may miss one)
    // Written by every completion.
    alignas(detail::stripe_alignment) mutable std::atomic<std::uint64_t> aimd_{0};
    mutable std::atomic<double> estimate_{0.0};
    mutable std::atomic<double> long_rtt_{0.0};
    mutable std::atomic<std::uint64_t> samples_{0};  // warm-up: count | sum
    // Written only when the limit moves.
    alignas(detail::stripe_alignment) mutable std::atomic<std::uint64_t> increases_{0};
    mutable std::atomic<std::uint64_t> decreases_{0};
    mutable std::atomic<std::uint64_t> generation_{0};
};

/// An adaptive concurrency limit on the real monotonic clock.
using adaptive_limit = basic_adaptive_limit<>;

}  // namespace resil
