// resil/circuit_breaker.hpp — stops calling a dependency that is failing, and
// answers plan B at once instead, until probes show that it has recovered.
//
//   using namespace std::chrono_literals;
//   resil::circuit_breaker breaker{{.failure_ratio = 0.5, .window = 10s, .min_calls = 20,
//                                   .open_for = 30s, .half_open_probes = 5}};
//   auto pipe = resil::pipeline(resil::retry_policy{}, std::ref(breaker));   // as a policy
//
//   if (auto permit = breaker.try_acquire()) {                              // or by hand
//       auto response = call();
//       breaker.record(permit, classify(response).verdict);
//   } else {
//       reply_503(permit.retry_after());           // time left until the next probe
//   }
//
// States. Closed: calls go through and their results are counted. When more
// than `failure_ratio` of the calls in the window failed (strictly more, with
// at least `min_calls` calls), or after `consecutive_failures` failures in a
// row in that mode, the breaker opens: every call is rejected at once with
// reason::circuit_open and the time left until the next probe. After
// `open_for` it is half-open: exactly `half_open_probes` calls are let
// through, never more (a caller turned away then is told to come back after
// as long as the probes have been out, since they may report back any moment). If they all succeed it closes with an empty window;
// the first failure opens it again for the whole `open_for`. Probes that never
// report back time out after `probe_timeout`, which also opens it again.
// `isolate()` holds it open until `reset()`.
//
// Only verdicts in `failure_verdicts` (retryable and ambiguous by default)
// count as failures: a permanent verdict (a 4xx caused by the request itself)
// says the dependency answered, and counts as a success. With
// `slow_call_threshold` set, a call slower than that counts as a failure too.
//
// Thread-safe without locks. The state is one atomic word (state, generation,
// probe counts) changed by compare-and-swap; the time window is a ring of
// atomic buckets per stripe of threads (detail/rolling_window.hpp), so
// threads recording successes write no cache line in common.
// A closed breaker admits a call with one relaxed load and no clock read;
// recording reads the clock once and writes one bucket: a plain store for a
// thread alone on its ring, else a compare-and-swap (a failure also writes
// the bucket's failure count).
// A change of state is claimed by one thread (a pending bit in the word) and
// published with one store; no call waits for it: one arriving in that
// instant is judged by the state before, or rejected with a short
// retry-after (retry_soon). Each change is numbered (the events'
// `generation`), so listeners on different threads can order them. Every
// mode counts each closed period apart (its window or run is tagged with the
// state generation, and a record with the generation it saw): a result
// recorded while reset() or any other change runs does not land in the
// window of the closed period that follows (but for one rare race in the
// time window's shared rings, detail/rolling_window.hpp). Nothing allocates per call.
// For a cheaper clock read, use basic_circuit_breaker<coarse_steady_clock>
// (resil/coarse_clock.hpp).
//
// This header holds the state machine (state word, admission, transitions,
// results) and includes its parts: the options and their validate()
// (circuit_breaker/options.hpp), the metrics snapshot
// (circuit_breaker/metrics.hpp) and the three modes behind one interface
// (detail/breaker_modes.hpp).
//
// Share one breaker per dependency, for the lifetime of the service; in a
// pipeline pass it as std::ref(breaker). State changes are reported to
// `on_state_change` and, through a pipeline, as events to its listener.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <thread>
#include <utility>
#include <variant>

#include "detail/platform.hpp"
#include "circuit_breaker/metrics.hpp"
#include "circuit_breaker/options.hpp"
#include "clock.hpp"
#include "detail/breaker_modes.hpp"
#include "detail/rolling_window.hpp"
#include "detail/saturate.hpp"
#include "events.hpp"
#include "outcome.hpp"
#include "policy_steps.hpp"
#include "validation.hpp"

namespace resil {

/// A circuit breaker on `Clock` (see the top of this header). Every member
/// may be called from any thread at any time. Neither copyable nor movable:
/// share it by reference (std::ref in a pipeline). Size: a few hundred bytes,
/// plus, allocated at construction, 640 bytes per stripe in time_window mode
/// (two rings of 256 bytes, one written by a thread alone and one shared,
/// and the rejection counter's 128; one stripe per hardware thread, rounded
/// up to a power of two, at most 64: 2.5 KB on 4 threads, 40 KB on 64) or
/// window_calls / 4 bytes in count_window mode.
template <clock Clock = steady_clock>
class basic_circuit_breaker {
public:
    /// The clock type it reads.
    using clock_type = Clock;
    /// Reads its own clock (resil/clock.hpp, time_source).
    static constexpr resil::time_source time_source = resil::time_source::own_clock;

    /// The answer of try_acquire(): admitted (then hand it to record() or
    /// release()) or rejected (then retry_after() says for how long).
    /// Move-only; a moved-from permit is a rejection. A probe permit
    /// destroyed without being recorded is released, so a forgotten or
    /// unwound call does not hold a half-open slot.
    class permit {
    public:
        permit() noexcept = default;
        /// Takes over `other`'s admission; `other` holds nothing after.
        permit(permit&& other) noexcept { take(other); }
        /// Releases the admission it holds (as release() does), then takes over
        /// `other`'s.
        permit& operator=(permit&& other) noexcept {
            if (this != &other) {
                release_if_probe();
                take(other);
            }
            return *this;
        }
        permit(const permit&) = delete;
        permit& operator=(const permit&) = delete;
        ~permit() { release_if_probe(); }

