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
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>

#include "clock.hpp"

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
    constexpr verdict_set(std::initializer_list<verdict> vs) noexcept {
        for (auto v : vs) bits_ |= bit(v);
    }
    [[nodiscard]] constexpr bool contains(verdict v) const noexcept { return (bits_ & bit(v)) != 0; }
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

    friend bool operator==(const server_hint&, const server_hint&) = default;
};

/// A classifier's answer: a verdict plus an optional hint. Implicit from a
/// verdict, so a classifier may return either.
struct classification {
    resil::verdict verdict = verdict::success;
    server_hint hint{};

    constexpr classification() = default;
    constexpr classification(resil::verdict v, server_hint h = {}) : verdict(v), hint(std::move(h)) {}  // NOLINT: implicit by design
    friend bool operator==(const classification&, const classification&) = default;
};

/// Why a call did not succeed. `none` means it did.
enum class reason : std::uint8_t {
    none,                          ///< success
    failed,                        ///< the attempt failed and was not to be retried (permanent verdict, or no retry policy)
    unsafe_to_retry,               ///< ambiguous failure of an operation neither idempotent nor keyed
    dont_retry,                    ///< the server or a lower layer said "overloaded, don't retry"
    retries_exhausted,             ///< every allowed attempt failed
    budget_exhausted,              ///< the retry budget refused the retry
    retry_after_exceeds_deadline,  ///< the server's Retry-After does not fit in what is left of the deadline
    deadline_exceeded,             ///< no time left for (another) attempt
    circuit_open,                  ///< the circuit breaker rejected the call
    rate_limited,                  ///< the token bucket rejected the call
    shed,                          ///< the concurrency limit rejected the call (load shedding)
    cancelled,                     ///< the caller's stop token fired
    backoff_exceeds_deadline,      ///< time was left, but not for the backoff wait and another attempt after it:
                                   ///< the retry gave up early (not a timeout)
};

/// The number of reasons, `none` included.
inline constexpr std::size_t reason_count = 13;

/// The reason's name in snake_case, as used in logs and metric labels.
[[nodiscard]] constexpr std::string_view to_string(reason r) noexcept {
    switch (r) {
        case reason::none: return "none";
        case reason::failed: return "failed";
        case reason::unsafe_to_retry: return "unsafe_to_retry";
        case reason::dont_retry: return "dont_retry";
        case reason::retries_exhausted: return "retries_exhausted";
        case reason::budget_exhausted: return "budget_exhausted";
        case reason::retry_after_exceeds_deadline: return "retry_after_exceeds_deadline";
        case reason::deadline_exceeded: return "deadline_exceeded";
        case reason::circuit_open: return "circuit_open";
        case reason::rate_limited: return "rate_limited";
        case reason::shed: return "shed";
        case reason::cancelled: return "cancelled";
        case reason::backoff_exceeds_deadline: return "backoff_exceeds_deadline";
    }
    return "unknown";
}

[[nodiscard]] constexpr std::string_view to_string(verdict v) noexcept {
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
    constexpr reason_set(std::initializer_list<reason> rs) noexcept {
        for (auto r : rs) bits_ |= bit(r);
    }
    /// Every reason but `none`.
    [[nodiscard]] static constexpr reason_set all() noexcept {
        reason_set s;
        s.bits_ = static_cast<std::uint32_t>(((std::uint32_t{1} << reason_count) - 1) & ~bit(reason::none));
        return s;
    }
    [[nodiscard]] constexpr bool contains(reason r) const noexcept { return (bits_ & bit(r)) != 0; }
    [[nodiscard]] constexpr bool empty() const noexcept { return bits_ == 0; }
    friend constexpr bool operator==(reason_set, reason_set) = default;

private:
    static constexpr std::uint32_t bit(reason r) noexcept { return std::uint32_t{1} << static_cast<unsigned>(r); }
    std::uint32_t bits_ = 0;
};

/// Counts per reason, indexable by resil::reason.
struct reason_counts {
    std::array<std::uint64_t, reason_count> by_reason{};
    [[nodiscard]] std::uint64_t operator[](reason r) const noexcept { return by_reason[static_cast<std::size_t>(r)]; }
    [[nodiscard]] std::uint64_t total() const noexcept {
        std::uint64_t n = 0;
        for (auto c : by_reason) n += c;
        return n;
    }
    friend bool operator==(const reason_counts&, const reason_counts&) = default;
};

/// A rejection as the caller sees it: the reason, and how long to wait before
/// trying again when the rejecting layer knows (a breaker's time to its next
/// probe, a bucket's wait for a token, a server's Retry-After).
struct rejection {
    resil::reason reason = reason::none;
    std::optional<duration> retry_after{};
};

/// Thrown by outcome::value() when there is no value to give.
class bad_outcome_access : public std::logic_error {
public:
    explicit bad_outcome_access(resil::reason r)
        : std::logic_error("resil::outcome has no value (reason: " + std::string(to_string(r)) + ")"), reason_(r) {}
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
    using value_type = T;

