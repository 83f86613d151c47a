// resil/outcome.hpp — what one attempt says (a verdict) and what a whole call
// returns (an outcome: the callable's value, or a rejection with its reason).
//
//   auto out = pipeline(call);
//   if (!out) {                                  // not a success, for a reason
//       log(resil::to_string(out.reason()));     // "circuit_open", "retries_exhausted", ...
//       if (out.has_value()) inspect(*out);      // e.g. the last 503 after retries ran out
//       return plan_b();
//   }
//   use(*out);
#pragma once

#include <array>
#include <cstdint>
#include <exception>
#include <initializer_list>
#include <memory>
#include <new>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>

#include "enum_name.hpp"
#include "clock.hpp"
#include "reason.hpp"

namespace resil {

/// The value type of a callable returning void.
using unit = std::monostate;

/// What one attempt's result says about retrying it.
enum class verdict : std::uint8_t {
    success,    ///< done; nothing to retry
    retryable,  ///< failed, and a retry may succeed (refused connection, 429, 503, ...)
    permanent,  ///< failed, and would fail again (400, 404, 422, a malformed URL, ...)
    ambiguous,  ///< may have reached the server (a timeout after sending): retry only
                ///< when the operation is idempotent or carries an idempotency key
};

/// A small set of verdicts.
class verdict_set {
public:
    constexpr verdict_set() = default;
    /// The set of `vs`.
    constexpr verdict_set(std::initializer_list<verdict> vs) noexcept {
        for (auto v : vs) bits_ |= bit(v);
    }
    /// Whether `v` is in the set.
    [[nodiscard]] constexpr bool contains(verdict v) const noexcept { return (bits_ & bit(v)) != 0; }
    /// Equal when they hold the same verdicts.
    friend constexpr bool operator==(verdict_set, verdict_set) = default;

private:
    static constexpr std::uint8_t bit(verdict v) noexcept { return static_cast<std::uint8_t>(1u << static_cast<unsigned>(v)); }
    std::uint8_t bits_ = 0;
};

/// What the server (or a lower layer) said besides the verdict.
struct server_hint {
    /// Wait at least this long before the next attempt (Retry-After, pushback).
    std::optional<duration> retry_after{};
    /// "Overloaded, don't retry": a lower layer already retried, or asks not to.
    bool dont_retry = false;

    /// Field-by-field equality.
    friend bool operator==(const server_hint&, const server_hint&) = default;
};

/// A classifier's answer: a verdict plus an optional hint. Implicit from a
/// verdict, so a classifier may return either.
struct classification {
    /// The attempt's verdict.
    resil::verdict verdict = verdict::success;
    /// What the result said besides it (Retry-After, don't retry, never sent).
    server_hint hint{};
    /// The request is known never to have left the client: a refused
    /// connection, a failed DNS lookup, a TLS handshake refused, a breaker's
    /// refusal. A call may then move to another idempotency scope
    /// (resil/balancer.hpp). False unless the classifier knows: a failure
    /// that may have reached the server keeps a call in that server's scope.
    bool never_sent = false;