        /// True when the call may go ahead.
        [[nodiscard]] bool admitted() const noexcept { return kind_ != kind::rejected; }
        /// admitted().
        explicit operator bool() const& noexcept { return admitted(); }
        // `if (breaker.try_acquire())` would test a permit that is gone at once.
        explicit operator bool() const&& = delete;
        /// True for one of the calls a half-open breaker lets through.
        [[nodiscard]] bool probe() const noexcept { return kind_ == kind::probe; }
        /// For a rejection: how long to wait before asking again (usable as
        /// Retry-After); never zero. Open: the time left until the next
        /// probe. Half-open with every probe out: as long as the probes have
        /// been out so far, at least retry_soon and at most the time left
        /// before they time out (see docs/circuit_breaker.md). While the
        /// breaker is changing state at that very instant: retry_soon. Unset
        /// when admitted, and when the breaker is isolated (open until
        /// someone resets it).
        [[nodiscard]] std::optional<duration> retry_after() const noexcept {
            if (kind_ != kind::rejected || !has_retry_after_) return std::nullopt;
            return retry_after_;
        }

    private:
        friend class basic_circuit_breaker;
        enum class kind : std::uint8_t { rejected, closed, probe };

        permit(const basic_circuit_breaker* owner, std::uint64_t generation, kind k) noexcept
            : owner_(owner), generation_(generation), kind_(k) {}
        static permit rejection(std::optional<duration> wait) noexcept {
            permit p;
            p.retry_after_ = wait.value_or(duration::zero());
            p.has_retry_after_ = wait.has_value();
            return p;
        }
        void take(permit& other) noexcept {
            owner_ = std::exchange(other.owner_, nullptr);
            generation_ = other.generation_;
            started_ = other.started_;
            retry_after_ = other.retry_after_;
            kind_ = std::exchange(other.kind_, kind::rejected);  // a moved-from permit admits nothing
            has_retry_after_ = std::exchange(other.has_retry_after_, false);
        }
        void release_if_probe() noexcept {
            if (owner_ != nullptr && kind_ == kind::probe) owner_->release_probe(*this);
            owner_ = nullptr;
        }

        const basic_circuit_breaker* owner_ = nullptr;  // null once recorded or released
        std::uint64_t generation_ = 0;
        time_point started_{};  // when admitted; read only with a slow-call threshold
        duration retry_after_{};
        kind kind_ = kind::rejected;
        bool has_retry_after_ = false;
    };

    /// Throws std::invalid_argument when options.validate() names a field:
    /// "resil::circuit_breaker: `window` must be in [10ms, 24h], got 5ms".
    explicit basic_circuit_breaker(circuit_breaker_options options = {}, Clock clock = {});

    basic_circuit_breaker(const basic_circuit_breaker&) = delete;
    basic_circuit_breaker& operator=(const basic_circuit_breaker&) = delete;

    /// Asks to make a call. Closed: admitted, without reading the clock (unless
    /// a slow-call threshold is set). Open: rejected with the time left until
    /// the next probe; once open_for has passed, the first caller becomes the
    /// first probe. Half-open: admitted as a probe while probes remain.
    [[nodiscard]] permit try_acquire() noexcept { return acquire(nullptr, std::nullopt); }

    /// Reports an admitted call's verdict; the permit is spent. Results of
    /// calls admitted before the breaker last changed state are counted in
    /// metrics() but decide nothing. A rejected or spent permit is ignored.
    void record(permit& p, verdict v) noexcept { record_result(p, v, std::nullopt, nullptr); }
    /// record() of a permit passed as a temporary.
    void record(permit&& p, verdict v) noexcept { record_result(p, v, std::nullopt, nullptr); }
    /// The same, with the call's duration for the slow-call rule (instead of
    /// the time since try_acquire()).
    void record(permit& p, verdict v, duration elapsed) noexcept { record_result(p, v, elapsed, nullptr); }
    /// record() with the call's duration, of a permit passed as a temporary.
    void record(permit&& p, verdict v, duration elapsed) noexcept { record_result(p, v, elapsed, nullptr); }

    /// Gives an admitted permit back without a verdict (the call was not made,
    /// e.g. an inner limit refused it): a probe's slot goes to the next caller.
    void release(permit& p) noexcept { release_probe(p); }
    /// release() of a permit passed as a temporary.
    void release(permit&& p) noexcept { release_probe(p); }

    /// Holds the breaker open, rejecting every call, until reset().
    void isolate() noexcept;

    /// Closes the breaker with an empty window, whatever its state (ends isolate()).
    void reset() noexcept;

    /// The retry-after of a call rejected in the instant the breaker changes
    /// state (the change takes nanoseconds; a zero would read as "retry now",
    /// in a hot loop).
    static constexpr duration retry_soon = std::chrono::milliseconds{1};

