// resil/idempotency_key.hpp — UUID idempotency keys (RFC 9562 versions 4 and
// 7) from a fast, fork-safe CSPRNG, formatted without allocating.
//
//   const auto key = resil::idempotency_key::v4();   // once per operation,
//   const auto text = key.text();                    // never once per attempt
//   for (int attempt = 0; attempt < 3; ++attempt)
//       send(request.with_header(resil::idempotency_key::header_name, text.view()));
//
//   auto seen = resil::idempotency_key::parse(header_value);   // server side
//   if (!seen) return bad_request("Idempotency-Key must be a UUID");
//
// v4 is 122 random bits: nothing about the client or the time leaks. v7 puts
// the Unix time in milliseconds first, so keys stored in a B-tree index arrive
// in order; keys from one process compare (operator<=>, and as text) in the
// order they were created. Both draw from resil's per-thread ChaCha20 CSPRNG
// (resil/detail/csprng.hpp), seeded from the OS (getrandom(2) on Linux,
// arc4random_buf(3) on macOS and the BSDs, BCryptGenRandom on Windows: link
// bcrypt, which resil::resil's CMake target does) and reseeded in every forked
// child: a key is never predictable from earlier keys, and a child never
// repeats its parent's.
//
// The key type itself (parse, compare, format, hash) is in
// resil/idempotency_key_type.hpp, which needs no OS header; this one adds the
// generator.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <stdexcept>

#include "detail/csprng.hpp"
#include "idempotency_key_type.hpp"

namespace resil {

namespace detail {

/// Unix time in milliseconds, clamped to the 48 bits a v7 key holds (a clock
/// before 1970 reads as 0; one past the year 10889 as the last millisecond).
[[nodiscard]] inline std::uint64_t unix_ms_48(std::chrono::system_clock::time_point now) noexcept {
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count();
    constexpr std::uint64_t max_ms = (std::uint64_t{1} << 48) - 1;
    if (ms <= 0) return 0;
    return static_cast<std::uint64_t>(ms) > max_ms ? max_ms : static_cast<std::uint64_t>(ms);
}

/// The last v7 stamp handed out in this process: Unix milliseconds in the top
/// 48 bits, a 16-bit counter in the low 16. One word, so one CAS orders every
/// v7 key of every thread. A forked child inherits it, so its keys stay after
/// its parent's earlier ones; child and parent then tell their keys apart by
/// the 58 random bits, drawn from generators that no longer share a stream.
inline std::atomic<std::uint64_t> last_v7_stamp{0};

/// Claims the next v7 stamp (RFC 9562 §6.2, method 1 with a 16-bit counter).
/// In a new millisecond the counter starts at `fresh_counter` (random, below
/// 2^15, so at least 32768 keys fit in the millisecond before it overflows);
/// in the same millisecond, or when the clock stepped back, the stamp is the
/// previous one plus one, so a counter overflow carries into the timestamp,
/// which then runs ahead of the clock until the clock catches up. Every stamp
/// is strictly greater than every earlier one, across threads. `now_ms` is
/// clamped to 48 bits. Throws std::overflow_error once the 64-bit space is
/// spent (a clock in the year 10889) rather than wrap to a smaller stamp.
[[nodiscard]] inline std::uint64_t next_v7_stamp(std::atomic<std::uint64_t>& last, std::uint64_t now_ms,
                                                 std::uint16_t fresh_counter) {
    constexpr std::uint64_t max_ms = (std::uint64_t{1} << 48) - 1;
    if (now_ms > max_ms) now_ms = max_ms;
    const std::uint64_t fresh = now_ms << 16 | (fresh_counter & 0x7FFFu);
    std::uint64_t previous = last.load(std::memory_order_relaxed);
    std::uint64_t next = 0;
    do {
        if (previous == std::numeric_limits<std::uint64_t>::max())
            throw std::overflow_error("resil::idempotency_key::v7: timestamp space exhausted");
        next = (previous >> 16) < now_ms ? fresh : previous + 1;
    } while (!last.compare_exchange_weak(previous, next, std::memory_order_relaxed));
    return next;
}

}  // namespace detail

namespace detail {

/// The generator behind idempotency_key::v4() and ::v7().
struct key_generator {
    static idempotency_key v4() {
        idempotency_key key;
        detail::csprng::fill16(key.bytes_.data());
        key.bytes_[6] = static_cast<std::uint8_t>((key.bytes_[6] & 0x0Fu) | 0x40u);
        key.bytes_[8] = static_cast<std::uint8_t>((key.bytes_[8] & 0x3Fu) | 0x80u);
        return key;
    }

    static idempotency_key v7() {
        idempotency_key::bytes_type random;
        detail::csprng::fill16(random.data());
        const auto fresh_counter = static_cast<std::uint16_t>(random[8] << 8 | random[9]);
        const std::uint64_t stamp = detail::next_v7_stamp(
            detail::last_v7_stamp, detail::unix_ms_48(std::chrono::system_clock::now()), fresh_counter);
        const auto counter = static_cast<std::uint16_t>(stamp);
        idempotency_key key;
        for (std::size_t i = 0; i < 6; ++i) key.bytes_[i] = static_cast<std::uint8_t>(stamp >> (56 - 8 * i));
        key.bytes_[6] = static_cast<std::uint8_t>(0x70u | counter >> 12);
        key.bytes_[7] = static_cast<std::uint8_t>(counter >> 4);
        key.bytes_[8] = static_cast<std::uint8_t>(0x80u | (counter & 0x0Fu) << 2 | (random[0] & 0x03u));
        for (std::size_t i = 9; i < 16; ++i) key.bytes_[i] = random[i - 8];
        return key;
    }
};

}  // namespace detail

}  // namespace resil