    constexpr classification() = default;
    /// A verdict with its hint; implicit, so a classifier may return a bare
    /// verdict.
    constexpr classification(resil::verdict v, server_hint h = {})  // NOLINT: implicit by design
        : verdict(v), hint(std::move(h)) {}
    /// A verdict on a request known never to have left the client.
    [[nodiscard]] static constexpr classification not_sent(resil::verdict v, server_hint h = {}) {
        classification c{v, std::move(h)};
        c.never_sent = true;
        return c;
    }
    /// Field-by-field equality.
    friend bool operator==(const classification&, const classification&) = default;
};

/// The verdict's name, e.g. "retryable".
[[nodiscard]] constexpr enum_name to_string(verdict v) noexcept {
    switch (v) {
        case verdict::success: return "success";
        case verdict::retryable: return "retryable";
        case verdict::permanent: return "permanent";
        case verdict::ambiguous: return "ambiguous";
    }
    return "unknown";
}

/// A small set of reasons (e.g. the failures a fallback handles).
class reason_set {
public:
    constexpr reason_set() = default;
    /// The set of `rs`.
    constexpr reason_set(std::initializer_list<reason> rs) noexcept {
        for (auto r : rs) bits_ |= bit(r);
    }
    /// Every reason but `none`.
    [[nodiscard]] static constexpr reason_set all() noexcept {
        reason_set s;
        s.bits_ = static_cast<std::uint32_t>(((std::uint32_t{1} << reason_count) - 1) & ~bit(reason::none));
        return s;
    }
    /// Whether `r` is in the set.
    [[nodiscard]] constexpr bool contains(reason r) const noexcept { return (bits_ & bit(r)) != 0; }
    /// True when it holds no reason.
    [[nodiscard]] constexpr bool empty() const noexcept { return bits_ == 0; }
    /// This set and `r` (a set built one reason at a time, e.g. from a configuration file).
    [[nodiscard]] constexpr reason_set with(reason r) const noexcept {
        reason_set s = *this;
        s.bits_ |= bit(r);
        return s;
    }
    /// Equal when they hold the same reasons.
    friend constexpr bool operator==(reason_set, reason_set) = default;

private:
    static constexpr std::uint32_t bit(reason r) noexcept { return std::uint32_t{1} << static_cast<unsigned>(r); }
    std::uint32_t bits_ = 0;
};

/// Counts per reason, indexable by resil::reason.
struct reason_counts {
    /// Counts indexed by reason (std::to_underlying(reason)).
    std::array<std::uint64_t, reason_count> by_reason{};
    /// The count of `r`.
    [[nodiscard]] std::uint64_t operator[](reason r) const noexcept { return by_reason[static_cast<std::size_t>(r)]; }
    /// The sum of every reason's count.
    [[nodiscard]] std::uint64_t total() const noexcept {
        std::uint64_t n = 0;
        for (auto c : by_reason) n += c;
        return n;
    }
    /// Field-by-field equality.
    friend bool operator==(const reason_counts&, const reason_counts&) = default;
};

/// A rejection as the caller sees it: the reason, and how long to wait before
/// trying again when the rejecting layer knows (a breaker's time to its next
/// probe, a bucket's wait for a token, a server's Retry-After).
struct rejection {
    /// Why the call was refused.
    resil::reason reason = reason::none;
    /// How long to wait before trying again, when the refusing layer knows.
    std::optional<duration> retry_after{};
};

/// Thrown by outcome::value() when there is no value to give.
class bad_outcome_access : public std::logic_error {
public:
    /// The exception for `r`, with a message naming it.
    explicit bad_outcome_access(resil::reason r)
        : std::logic_error("resil::outcome has no value (reason: " + std::string(to_string(r)) + ")"), reason_(r) {}
    /// The reason of the outcome that had no value.
    [[nodiscard]] resil::reason reason() const noexcept { return reason_; }

private:
    resil::reason reason_;
};

/// The result of a call through a pipeline: the callable's value with its
/// verdict, and a reason when it did not succeed. Both may be present: after
/// retries ran out on 503s, the value is the last 503 and the reason is
/// `retries_exhausted`. A rejection before any attempt (open circuit, shed,
/// ...) has no value. Works with move-only and non-default-constructible T.
template <class T>
class outcome {
public:
    /// The value a successful call yields.
    using value_type = T;

    /// A value with its classification; ok() when the verdict is success.
    template <class... Args>
    static outcome from_value(classification c, Args&&... args) {
        outcome o;
        ::new (static_cast<void*>(std::addressof(o.value_))) T(std::forward<Args>(args)...);
        o.classify_as(c, has_value_bit | one_attempt);
        // A nested pipeline's outcome keeps its precise reason (retries
        // exhausted, deadline exceeded, ...) rather than a plain "failed".
        if constexpr (requires { o.value_.reason(); o.value_.ok(); })
            if (!o.ok() && !o.value_.ok()) o.set_field(reason_shift, static_cast<std::uint32_t>(o.value_.reason()));
        return o;
    }
    /// A failure carried by an exception the user's classifier judged.
    static outcome from_exception(std::exception_ptr e, classification c) {
        outcome o;
        o.exception_ = std::move(e);
        o.classify_as(c, one_attempt);
        return o;
    }
    /// A failed attempt that left nothing to hold (no value, no exception):
    /// what a fault-injection policy returns in place of the call
    /// (resil/fault_injection.hpp). Unlike a rejection it counts as
    /// attempted(), so retries, breakers and fallbacks judge it by `c` as
    /// they judge any failed attempt; its reason is `r`. It counts as one
    /// attempt (attempts()), as the failure it stands for would.
    static outcome failed_attempt(classification c, resil::reason r) noexcept {
        outcome o;
        o.classify_as(c, attempted_bit | one_attempt);
        o.set_field(reason_shift, static_cast<std::uint32_t>(r));
        return o;
    }
    /// A rejection before (or instead of) any attempt.
    static outcome rejected(resil::reason r, std::optional<duration> retry_after = std::nullopt) noexcept {
        outcome o;
        o.state_ = pack(verdict::permanent, r, reason::none, retry_after ? has_retry_after_bit : 0);
        o.retry_after_ = retry_after.value_or(duration::zero());
        return o;
    }