    /// The current state. Open turns half-open when the first call arrives
    /// after open_for, not by itself.
    [[nodiscard]] circuit_state state() const noexcept { return state_of(state_.load(std::memory_order_acquire)); }
    /// True while held open by isolate().
    [[nodiscard]] bool isolated() const noexcept { return (state_.load(std::memory_order_acquire) & isolated_bit) != 0; }
    /// How much longer the breaker refuses every call without a probe: while
    /// open, the time left of open_for on the breaker's clock (read only
    /// then), duration::max() while isolated; zero in any other state, and
    /// once open_for has passed (the next call becomes a probe). For a
    /// balancer telling which endpoints can take a call now.
    [[nodiscard]] duration refusing_for() const noexcept {
        for (;;) {
            const auto s = state_.load(std::memory_order_acquire);
            if ((s & state_mask) != open_state) return duration::zero();
            if (s & isolated_bit) return duration::max();
            if (s & pending_bit) return duration::zero();  // half-open (or reset) any moment now
            if (const auto until = read_deadline(s)) {
                const auto now = clock_.now();
                return now < *until ? *until - now : duration::zero();
            }
        }
    }

    /// The options in force (probe_timeout resolved).
    [[nodiscard]] const circuit_breaker_options& options() const noexcept { return options_; }
    /// The clock it reads.
    [[nodiscard]] const Clock& clock() const noexcept { return clock_; }

    /// A snapshot of the counters; exact when no call is in progress. Reads
    /// the clock in time_window mode (for the window's counts).
    [[nodiscard]] circuit_breaker_metrics metrics() const noexcept;

    /// The pipeline policy: rejects with reason::circuit_open (emitting
    /// events::rejected) or runs the rest of the pipeline and records the
    /// attempt's verdict. An inner rejection (nothing attempted) gives the
    /// permit back uncounted. State changes are emitted as
    /// events::breaker_state_changed. Thread-safe (const: the state is atomic).
    ///
    /// Time: when the context reads the breaker's time line
    /// (resil::same_time_line), the breaker takes the attempt's reading
    /// (ctx.cached_now()) instead of reading its clock: a success is counted
    /// at the reading its attempt started with, so a pipeline whose other
    /// policies read the clock anyway pays no read for the breaker. A failure
    /// (and, with slow_call_threshold, every result) is counted at a fresh
    /// reading as the attempt ends, which the policies around then share. On
    /// another time line the breaker reads its own clock, as when used alone.
    template <class Context, class Next>
    auto execute(Context& ctx, Next&& next) const {
        // The steps below, driven blocking; their common case (enter()'s and
        // leave()'s fast path, the same count_fast) written out without an
        // admission, so that the compiler keeps it as lean as a hand-written
        // call: resil::pipeline runs this.
        const auto s = state_.load(std::memory_order_relaxed);
        if (admits_fast(s)) [[likely]] {
            const bool shared = shares_readings(ctx);
            const time_point started = shared ? ctx.cached_now() : time_point{};
            auto out = next(ctx);  // nothing to give back if it throws
            if (out.attempted()) count_fast(ctx, s, shared, started, out.verdict());
            return out;
        }
        return detail::run_steps(*this, ctx, next);
    }

    /// A call as enter() admitted it: what leave() needs to count its
    /// result. One dropped without leave() (the call unwound) gives a
    /// probe's slot back, as a permit does. It holds its permit's fields,
    /// not the permit: a state whose address reaches no out-of-line code
    /// stays in registers on the common path.
    class admission {
    public:
        admission() noexcept {}
        admission(const admission&) = delete;
        admission& operator=(const admission&) = delete;
        ~admission() {
            if (held_) (void)take();  // the permit, destroyed at once, gives a probe back
        }

    private:
        friend class basic_circuit_breaker;
        void hold(permit&& p) noexcept {
            owner_ = std::exchange(p.owner_, nullptr);
            word_ = p.generation_;
            permit_started_ = p.started_;
            kind_ = p.kind_;
            held_ = owner_ != nullptr;
        }
        permit take() noexcept {
            held_ = false;
            permit p{owner_, word_, kind_};
            p.started_ = permit_started_;
            return p;
        }
        std::optional<time_point> started() const noexcept {
            if (!has_started_) return std::nullopt;
            return started_;
        }

        // Every field initialised: g++ -O3 cannot always see that enter()
        // sets what leave() reads (a few stores of constants per call).
        std::uint64_t word_ = 0;  // fast path: the closed state admitted in; else the permit's generation
        time_point started_{};    // the attempt's reading, when the breaker uses it (has_started_)
        // The permit taken unless admitted on the fast path.
        const basic_circuit_breaker* owner_ = nullptr;
        time_point permit_started_{};
        typename permit::kind kind_ = permit::kind::rejected;
        bool held_ = false;
        bool fast_ = false;
        bool shared_ = false;
        bool has_started_ = false;
    };

    /// What the policy keeps during a call (policy_steps.hpp): its admission.
    template <class Context, class Outcome>
    using call_state = admission;

    /// The policy's first step: admits the call, or refuses it with
    /// reason::circuit_open (emitting breaker_state_changed and rejected).
    /// The common case, a closed breaker counting in a time window, takes no
    /// permit: nothing to give back.
    template <class Context>
    layer_in enter(Context& ctx, admission& a) const {
        a.shared_ = shares_readings(ctx);
        const auto s = state_.load(std::memory_order_relaxed);
        if (admits_fast(s)) [[likely]] {
            a.fast_ = true;
            a.word_ = s;
            // Set either way: leave() passes it on by value (a copy of an
            // indeterminate value would be undefined), read only when shared.
            a.started_ = a.shared_ ? ctx.cached_now() : time_point{};
            return layer_in::proceed();
        }
        // Taken only where a reading is needed anyway: a count or run of
        // failures needs none for a success.
        a.has_started_ = a.shared_ && (timed_ || options_.mode == breaker_mode::time_window);
        if (a.has_started_) a.started_ = ctx.cached_now();
        auto p = acquire_in(ctx, a.started());
        if (!p) return layer_in::refuse(reason::circuit_open, p.retry_after());
        a.hold(std::move(p));
        return layer_in::proceed();
    }

