// resil/deadline.hpp — a deadline: the instant after which a whole request
// stops mattering, as opposed to a per-hop duration. Every hop waits
// min(its own cap, what is left of the deadline), so each layer gives up
// before the one above it.
//
//   auto dl = resil::deadline::after(250ms);         // the whole call, all attempts
//   ...                                              // 70 ms spent preparing
//   auto budget = dl.clamp(150ms);                    // min(150 ms, 180 ms left) = 150 ms
//   if (dl.expired()) return plan_b();
//
//   // Propagate what is left to the next hop, in gRPC's grpc-timeout format:
//   headers.add(resil::timeout_header_name, resil::encode_timeout_header(dl.remaining()).view());
//   // ...and on the receiving side:
//   if (auto left = resil::decode_timeout_header(value)) dl = resil::deadline::after(*left);
//
// A deadline is a plain value: copy it freely; const members may be called
// from any number of threads at once.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string_view>
#include <type_traits>
#include <utility>

#include "clock.hpp"
#include "detail/saturate.hpp"

namespace resil {

namespace detail {
/// max(0, when − now); duration::max() when `when` is time_point::max() (no
/// deadline). The pure form every "how long is left" answer goes through.
[[nodiscard]] constexpr duration time_left(time_point when, time_point now) noexcept {
    if (when == time_point::max()) return duration::max();
    if (when <= now) return duration::zero();
    return detail::saturating_sub(when, now);
}
}  // namespace detail

/// An absolute instant on `Clock`, or "none" (never expires).
///
/// "None" is stored as time_point::max(): `when()` returns it, `remaining()`
/// returns duration::max(), and nothing ever expires. The clock is kept with
/// the deadline (at no cost for the stateless steady_clock) so `remaining()`
/// and `expired()` need no argument; the `(…, time_point now)` overloads are
/// the pure forms, for callers that already read the clock.
///
/// `Clock::now()` is expected not to throw (both resil clocks are noexcept).
template <clock Clock = steady_clock>
class basic_deadline {
public:
    /// No deadline: never expires. Requires a default-constructible clock.
    basic_deadline() = default;

    /// No deadline, on clock `c` (so a later tightened() reads `c`).
    explicit basic_deadline(Clock c) noexcept(std::is_nothrow_move_constructible_v<Clock>)
        : clock_(std::move(c)) {}

    /// `now + d`, saturating: a `d` so large that the sum would overflow
    /// (duration::max() in particular) gives no deadline. A zero or negative
    /// `d` gives a deadline that has already expired.
    ///
    /// With resil::testing::manual_clock pass the clock: a default-constructed
    /// manual clock is a new, unrelated time line.
    [[nodiscard]] static basic_deadline after(duration d, Clock c = Clock{}) {
        const auto now = c.now();
        basic_deadline result{std::move(c)};
        result.when_ = sum_or_none(now, d);
        return result;
    }

    /// The deadline at instant `t`; time_point::max() means none.
    [[nodiscard]] static basic_deadline at(time_point t, Clock c = Clock{}) {
        basic_deadline result{std::move(c)};
        result.when_ = t;
        return result;
    }

    /// False for "no deadline".
    [[nodiscard]] bool is_set() const noexcept { return when_ != time_point::max(); }

    /// The instant; time_point::max() when there is no deadline.
    [[nodiscard]] time_point when() const noexcept { return when_; }

    /// max(0, when − now); duration::max() when there is no deadline.
    /// Without a deadline the clock is not read: a policy asking "how long is
    /// left?" on every call costs nothing when the answer is "no limit".
    [[nodiscard]] duration remaining() const noexcept {
        return is_set() ? remaining(clock_.now()) : duration::max();
    }
    /// What is left at `now`: zero once passed, duration::max() when no
    /// deadline is set.
    [[nodiscard]] duration remaining(time_point now) const noexcept { return detail::time_left(when_, now); }

    /// True once `now >= when()`; never true without a deadline.
    [[nodiscard]] bool expired() const noexcept { return is_set() && expired(clock_.now()); }
    /// Whether it had passed at `now`; never, when no deadline is set.
    [[nodiscard]] bool expired(time_point now) const noexcept { return is_set() && now >= when_; }

    /// min(cap, remaining()), never negative: what one hop may wait. A
    /// non-positive `cap` gives zero; zero means "already out of time".
    [[nodiscard]] duration clamp(duration cap) const noexcept {
        if (!is_set()) return cap <= duration::zero() ? duration::zero() : cap;
        return clamp(cap, clock_.now());
    }
    /// `cap` clamped to what is left at `now`: the smaller of the two.
    [[nodiscard]] duration clamp(duration cap, time_point now) const noexcept {
        if (cap <= duration::zero()) return duration::zero();
        const auto left = remaining(now);
        return cap < left ? cap : left;
    }

    /// The earlier of *this and `after(d)` on the same clock: a layer that
    /// must give up sooner than its caller.
    [[nodiscard]] basic_deadline tightened(duration d) const {
        return earliest(sum_or_none(clock_.now(), d));
    }