    /// Moves the value and the state; `other` keeps its state and a moved-from
    /// value.
    outcome(outcome&& other) noexcept(std::is_nothrow_move_constructible_v<T>)
        : retry_after_(other.retry_after_), state_(other.state_) {
        // The value first: if its move throws, the source keeps its exception.
        if (other.has_value()) ::new (static_cast<void*>(std::addressof(value_))) T(std::move(other.value_));
        exception_ = std::move(other.exception_);
    }
    /// Copies the value and the state.
    outcome(const outcome& other) noexcept(std::is_nothrow_copy_constructible_v<T>)
        requires std::is_copy_constructible_v<T>
        : retry_after_(other.retry_after_), exception_(other.exception_), state_(other.state_) {
        if (other.has_value()) ::new (static_cast<void*>(std::addressof(value_))) T(other.value_);
    }
    /// Replaces its value and state with `other`'s.
    outcome& operator=(outcome&& other) noexcept(std::is_nothrow_move_constructible_v<T>) {
        if (this != &other) assign(std::move(other));
        return *this;
    }
    /// Assignment destroys the value held and builds the other's in its place
    /// (T need not be assignable); if that throws, this holds no value.
    outcome& operator=(const outcome& other) noexcept(std::is_nothrow_copy_constructible_v<T>)
        requires std::is_copy_constructible_v<T>
    {
        if (this != &other) assign(other);
        return *this;
    }
    ~outcome() { destroy_value(); }

    /// True when the call succeeded (possibly through a fallback).
    [[nodiscard]] bool ok() const noexcept { return reason() == reason::none; }
    /// ok(): true when the call succeeded.
    explicit operator bool() const noexcept { return ok(); }

    /// Whether it holds a value: a success, a fallback's value, or a failure
    /// that kept the last value (a 503 reply after retries).
    [[nodiscard]] bool has_value() const noexcept { return (state_ & has_value_bit) != 0; }
    /// The value; rethrows the classified exception, or throws
    /// bad_outcome_access, when there is none.
    [[nodiscard]] T& value() & { check(); return value_; }
    /// The value; throws bad_outcome_access when there is none.
    [[nodiscard]] const T& value() const& { check(); return value_; }
    /// The value, moved out; throws bad_outcome_access when there is none.
    [[nodiscard]] T&& value() && { check(); return std::move(value_); }
    /// The value, unchecked: has_value() must be true.
    [[nodiscard]] T& operator*() & noexcept { return value_; }
    /// The value, unchecked: has_value() must be true.
    [[nodiscard]] const T& operator*() const& noexcept { return value_; }
    /// The value's address, unchecked: has_value() must be true.
    [[nodiscard]] T* operator->() noexcept { return std::addressof(value_); }
    /// The value's address, unchecked: has_value() must be true.
    [[nodiscard]] const T* operator->() const noexcept { return std::addressof(value_); }