    /// The policy's second step: counts the outcome of a call enter()
    /// admitted (an inner rejection, nothing attempted, gives the permit back
    /// uncounted) and emits breaker_state_changed when it changes the state.
    template <class Context, class Outcome>
    layer_out leave(Context& ctx, admission& a, const Outcome& out) const {
        if (a.fast_) {
            a.fast_ = false;  // counted once
            if (out.attempted()) count_fast(ctx, a.word_, a.shared_, a.started_, out.verdict());
        } else if (a.held_) {
            count_with_permit(ctx, a.take(), a.shared_, a.started(), out.attempted(), out.verdict());
        }
        return layer_out::proceed();
    }

private:
    // The steps' uncommon paths, given values: neither the admission nor the
    // outcome has its address taken on the common path.
    template <class Context>
    permit acquire_in(Context& ctx, std::optional<time_point> started) const {
        std::optional<events::breaker_state_changed> changed;
        auto p = acquire(&changed, started);
        if (changed) {
            ctx.emit(*changed);
            ctx.clear_cached_now();  // a listener (or on_state_change) may have taken a while
        }
        if (!p) ctx.emit(events::rejected{reason::circuit_open, p.retry_after()});
        return p;
    }

    template <class Context>
    void count_with_permit(Context& ctx, permit p, bool shared, std::optional<time_point> started, bool attempted,
                           verdict v) const {
        transition_note changed;
        if (attempted) {
            std::optional<time_point> at;
            if (shared) {
                if (started && !timed_ && !p.probe() && !options_.failure_verdicts.contains(v))
                    at = success_time(ctx, *started, p.generation_);  // a success in the closed window
                else if (started || options_.failure_verdicts.contains(v))
                    at = ctx.cached_now();  // fresh (the pipeline dropped the start's), and shared with retry
            }
            record_result(p, v, std::nullopt, &changed, at);
        } else {
            release_probe(p);
        }
        if (changed) {
            ctx.emit(*changed);
            ctx.clear_cached_now();  // a listener (or on_state_change) may have taken a while
        }
    }

private:
    using transition_note = std::optional<events::breaker_state_changed>;

    // The common case, kept lean: a closed breaker counting in a time window
    // without a slow-call rule admits without a permit (there is nothing to
    // give back), and counts the result at one reading.
    [[nodiscard]] bool admits_fast(std::uint64_t s) const noexcept {
        return plain_time_window_ && (s & state_mask) == closed_state;
    }

    // Counts the result of an attempt admitted on the fast path in state
    // word `s`; `started` is the attempt's reading when `shared`. A success
    // is counted inline: execute() and leave() both call this, and a
    // function called from two places is no longer inlined by the size
    // heuristics alone.
    template <class Context>
    [[gnu::always_inline]] void count_fast(Context& ctx, std::uint64_t s, bool shared, time_point started,
                                           verdict v) const {
        const auto generation = generation_of(s);
        if (!options_.failure_verdicts.contains(v)) [[likely]] {
            record_plain_closed(generation, false, shared ? success_time(ctx, started, generation) : clock_.now(),
                                nullptr);
            return;
        }
        count_fast_failure(ctx, generation, shared);
    }

    template <class Context>
    void count_fast_failure(Context& ctx, std::uint64_t generation, bool shared) const {
        transition_note changed;
        record_plain_closed(generation, true, shared ? ctx.cached_now() : clock_.now(), &changed);
        if (changed) {
            ctx.emit(*changed);
            ctx.clear_cached_now();  // a listener (or on_state_change) may have taken a while
        }
    }

    template <class Context>
    bool shares_readings(const Context& ctx) const noexcept {
        return detail::context_reads(ctx, clock_);
    }

    // When a success counts: the reading its attempt started with, which
    // stands for the end as long as the window has not moved past that
    // reading's bucket meanwhile. If it has (a call longer than what is left
    // of its bucket, while other calls moved the window on), a fresh reading:
    // counted at its start, a long success would leave the window before the
    // failures around it, and skew the ratio towards opening.
    template <class Context>
    time_point success_time(Context& ctx, time_point started, std::uint64_t generation) const noexcept {
        const auto* window = std::get_if<detail::time_window_mode>(&window_);
        if (window != nullptr && window->behind(started, generation)) return ctx.cached_now();
        return started;
    }