    /// A value with its classification; ok() when the verdict is success.
    template <class... Args>
    static outcome from_value(classification c, Args&&... args) {
        outcome o;
        o.value_.emplace(std::forward<Args>(args)...);
        o.set_classification(std::move(c));
        // A nested pipeline's outcome keeps its precise reason (retries
        // exhausted, deadline exceeded, ...) rather than a plain "failed".
        if constexpr (requires { o.value_->reason(); o.value_->ok(); })
            if (!o.ok() && !o.value_->ok()) o.reason_ = o.value_->reason();
        return o;
    }
    /// A failure carried by an exception the user's classifier judged.
    static outcome from_exception(std::exception_ptr e, classification c) {
        outcome o;
        o.exception_ = std::move(e);
        o.set_classification(std::move(c));
        return o;
    }
    /// A rejection before (or instead of) any attempt.
    static outcome rejected(resil::reason r, std::optional<duration> retry_after = std::nullopt) noexcept {
        outcome o;
        o.reason_ = r;
        o.verdict_ = verdict::permanent;
        o.retry_after_ = retry_after;
        return o;
    }

    /// True when the call succeeded (possibly through a fallback).
    [[nodiscard]] bool ok() const noexcept { return reason_ == reason::none; }
    explicit operator bool() const noexcept { return ok(); }

    [[nodiscard]] bool has_value() const noexcept { return value_.has_value(); }
    /// The value; rethrows the classified exception, or throws
    /// bad_outcome_access, when there is none.
    [[nodiscard]] T& value() & { check(); return *value_; }
    [[nodiscard]] const T& value() const& { check(); return *value_; }
    [[nodiscard]] T&& value() && { check(); return std::move(*value_); }
    [[nodiscard]] T& operator*() & noexcept { return *value_; }
    [[nodiscard]] const T& operator*() const& noexcept { return *value_; }
    [[nodiscard]] T* operator->() noexcept { return &*value_; }
    [[nodiscard]] const T* operator->() const noexcept { return &*value_; }

    [[nodiscard]] resil::verdict verdict() const noexcept { return verdict_; }
    [[nodiscard]] resil::reason reason() const noexcept { return reason_; }
    [[nodiscard]] resil::rejection rejection() const noexcept { return {reason_, retry_after_}; }
    /// How long to wait before trying again, when a layer or the server said.
    [[nodiscard]] std::optional<duration> retry_after() const noexcept { return retry_after_; }
    [[nodiscard]] bool dont_retry() const noexcept { return dont_retry_; }
    /// The exception a user's exception classifier caught, if any.
    [[nodiscard]] const std::exception_ptr& exception() const noexcept { return exception_; }
    /// Set when a fallback produced the value: the reason the call failed.
    [[nodiscard]] resil::reason fallback_reason() const noexcept { return fallback_reason_; }
    [[nodiscard]] bool from_fallback() const noexcept { return fallback_reason_ != reason::none; }

    /// Marks the call as failed for `r`, keeping any value (policies use this).
    void fail(resil::reason r) noexcept { reason_ = r; }
    /// Tells outer layers not to retry this failure (a lower layer already did).
    void mark_dont_retry() noexcept { dont_retry_ = true; }
    /// True when the reason comes from judging an attempt's result (it holds a
    /// value or a classified exception), false for a rejection before any attempt.
    [[nodiscard]] bool attempted() const noexcept { return value_.has_value() || exception_ != nullptr; }
    /// Replaces whatever this holds with a fallback value for the failure it had.
    template <class... Args>
    void replace_with_fallback(Args&&... args) {
        // Built before the old value goes: the arguments may refer to it
        // (a fallback serving the stale value).
        T replacement(std::forward<Args>(args)...);
        fallback_reason_ = reason_ == reason::none ? reason::failed : reason_;
        exception_ = nullptr;
        value_.reset();
        value_.emplace(std::move(replacement));
        verdict_ = verdict::success;
        reason_ = reason::none;
    }

private:
    outcome() = default;

    void set_classification(classification c) noexcept {
        verdict_ = c.verdict;
        retry_after_ = c.hint.retry_after;
        dont_retry_ = c.hint.dont_retry;
        // Until a policy decides otherwise, a failing verdict is a plain failure.
        reason_ = c.verdict == verdict::success ? reason::none : reason::failed;
    }
    void check() const {
        if (value_) return;
        if (exception_) std::rethrow_exception(exception_);
        throw bad_outcome_access(reason_);
    }

    std::optional<T> value_{};
    std::exception_ptr exception_{};
    std::optional<duration> retry_after_{};
    resil::verdict verdict_ = verdict::success;
    resil::reason reason_ = reason::none;
    resil::reason fallback_reason_ = reason::none;
    bool dont_retry_ = false;
};

/// Lets pipelines nest: an inner pipeline's outcome, returned by an outer
/// pipeline's callable, is judged by what it says of itself.
template <class T>
[[nodiscard]] classification classify(const outcome<T>& o) noexcept {
    if (o.ok()) return verdict::success;
    return {o.verdict(), server_hint{o.retry_after(), o.dont_retry()}};
}

}  // namespace resil