    /// How the last attempt's result was judged.
    [[nodiscard]] resil::verdict verdict() const noexcept {
        return static_cast<resil::verdict>((state_ >> verdict_shift) & verdict_mask);
    }
    /// Why the call failed; reason::none on success.
    [[nodiscard]] resil::reason reason() const noexcept { return static_cast<resil::reason>(field(reason_shift)); }
    /// reason() and retry_after() together.
    [[nodiscard]] resil::rejection rejection() const noexcept { return {reason(), retry_after()}; }
    /// How long to wait before trying again, when a layer or the server said.
    [[nodiscard]] std::optional<duration> retry_after() const noexcept {
        if ((state_ & has_retry_after_bit) == 0) return std::nullopt;
        return retry_after_;
    }
    /// True when outer layers must not retry this failure (an inner retry
    /// policy gave up, or the server said so).
    [[nodiscard]] bool dont_retry() const noexcept { return (state_ & dont_retry_bit) != 0; }
    /// The last attempt is known never to have left the client (classification::never_sent).
    [[nodiscard]] bool never_sent() const noexcept { return (state_ & never_sent_bit) != 0; }
    /// The exception a user's exception classifier caught, if any.
    [[nodiscard]] const std::exception_ptr& exception() const noexcept { return exception_; }
    /// Set when a fallback produced the value: the reason the call failed.
    [[nodiscard]] resil::reason fallback_reason() const noexcept {
        return static_cast<resil::reason>(field(fallback_reason_shift));
    }
    /// True when a fallback produced the value.
    [[nodiscard]] bool from_fallback() const noexcept { return fallback_reason() != reason::none; }
    /// How many times the callable ran for this call. An outcome built from
    /// the callable's value or exception (from_value, from_exception: what a
    /// pipeline makes of each attempt) says 1, a rejection (rejected) 0.
    /// resil::retry_policy sums the attempts of the runs it made (an inner
    /// refusal, such as an open breaker's, adds 0) into the outcome it
    /// returns; a fallback's value keeps the count of the outcome it
    /// replaces. So through resil::pipeline and resil::asio::pipeline: 1 for
    /// a call answered at once, more after retries, 0 when a policy refused
    /// the call before any attempt (open circuit, shed, no token,
    /// cancelled). A nested pipeline used as the callable counts 1 per run
    /// in the outer one (its own outcome, the value, holds its count); a
    /// hedged call (resil::asio::hedged) counts 1 too, and when its copies
    /// return outcomes the winner's says how many copies ran the callable.
    /// A policy of the user's that runs the rest of the pipeline again sets
    /// the count itself (set_attempts). At most max_attempts_counted.
    [[nodiscard]] std::uint32_t attempts() const noexcept { return state_ >> attempts_shift; }
    /// Sets what attempts() says (a retrying policy, when it returns); a
    /// larger `n` counts as max_attempts_counted.
    void set_attempts(std::uint32_t n) noexcept {
        state_ = (state_ & ~attempts_bits) |
                 (n < max_attempts_counted ? n : max_attempts_counted) << attempts_shift;
    }
    /// The most attempts() says (a retry policy allows 100 per call).
    static constexpr std::uint32_t max_attempts_counted = 0xFFu;

    /// Marks the call as failed for `r`, keeping any value (policies use this).
    void fail(resil::reason r) noexcept { set_field(reason_shift, static_cast<std::uint32_t>(r)); }
    /// Tells outer layers not to retry this failure (a lower layer already did).
    void mark_dont_retry() noexcept { state_ |= dont_retry_bit; }
    /// Says that some attempt of the call may have reached the server, even
    /// if the last was never sent (a retry policy, across its attempts).
    void mark_may_have_been_sent() noexcept { state_ &= ~never_sent_bit; }
    /// True when the reason comes from judging an attempt's result (it holds a
    /// value or a classified exception), false for a rejection before any attempt.
    [[nodiscard]] bool attempted() const noexcept {
        return (state_ & (has_value_bit | attempted_bit)) != 0 || exception_ != nullptr;
    }
    /// Replaces whatever this holds with a fallback value for the failure it had.
    template <class... Args>
    void replace_with_fallback(Args&&... args) {
        // Built before the old value goes: the arguments may refer to it
        // (a fallback serving the stale value).
        T replacement(std::forward<Args>(args)...);
        const auto why = ok() ? reason::failed : reason();
        exception_ = nullptr;
        destroy_value();
        ::new (static_cast<void*>(std::addressof(value_))) T(std::move(replacement));
        state_ = pack(verdict::success, reason::none, why, has_value_bit | (state_ & (has_retry_after_bit | dont_retry_bit | attempts_bits)));
    }

private:
    outcome() noexcept {}