    // The state word: | generation (40) | probes succeeded (10) | probes admitted (10) |
    // pending (1) | isolated (1) | state (2) |. The generation grows with every
    // change of state, so a permit knows whether its state still holds and no
    // compare-and-swap can mistake a later state for an earlier one.
    // `pending` marks a change in progress: the one thread that set it is the
    // only writer of `deadline_` and of the next state, and nobody else
    // modifies a pending word (they treat it as the state it was, or wait).
    static constexpr std::uint64_t state_mask = 0b11;
    static constexpr std::uint64_t closed_state = 0;
    static constexpr std::uint64_t open_state = 1;
    static constexpr std::uint64_t half_open_state = 2;
    static constexpr std::uint64_t isolated_bit = 1u << 2;
    static constexpr std::uint64_t pending_bit = 1u << 3;
    static constexpr int admitted_shift = 4;
    static constexpr int succeeded_shift = 14;
    static constexpr int generation_shift = 24;
    static constexpr std::uint64_t probe_count_max = (1u << 10) - 1;
    static constexpr std::uint64_t admitted_one = std::uint64_t{1} << admitted_shift;
    static constexpr std::uint64_t succeeded_one = std::uint64_t{1} << succeeded_shift;
    static constexpr std::uint64_t probe_counts_mask = (probe_count_max << admitted_shift) | (probe_count_max << succeeded_shift);

    static constexpr circuit_state state_of(std::uint64_t s) noexcept {
        switch (s & state_mask) {
            case open_state: return circuit_state::open;
            case half_open_state: return circuit_state::half_open;
            default: return circuit_state::closed;
        }
    }
    static constexpr std::uint64_t generation_of(std::uint64_t s) noexcept { return s >> generation_shift; }
    static constexpr std::uint64_t admitted_of(std::uint64_t s) noexcept { return (s >> admitted_shift) & probe_count_max; }
    static constexpr std::uint64_t succeeded_of(std::uint64_t s) noexcept { return (s >> succeeded_shift) & probe_count_max; }
    /// The word of the next generation in `state`, with no flags or counts.
    static constexpr std::uint64_t next_word(std::uint64_t s, std::uint64_t state) noexcept {
        return ((generation_of(s) + 1) << generation_shift) | state;
    }

    static_assert(circuit_breaker_options::max_probes <= probe_count_max);

    static circuit_breaker_options in_force(circuit_breaker_options o);

    using window_modes =
        std::variant<detail::time_window_mode, detail::count_window_mode, detail::consecutive_failures_mode>;

    // The one place that turns the mode into a type; each alternative is
    // built in place (none is movable).
    static window_modes make_window(const circuit_breaker_options& o);

    // ---- admission ----

    // `now`: a reading to use instead of the clock, if the caller has one.
    permit acquire(transition_note* note, std::optional<time_point> now) const noexcept {
        const auto s = state_.load(std::memory_order_relaxed);
        if ((s & state_mask) == closed_state) [[likely]]
            return admitted(s, permit::kind::closed, now);
        return acquire_slow(note, now);
    }

    permit admitted(std::uint64_t s, typename permit::kind k, std::optional<time_point> now) const noexcept {
        permit p{this, generation_of(s), k};
        if (timed_) p.started_ = now ? *now : clock_.now();
        return p;
    }

    permit rejected(std::optional<duration> wait) const noexcept {
        rejections_.add();
        return permit::rejection(wait);
    }

    permit acquire_slow(transition_note* note, std::optional<time_point> now) const noexcept;

    // The retry-after of a call turned away while every probe is out, `left`
    // before they time out. That is the worst case; the probes may report
    // back any moment. The expected case is guessed from how long they have
    // been out already: come back after as long again, at least retry_soon,
    // at most `left`. A caller that keeps being turned away thus checks back
    // at doubling intervals (about 15 times over a 30 s probe timeout), and
    // finds a closed breaker at most about as late as the probes took.
    duration half_open_retry_after(duration left) const noexcept {
        const auto out_for = options_.probe_timeout - left;  // since half-open began
        return std::min(left, std::max(retry_soon, out_for));
    }

    // The deadline of state `s` (end of open, or of the probes' time), or
    // nothing when the state changed meanwhile. deadline_ is written only by
    // the thread holding a pending word, before it publishes the next state;
    // reading the state again after it proves the value belongs to `s`.
    std::optional<time_point> read_deadline(std::uint64_t s) const noexcept {
        const auto ticks = deadline_.load(std::memory_order_acquire);
        const auto again = state_.load(std::memory_order_relaxed);
        if ((again & ~probe_counts_mask) != (s & ~probe_counts_mask)) return std::nullopt;
        return time_point{duration{ticks}};
    }

    // ---- changes of state ----

    /// Waits until no change is in progress, then claims the next change
    /// (isolate(), reset(): they must not be lost to a change under way),
    /// unless `wanted(word)` says there is nothing to change. Returns the
    /// claimed word, or nothing.
    template <class Wanted>
    std::optional<std::uint64_t> claim_when_settled(Wanted wanted) const noexcept {
        auto s = state_.load(std::memory_order_acquire);
        for (;;) {
            if (s & pending_bit) {
                std::this_thread::yield();
                s = state_.load(std::memory_order_acquire);
                continue;
            }
            if (!wanted(s)) return std::nullopt;
            if (begin_transition(s)) return s;
        }
    }

    /// Claims the right to change state `s` (sets pending). On failure `s`
    /// holds the current word. A word already pending belongs to another
    /// thread's change: never claimed twice.
    bool begin_transition(std::uint64_t& s) const noexcept;

    struct finished {
        std::uint64_t word;    // the state published
        std::uint64_t number;  // the change's number (event generation); 0 when the state stayed the same
    };