    /// The earlier of *this and instant `t`, on the same clock.
    [[nodiscard]] basic_deadline earliest(time_point t) const noexcept(std::is_nothrow_copy_constructible_v<Clock>) {
        basic_deadline result = *this;
        if (t < result.when_) result.when_ = t;
        return result;
    }

    /// The clock this deadline reads.
    [[nodiscard]] const Clock& clock() const noexcept { return clock_; }

private:
    // Saturation lands on time_point::max(), which is exactly "none": a budget
    // too large to represent is no budget at all.
    static time_point sum_or_none(time_point now, duration d) noexcept {
        return detail::saturating_add(now, d);
    }

    [[no_unique_address]] Clock clock_{};
    time_point when_ = time_point::max();
};

/// A deadline on the real monotonic clock.
using deadline = basic_deadline<steady_clock>;

// ---------------------------------------------------------------------------
// Deadline propagation header.
//
// The format is gRPC's `grpc-timeout` (PROTOCOL-HTTP2.md): 1 to 8 ASCII digits
// then one unit, H (hours), M (minutes), S (seconds), m (milliseconds),
// u (microseconds) or n (nanoseconds). Envoy and gRPC servers understand it,
// and it is trivial for any HTTP service to parse. Send it only when the
// deadline is set; no header means no deadline.

/// The header name resil uses: gRPC's, so gRPC servers and Envoy honour it.
inline constexpr std::string_view timeout_header_name = "grpc-timeout";

/// The text of one encoded timeout: at most 8 digits and a unit. No allocation.
struct timeout_header_text {
    /// The header value's characters: `data[0, size)`, not NUL-terminated.
    char data[9] = {};
    /// How many characters of `data` are used (at most 9: 8 digits and a unit).
    std::uint8_t size = 0;
    /// The header value, e.g. "250m".
    [[nodiscard]] constexpr std::string_view view() const noexcept { return {data, size}; }
};

namespace detail {
struct timeout_unit {
    char symbol;
    ticks nanoseconds;
};
// Finest first: encoding takes the first unit whose value fits in 8 digits.
inline constexpr timeout_unit timeout_units[] = {
    {'n', 1},
    {'u', 1'000},
    {'m', 1'000'000},
    {'S', 1'000'000'000},
    {'M', 60'000'000'000},
    {'H', 3'600'000'000'000},
};
inline constexpr ticks timeout_max_value = 99'999'999;
}  // namespace detail

/// Encodes `remaining` in the finest unit whose value fits in 8 digits,
/// rounding DOWN so the next hop never gets more time than is left here
/// (1.5 s → "1500000u", 250 ms → "250000u", 2 h → "7200000m"). Zero or negative → "0n".
/// The 8-digit hour limit is never reached by a nanosecond duration
/// (duration::max() encodes as "2562047H"); were it reached, the result
/// would saturate at "99999999H".
[[nodiscard]] constexpr timeout_header_text encode_timeout_header(duration remaining) noexcept {
    timeout_header_text text;
    const auto ns = remaining.count();
    if (ns <= 0) {
        text.data[0] = '0';
        text.data[1] = 'n';
        text.size = 2;
        return text;
    }
    detail::ticks value = detail::timeout_max_value;
    char symbol = 'H';
    for (const auto& u : detail::timeout_units) {
        if (ns / u.nanoseconds <= detail::timeout_max_value) {
            value = ns / u.nanoseconds;
            symbol = u.symbol;
            break;
        }
    }
    char digits[8] = {};
    std::uint8_t count = 0;
    do {
        digits[count++] = static_cast<char>('0' + value % 10);
        value /= 10;
    } while (value != 0);
    for (std::uint8_t i = 0; i < count; ++i) text.data[i] = digits[count - 1 - i];
    text.data[count] = symbol;
    text.size = static_cast<std::uint8_t>(count + 1);
    return text;
}

/// Decodes a grpc-timeout value. Strict: 1 to 8 ASCII digits then exactly one
/// of H M S m u n, nothing else (no sign, spaces, empty value or trailing
/// bytes); anything else gives an empty optional. Leading zeros are accepted.
/// Values beyond what int64 nanoseconds hold (from about 2,562,048 H up to
/// 99999999H) saturate to duration::max(), which basic_deadline::after() reads
/// as "no deadline".
[[nodiscard]] constexpr std::optional<duration> decode_timeout_header(std::string_view text) noexcept {
    if (text.size() < 2 || text.size() > 9) return std::nullopt;
    const auto digits = text.substr(0, text.size() - 1);
    detail::ticks value = 0;
    for (const char c : digits) {
        if (c < '0' || c > '9') return std::nullopt;
        value = value * 10 + (c - '0');
    }
    const char symbol = text.back();
    for (const auto& u : detail::timeout_units) {
        if (u.symbol == symbol) return duration{detail::saturating_mul_nonnegative(value, u.nanoseconds)};
    }
    return std::nullopt;
}

}  // namespace resil