    // verdict, reason, fallback reason, the flags and the attempt count
    // share one word, written and copied whole: an outcome passes through
    // every layer of a pipeline, and small fields stored one by one, then
    // copied as a wider word, stall the CPU's store forwarding at each of
    // those copies; a separate count would also widen outcome<int> by 8 bytes
    // for every copy between the layers.
    // Byte-aligned where read on every layer (a byte load), the flags beside
    // the verdict.
    static constexpr int verdict_shift = 0;  // bits 0-1
    static constexpr std::uint32_t has_value_bit = 1u << 2;
    static constexpr std::uint32_t has_retry_after_bit = 1u << 3;
    static constexpr std::uint32_t dont_retry_bit = 1u << 4;
    static constexpr std::uint32_t never_sent_bit = 1u << 5;
    static constexpr std::uint32_t attempted_bit = 1u << 6;  // failed_attempt(): attempted, nothing held
    static constexpr int reason_shift = 8;            // byte 1
    static constexpr int fallback_reason_shift = 16;  // byte 2
    static constexpr int attempts_shift = 24;         // byte 3
    static constexpr std::uint32_t attempts_bits = max_attempts_counted << attempts_shift;
    // The count of an outcome built from one run of the callable: part of the
    // constant the state is built from, so counting costs nothing per call.
    static constexpr std::uint32_t one_attempt = 1u << attempts_shift;
    static constexpr std::uint32_t verdict_mask = 0x3u;
    static constexpr std::uint32_t reason_mask = 0xFFu;
    static_assert(static_cast<std::uint32_t>(verdict::ambiguous) <= verdict_mask, "every verdict fits its 2 bits");

    static constexpr std::uint32_t pack(resil::verdict v, resil::reason r, resil::reason fallback,
                                        std::uint32_t flags) noexcept {
        return static_cast<std::uint32_t>(v) << verdict_shift | static_cast<std::uint32_t>(r) << reason_shift |
               static_cast<std::uint32_t>(fallback) << fallback_reason_shift | flags;
    }
    // The reason fields (the verdict's is read by verdict()).
    [[nodiscard]] std::uint32_t field(int shift) const noexcept { return (state_ >> shift) & reason_mask; }
    void set_field(int shift, std::uint32_t v) noexcept { state_ = (state_ & ~(reason_mask << shift)) | v << shift; }

    void classify_as(const classification& c, std::uint32_t flags) noexcept {
        // Until a policy decides otherwise, a failing verdict is a plain failure.
        const auto r = c.verdict == verdict::success ? reason::none : reason::failed;
        if (c.hint.retry_after) {
            flags |= has_retry_after_bit;
            retry_after_ = *c.hint.retry_after;
        }
        if (c.hint.dont_retry) flags |= dont_retry_bit;
        if (c.never_sent) flags |= never_sent_bit;
        state_ = pack(c.verdict, r, reason::none, flags);
    }
    void destroy_value() noexcept {
        if (has_value()) {
            value_.~T();
            state_ &= ~has_value_bit;
        }
    }
    template <class Other>
    void assign(Other&& other) {
        destroy_value();
        if (other.has_value()) ::new (static_cast<void*>(std::addressof(value_))) T(std::forward<Other>(other).value_);
        exception_ = std::forward<Other>(other).exception_;
        retry_after_ = other.retry_after_;
        state_ = other.state_;
    }
    void check() const {
        if (has_value()) return;
        if (exception_) std::rethrow_exception(exception_);
        throw bad_outcome_access(reason());
    }

    duration retry_after_{};  // meaningful with has_retry_after_bit
    std::exception_ptr exception_{};
    std::uint32_t state_ = pack(verdict::success, reason::none, reason::none, 0);
    union {
        T value_;  // alive with has_value_bit
    };
};

/// Lets pipelines nest: an inner pipeline's outcome, returned by an outer
/// pipeline's callable, is judged by what it says of itself.
template <class T>
[[nodiscard]] classification classify(const outcome<T>& o) noexcept {
    if (o.ok()) return verdict::success;
    // A rejection (nothing attempted) sent nothing either.
    const server_hint hint{o.retry_after(), o.dont_retry()};
    return o.never_sent() || !o.attempted() ? classification::not_sent(o.verdict(), hint) : classification{o.verdict(), hint};
}

}  // namespace resil