    /// Publishes the next state (`state_and_counts` in the next generation)
    /// after begin_transition(s).
    finished finish_transition(std::uint64_t s, std::uint64_t state_and_counts,
                               std::optional<time_point> until) const noexcept {
        if (until) deadline_.store(until->time_since_epoch().count(), std::memory_order_release);
        const auto word = next_word(s, 0) | state_and_counts;
        // Numbered while the change is still claimed: the next change cannot
        // begin before this one is published, so the numbers follow the order
        // in which changes take effect.
        const std::uint64_t number =
            state_of(word) != state_of(s) ? transitions_.fetch_add(1, std::memory_order_relaxed) + 1 : 0;
        if (state_of(word) == circuit_state::closed)
            window_generation_.store(generation_of(word), std::memory_order_relaxed);
        state_.store(word, std::memory_order_release);
        return {word, number};
    }

    void notify(const events::breaker_state_changed& e, transition_note* note) const noexcept;

    /// Starts the window of the closed state that the change claimed in `s`
    /// is about to publish, stamped with that state's generation, so a record
    /// that read an earlier state no longer counts in it (a time window
    /// empties its shared rings now, and each ring a thread writes alone at
    /// that thread's first record in the new generation).
    void clear_window(std::uint64_t s) const noexcept;

    // ---- results ----

    // `at`: the reading to count the result at, if the caller has one.
    void record_result(permit& p, verdict v, std::optional<duration> elapsed, transition_note* note,
                       std::optional<time_point> at = std::nullopt) const noexcept {
        if (p.owner_ != this || p.kind_ == permit::kind::rejected) return;
        p.owner_ = nullptr;  // spent
        const bool failed = options_.failure_verdicts.contains(v);
        if (plain_time_window_ && p.kind_ == permit::kind::closed) [[likely]]
            return record_plain_closed(p.generation_, failed, at ? *at : clock_.now(), note);
        record_general(p, failed, elapsed, note, at);
    }

    // The hot path: one state load and one bucket written, at the reading `t`.
    // A result of a closed period that has ended decides nothing.
    [[gnu::always_inline]] void record_plain_closed(std::uint64_t generation, bool failed, time_point t,
                                                    transition_note* note) const noexcept {
        const auto s = state_.load(std::memory_order_acquire);
        if ((s & state_mask) != closed_state || generation_of(s) != generation) [[unlikely]]
            return count_other(failed);
        // plain_time_window_ says which alternative is held: no dispatch.
        auto& window = *std::get_if<detail::time_window_mode>(&window_);
        if (const auto counts = window.record(failed, generation, [t] { return t; }))
            if (window.opens(*counts)) open_from_closed(s, *counts, t, note);
    }

    void record_general(const permit& p, bool failed, std::optional<duration> elapsed, transition_note* note,
                        std::optional<time_point> now) const noexcept;

    void count_other(bool failed) const noexcept {
        other_calls_.fetch_add(1, std::memory_order_relaxed);
        if (failed) other_failures_.fetch_add(1, std::memory_order_relaxed);
    }

    void record_closed(std::uint64_t s, bool failed, std::optional<time_point> now, transition_note* note) const noexcept {
        std::visit([&](auto& mode) { record_in(mode, s, failed, now, note); }, window_);
    }

    /// Counts a result of the closed state `s` in its window (or run), and
    /// opens the breaker when the mode says so. Only the time window reads the
    /// clock, unless the breaker opens.
    template <class Mode>
    void record_in(Mode& mode, std::uint64_t s, bool failed, std::optional<time_point> now,
                   transition_note* note) const noexcept {
        const auto counts = mode.record(failed, generation_of(s), [&] {
            if (!now) now = clock_.now();
            return *now;
        });
        if (counts && mode.opens(*counts)) open_from_closed(s, *counts, now, note);
    }

    void open_from_closed(std::uint64_t s, detail::window_counts counts, std::optional<time_point> now,
                          transition_note* note) const noexcept;

    void record_probe(const permit& p, std::uint64_t s, bool failed, std::optional<time_point> now,
                      transition_note* note) const noexcept;

    void release_probe(permit& p) const noexcept {
        if (p.owner_ != this) return;
        p.owner_ = nullptr;
        if (p.kind_ != permit::kind::probe) return;
        auto s = state_.load(std::memory_order_acquire);
        while ((s & state_mask) == half_open_state && !(s & pending_bit) && generation_of(s) == p.generation_ &&
               admitted_of(s) > succeeded_of(s)) {
            if (state_.compare_exchange_weak(s, s - admitted_one, std::memory_order_acq_rel, std::memory_order_acquire))
                return;
        }
    }

    circuit_breaker_options options_;
    [[no_unique_address]] Clock clock_;

    // Read by every call; written only on changes of state. Kept apart from
    // the window's buckets, which every recorded call writes.
    alignas(64) mutable std::atomic<std::uint64_t> state_{0};
    mutable std::atomic<duration::rep> deadline_{0};  // end of open / of the probes' time
    // The generation of the latest closed state, whose window metrics() shows
    // (records are counted per closed period: see record_result).
    mutable std::atomic<std::uint64_t> window_generation_{0};
    bool timed_;                                      // a slow-call threshold is set
    bool plain_time_window_;                          // time_window mode, not timed: the fast path

    // The mode's window (or run) and its lifetime counts; written by every
    // recorded call, so kept on lines of its own.
    alignas(64) mutable window_modes window_;

    mutable detail::striped_counter rejections_;  // striped: every rejection adds one
    alignas(64) mutable std::atomic<std::uint64_t> transitions_{0};
    mutable std::atomic<std::uint64_t> other_calls_{0};  // probes, and calls whose state had passed
    mutable std::atomic<std::uint64_t> other_failures_{0};
    mutable std::atomic<std::uint64_t> slow_calls_{0};
};

template <clock Clock>
basic_circuit_breaker<Clock>::basic_circuit_breaker(circuit_breaker_options options, Clock clock)
    : options_(in_force(std::move(options))),
      clock_(std::move(clock)),
      timed_(options_.slow_call_threshold.has_value()),
      plain_time_window_(!timed_ && options_.mode == breaker_mode::time_window),
      window_(make_window(options_)) {}

template <clock Clock>
void basic_circuit_breaker<Clock>::isolate() noexcept {
    // Claimed like any change, so that its number is taken in order.
    const auto claimed = claim_when_settled([](std::uint64_t w) { return (w & isolated_bit) == 0; });
    if (!claimed) return;  // already isolated
    const auto s = *claimed;
    const auto changed = finish_transition(s, open_state | isolated_bit, std::nullopt);
    // Already open: held open now, but no change of state to report.
    if (changed.number != 0) notify({state_of(s), circuit_state::open, 0.0, 0, clock_.now(), changed.number}, nullptr);
}

template <clock Clock>
void basic_circuit_breaker<Clock>::reset() noexcept {
    const auto s = *claim_when_settled([](std::uint64_t) { return true; });
    clear_window(s);
    const auto changed = finish_transition(s, closed_state, std::nullopt);
    if (changed.number != 0)
        notify({state_of(s), circuit_state::closed, 0.0, 0, clock_.now(), changed.number}, nullptr);
}

template <clock Clock>
circuit_breaker_metrics basic_circuit_breaker<Clock>::metrics() const noexcept {
    const auto s = state_.load(std::memory_order_acquire);
    circuit_breaker_metrics m;
    m.state = state_of(s);
    m.isolated = (s & isolated_bit) != 0;
    const auto [lifetime, window] = std::visit(
        [this](const auto& mode) {
            const auto l = mode.lifetime();
            return std::pair{l, mode.window(window_generation_.load(std::memory_order_acquire),
                                            [this] { return clock_.now(); })};
        },
        window_);
    m.calls = lifetime.calls + other_calls_.load(std::memory_order_relaxed);
    m.failures = lifetime.failures + other_failures_.load(std::memory_order_relaxed);
    m.slow_calls = slow_calls_.load(std::memory_order_relaxed);
    m.rejections = rejections_.total();
    m.transitions = transitions_.load(std::memory_order_relaxed);
    m.calls_in_window = window.calls;
    m.failures_in_window = window.failures;
    return m;
}

template <clock Clock>
circuit_breaker_options basic_circuit_breaker<Clock>::in_force(circuit_breaker_options o) {
    throw_if_invalid("resil::circuit_breaker", o.validate());
    if (o.probe_timeout == duration::zero()) o.probe_timeout = o.open_for;
    return o;
}

template <clock Clock>
auto basic_circuit_breaker<Clock>::make_window(const circuit_breaker_options& o) -> window_modes {
    switch (o.mode) {
        case breaker_mode::count_window: return window_modes{std::in_place_type<detail::count_window_mode>, o};
        case breaker_mode::consecutive_failures:
            return window_modes{std::in_place_type<detail::consecutive_failures_mode>, o};
        case breaker_mode::time_window: break;
    }
    return window_modes{std::in_place_type<detail::time_window_mode>, o};
}

template <clock Clock>
auto basic_circuit_breaker<Clock>::acquire_slow(transition_note* note, std::optional<time_point> now) const noexcept
    -> permit {
    // Loaded again with acquire, so that the deadline read below is at
    // least as new as the state that published it.
    auto s = state_.load(std::memory_order_acquire);
    const auto read_now = [&] {
        if (!now) now = clock_.now();
        return *now;
    };
    for (;;) {
        switch (s & state_mask) {
            case closed_state: return admitted(s, permit::kind::closed, now);
            case open_state: {
                if (s & isolated_bit) return rejected(std::nullopt);
                if (s & pending_bit) return rejected(retry_soon);  // half-open (or reset) any moment now
                const auto until = read_deadline(s);
                if (!until) {
                    s = state_.load(std::memory_order_acquire);
                    continue;
                }
                const auto t = read_now();
                if (t < *until) return rejected(*until - t);
                if (!begin_transition(s)) continue;
                // This caller is the first probe.
                const auto changed = finish_transition(s, half_open_state | admitted_one,
                                                       detail::saturating_add(t, options_.probe_timeout));
                notify({circuit_state::open, circuit_state::half_open, 0.0, 0, t, changed.number}, note);
                return admitted(changed.word, permit::kind::probe, now);
            }
            default: {  // half-open
                if (s & pending_bit) return rejected(retry_soon);  // closing or reopening right now
                if (admitted_of(s) < options_.half_open_probes) {
                    if (state_.compare_exchange_weak(s, s + admitted_one, std::memory_order_acq_rel,
                                                     std::memory_order_acquire))
                        return admitted(s, permit::kind::probe, now);
                    continue;
                }
                const auto until = read_deadline(s);
                if (!until) {
                    s = state_.load(std::memory_order_acquire);
                    continue;
                }
                const auto t = read_now();
                if (t < *until) return rejected(half_open_retry_after(*until - t));
                // The probes did not all report back in time: the dependency
                // is still not answering. Open again.
                if (!begin_transition(s)) continue;
                const auto admitted_probes = admitted_of(s);
                const auto unanswered = admitted_probes - succeeded_of(s);
                const auto changed = finish_transition(s, open_state, detail::saturating_add(t, options_.open_for));
                notify({circuit_state::half_open, circuit_state::open,
                        static_cast<double>(unanswered) / static_cast<double>(admitted_probes), admitted_probes, t,
                        changed.number},
                       note);
                return rejected(options_.open_for);
            }
        }
    }
}

template <clock Clock>
bool basic_circuit_breaker<Clock>::begin_transition(std::uint64_t& s) const noexcept {
    if (s & pending_bit) {
        s = state_.load(std::memory_order_acquire);
        return false;
    }
    return state_.compare_exchange_strong(s, s | pending_bit, std::memory_order_acq_rel, std::memory_order_acquire);
}

template <clock Clock>
void basic_circuit_breaker<Clock>::notify(const events::breaker_state_changed& e,
                                          transition_note* note) const noexcept {
    if (note) *note = e;
    if (options_.on_state_change) {
        try {
            options_.on_state_change(e);
        } catch (...) {  // NOLINT(bugprone-empty-catch): a listener cannot undo the change
        }
    }
}

template <clock Clock>
void basic_circuit_breaker<Clock>::clear_window(std::uint64_t s) const noexcept {
    const auto next_generation = generation_of(next_word(s, closed_state));
    std::visit([next_generation](auto& mode) { mode.begin_generation(next_generation); }, window_);
}

template <clock Clock>
void basic_circuit_breaker<Clock>::record_general(const permit& p, bool failed, std::optional<duration> elapsed,
                                                  transition_note* note, std::optional<time_point> now) const noexcept {
    if (timed_) {
        if (!elapsed) {
            if (!now) now = clock_.now();
            elapsed = *now - p.started_;
        }
        if (*elapsed > *options_.slow_call_threshold) {
            slow_calls_.fetch_add(1, std::memory_order_relaxed);
            failed = true;
        }
    }
    const auto s = state_.load(std::memory_order_acquire);
    if (p.kind_ == permit::kind::closed) {
        if ((s & state_mask) != closed_state || generation_of(s) != p.generation_) return count_other(failed);
        record_closed(s, failed, now, note);
    } else {
        count_other(failed);
        record_probe(p, s, failed, now, note);
    }
}

template <clock Clock>
void basic_circuit_breaker<Clock>::open_from_closed(std::uint64_t s, detail::window_counts counts,
                                                    std::optional<time_point> now,
                                                    transition_note* note) const noexcept {
    // Time is read before claiming the change: the claim is held for as
    // short a moment as possible.
    const auto t = now ? *now : clock_.now();
    if (!begin_transition(s)) return;  // another thread is opening it (or it changed)
    const auto changed = finish_transition(s, open_state, detail::saturating_add(t, options_.open_for));
    notify({circuit_state::closed, circuit_state::open,
            counts.calls == 0 ? 0.0 : static_cast<double>(counts.failures) / static_cast<double>(counts.calls),
            counts.calls, t, changed.number},
           note);
}

template <clock Clock>
void basic_circuit_breaker<Clock>::record_probe(const permit& p, std::uint64_t s, bool failed,
                                                std::optional<time_point> now, transition_note* note) const noexcept {
    for (;;) {
        // A probe of a finished round (timed out, reset, ...) decides nothing.
        if ((s & state_mask) != half_open_state || (s & pending_bit) || generation_of(s) != p.generation_) return;
        const auto succeeded = succeeded_of(s) + (failed ? 0 : 1);
        if (failed) {
            if (!now) now = clock_.now();  // before the claim, to keep it short
            const auto t = *now;
            if (!begin_transition(s)) continue;
            const auto changed = finish_transition(s, open_state, detail::saturating_add(t, options_.open_for));
            notify({circuit_state::half_open, circuit_state::open, 1.0 / static_cast<double>(succeeded + 1),
                    succeeded + 1, t, changed.number},
                   note);
            return;
        }
        if (succeeded >= options_.half_open_probes) {
            if (!begin_transition(s)) continue;
            clear_window(s);
            const auto changed = finish_transition(s, closed_state, std::nullopt);
            notify({circuit_state::half_open, circuit_state::closed, 0.0, succeeded, now ? *now : clock_.now(),
                    changed.number},
                   note);
            return;
        }
        if (state_.compare_exchange_weak(s, s + succeeded_one, std::memory_order_acq_rel, std::memory_order_acquire))
            return;
    }
}

/// A circuit breaker on the real clock.
using circuit_breaker = basic_circuit_breaker<>;

#if RESIL_DETAIL_EXTERN_TEMPLATES
// Compiled once, by resil/separate_compilation.hpp (detail/platform.hpp).
extern template class basic_circuit_breaker<steady_clock>;
#endif

}  // namespace resil
