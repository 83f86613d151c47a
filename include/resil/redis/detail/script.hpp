// resil/redis/detail/script.hpp — GCRA in one Lua script, run atomically by
// Redis on its own clock, and the reading of its answer.
//
// The arithmetic is detail/gcra.hpp's, integer for integer, so that a quota
// in Redis and a local token bucket of the same rate and burst decide alike
// at any rate (the tests compare them decision by decision, waits to the
// nanosecond). One number per quota, the theoretical arrival time (TAT): the
// instant at which the quota would be full again, in gcra.hpp's units (one
// permit is exactly K units, a unit at most 1 ns, ⌊ns · q / 2³²⌋ units at ns
// nanoseconds since the epoch). n permits are granted at `now` when
// max(TAT, now) + n·K ≤ τ + units(now + lookahead), τ = B·K; a grant moves
// the TAT there, a rejection writes nothing. Time is Redis's TIME in
// nanoseconds since 2023-11-14 22:13:20 UTC (Unix 1.7e9 s), clamped to
// [0, 2⁶¹] (until 2096), as gcra.hpp clamps a bucket's age.
//
// Exact in doubles. A Lua number is a double: integers are exact below 2⁵³,
// and nanoseconds since the epoch passed 2⁵³ in 2024. So every instant and
// TAT is a pair of doubles (hi, lo) meaning hi·2³² + lo, 0 ≤ lo < 2³², and
// the script only adds, subtracts and compares pairs, multiplies a 32-bit
// word by q < 2³⁴ in 16-bit halves (each partial product < 2⁵⁰), and
// divides a pair by K < 2⁴⁵ a byte at a time (each partial dividend < 2⁵³):
// no operation rounds. Nothing in a decision is approximated (only values
// of the previous format are, rounding up), so no bound on admissions
// beyond gcra.hpp's own is needed: at most B + r·t over any t, the bucket
// at most 2⁻³² slower than its rate. The C++ side (read_answer) turns the
// answer into the wait, `remaining` and `reset` with gcra.hpp's functions.
//
// KEYS[1] the quota's key. ARGV: q (units per ns in Q32: its 10 digits), K,
// τ as hi and lo, n (the permits needed), n·K as hi and lo, want (≥ n: the
// permits to take when there is room, for a lease), lookahead (µs: grant
// permits that exist within it, as a reservation), and, only from the
// tests, an instant (µs since the epoch above) replacing TIME.
//
// Answer: {taken, tat hi, tat lo, now hi, now lo}. taken = 0: rejected, and
// the TAT is the current one (max(stored, now)); taken ≥ n: granted, and the
// TAT is the new one. `now` is the instant the script decided at, in
// nanoseconds since the epoch.
//
// The stored value stays readable by the previous version of this script
// (which kept the TAT as a double of microseconds, so pods of both versions
// share one quota during a rolling upgrade): "<µs>.<q><hi><lo>", the TAT in
// whole microseconds rounded up, then q and the exact TAT, 10 digits each,
// as the fraction. The old script reads it as a number a little after the
// TAT (it errs on the refusing side); this one reads the exact TAT when q is
// its own, and otherwise (a value of the old script, or one written at
// another rate) the microseconds, converted rounding up.
//
// The key is SET with PX = the milliseconds until the quota is full again,
// plus one (Redis counts PX from its clock's whole millisecond, up to 1 ms
// before TIME's microsecond): past that instant a missing key means exactly
// what the stored one would (max(TAT, now) = now), so idle quotas cost no
// memory. (Under the
// tests' time override the key lives a minute longer: Redis expires keys on
// its own clock, not on the override's.) TIME before a write is allowed on
// Redis ≥ 5 (effects replication; the only mode on Redis 7).
#pragma once

#include <hiredis/hiredis.h>

#include <array>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "../../detail/gcra.hpp"

namespace resil::redis::detail {

/// The Lua functions on pairs (hi, lo) = hi·2³² + lo, with lo < 2³²: mul(x,
/// y) = x·y for x < 2³², y < 2³⁴; add, sub (a ≥ b), le; split_us(µs) =
/// seconds, µs; ns(s, µs) = nanoseconds clamped to [0, 2⁶¹] (s < 2³²);
/// units(ns, q) = ⌊ns·q / 2³²⌋ (gcra::to_units); div(pair, d) = ⌊pair / d⌋
/// for d < 2⁴⁵, exact while below 2⁵³. Apart so that the tests can run them
/// against gcra.hpp's.
inline constexpr char gcra_lua_arithmetic[] = R"lua(
local P32 = 4294967296
local MAX_NS_HI = 536870912
local MAX_TAT_HI = 1610612736
local function mul(x, y)
  local x1 = math.floor(x / 65536)
  local p1 = x1 * y
  local p0 = (x - x1 * 65536) * y
  local p1h = math.floor(p1 / 65536)
  local r = (p1 - p1h * 65536) * 65536 + p0
  local c = math.floor(r / P32)
  return p1h + c, r - c * P32
end
local function add(ah, al, bh, bl)
  local l = al + bl
  local c = math.floor(l / P32)
  return ah + bh + c, l - c * P32
end
local function sub(ah, al, bh, bl)
  local l = al - bl
  if l < 0 then return ah - bh - 1, l + P32 end
  return ah - bh, l
end
local function le(ah, al, bh, bl)
  return ah < bh or (ah == bh and al <= bl)
end
local function split_us(v)
  local s = math.floor(v / 1000000)
  local u = v - s * 1000000
  if u < 0 then s, u = s - 1, u + 1000000 elseif u >= 1000000 then s, u = s + 1, u - 1000000 end
  return s, u
end
local function ns(s, u)
  if s < 0 then return 0, 0 end
  if s >= P32 then return MAX_NS_HI, 0 end
  local h, l = mul(s, 1000000000)
  h, l = add(h, l, 0, u * 1000)
  if h >= MAX_NS_HI then return MAX_NS_HI, 0 end
  return h, l
end
local function units(h, l, q)
  local a, b = mul(h, q)
  return add(a, b, 0, (mul(l, q)))
end
local function div(h, l, d)
  local rem, quo = 0, 0
  for i = 0, 7 do
    local w = h
    if i >= 4 then w = l end
    rem = rem * 256 + math.floor(w / 2 ^ (8 * (3 - i % 4))) % 256
    local digit = math.floor(rem / d)
    if digit * d > rem then digit = digit - 1 elseif (digit + 1) * d <= rem then digit = digit + 1 end
    rem = rem - digit * d
    quo = quo * 256 + digit
  end
  return quo
end
)lua";

/// The decision, after the arithmetic.
inline constexpr char gcra_lua_decision[] = R"lua(
local q = tonumber(ARGV[1])
local K = tonumber(ARGV[2])
local tau_h, tau_l = tonumber(ARGV[3]), tonumber(ARGV[4])
local n = tonumber(ARGV[5])
local nk_h, nk_l = tonumber(ARGV[6]), tonumber(ARGV[7])
local want = tonumber(ARGV[8])
local look = tonumber(ARGV[9])
local s, u
if ARGV[10] then
  s, u = split_us(tonumber(ARGV[10]))
else
  local t = redis.call('TIME')
  s, u = tonumber(t[1]) - 1700000000, tonumber(t[2])
end
local e_h, e_l = ns(s, u)
local now_h, now_l = e_h, e_l
if q ~= P32 then now_h, now_l = units(e_h, e_l, q) end
local now_us = s * 1000000 + u
local per_us = q * 1000 / P32
local tat_h, tat_l = now_h, now_l
local stored = redis.call('GET', KEYS[1])
if stored then
  if string.byte(stored, -31) == 46 and string.sub(stored, -30, -21) == ARGV[1] then
    local h, l = tonumber(string.sub(stored, -20, -11)), tonumber(string.sub(stored, -10))
    if not h or not l or h >= MAX_TAT_HI or l >= P32 then
      return redis.error_reply('RESILSTATE ' .. KEYS[1] .. ' holds a rate limiter state out of range')
    end
    if not le(h, l, now_h, now_l) then tat_h, tat_l = h, l end
  else
    local v = tonumber(stored)
    if not v or v ~= v or v - now_us > 2 ^ 51 then
      return redis.error_reply('RESILSTATE ' .. KEYS[1] .. ' does not hold a rate limiter state')
    end
    if v > now_us then
      local a = math.ceil((v - now_us) * per_us * (1 + 2 ^ -40)) + 2
      local a_h = math.floor(a / P32)
      tat_h, tat_l = add(now_h, now_l, a_h, a - a_h * P32)
    end
  end
end
local new_h, new_l = add(tat_h, tat_l, nk_h, nk_l)
local lim_h, lim_l = now_h, now_l
if look > 0 then
  local x_h, x_l = add(e_h, e_l, ns(split_us(look)))
  if x_h >= MAX_NS_HI then x_h, x_l = MAX_NS_HI, 0 end
  lim_h, lim_l = units(x_h, x_l, q)
end
lim_h, lim_l = add(lim_h, lim_l, tau_h, tau_l)
if not le(new_h, new_l, lim_h, lim_l) then return {0, tat_h, tat_l, e_h, e_l} end
local taken = n
if want > n then
  local f_h, f_l = sub(lim_h, lim_l, new_h, new_l)
  local extra = div(f_h, f_l, K)
  if extra > want - n then extra = want - n end
  if extra > 0 then
    taken = n + extra
    local k_h = math.floor(K / P32)
    local p = (K - k_h * P32) * extra
    local p_h = math.floor(p / P32)
    new_h, new_l = add(new_h, new_l, k_h * extra + p_h, p - p_h * P32)
  end
end
local d_h, d_l = sub(new_h, new_l, now_h, now_l)
local ahead = d_h * P32 + d_l
local ttl = math.ceil(ahead / (per_us * 1000)) + 1
if ARGV[10] then ttl = ttl + 60000 end
local until_us = now_us + math.ceil(ahead / per_us * (1 + 2 ^ -40)) + 1
if until_us < 0 then until_us = 0 end
redis.call('SET', KEYS[1], string.format('%d.%s%010d%010d', until_us, ARGV[1], new_h, new_l), 'PX', ttl)
return {taken, new_h, new_l, e_h, e_l}
)lua";

template <std::size_t A, std::size_t B>
constexpr std::array<char, A + B - 1> join_lua(const char (&a)[A], const char (&b)[B]) noexcept {
    std::array<char, A + B - 1> out{};
    for (std::size_t i = 0; i + 1 < A; ++i) out[i] = a[i];
    for (std::size_t i = 0; i < B; ++i) out[A - 1 + i] = b[i];
    return out;
}
inline constexpr auto gcra_script_text = join_lua(gcra_lua_arithmetic, gcra_lua_decision);

/// The whole script, as loaded by SCRIPT LOAD.
inline constexpr std::string_view gcra_script{gcra_script_text.data(), gcra_script_text.size() - 1};

/// A TAT beyond this many units is no state of the script's (the largest it
/// writes is below 2⁶² + 2⁶⁰): the bound keeps every sum in int64.
inline constexpr std::int64_t max_tat_units = std::int64_t{3} << 61;

/// The script's arguments that depend only on the quota (q, K, τ as two
/// 32-bit halves), formatted once per limiter.
class script_constants {
public:
    explicit script_constants(const resil::detail::gcra::params& p) noexcept {
        put(q_, static_cast<std::int64_t>(p.units_per_ns_q32));
        put(k_, p.token_units);
        put(tau_hi_, p.tolerance >> 32);
        put(tau_lo_, p.tolerance & 0xffff'ffff);
    }
    [[nodiscard]] std::string_view q() const noexcept { return q_.view(); }
    [[nodiscard]] std::string_view k() const noexcept { return k_.view(); }
    [[nodiscard]] std::string_view tau_hi() const noexcept { return tau_hi_.view(); }
    [[nodiscard]] std::string_view tau_lo() const noexcept { return tau_lo_.view(); }

    /// Decimal digits of a non-negative integer, on the stack.
    struct number {
        char data[24];
        std::size_t size = 0;
        [[nodiscard]] std::string_view view() const noexcept { return {data, size}; }
    };
    static void put(number& out, std::int64_t v) noexcept {
        out.size = static_cast<std::size_t>(std::to_chars(out.data, out.data + sizeof out.data, v).ptr - out.data);
    }

private:
    number q_, k_, tau_hi_, tau_lo_;
};

/// One decision's command, on the stack: EVALSHA sha 1 key q K τhi τlo n
/// nKhi nKlo want lookahead [now] (the instant only from the tests; a
/// negative `now_us` leaves it out). use_sha() names the script by the SHA1
/// a connection loaded it under; use_text() makes it EVAL of the script
/// itself (which also caches it again: NOSCRIPT recovered in one round
/// trip). Points into itself and at `c` and `key`: neither copied nor moved.
class script_arguments {
public:
    script_arguments(const resil::detail::gcra::params& p, const script_constants& c, std::string_view key,
                     std::int64_t n, std::int64_t want, std::int64_t look_us, std::int64_t now_us) noexcept {
        const std::int64_t nk = n * p.token_units;  // ≤ τ < 2^61
        script_constants::put(n_, n);
        script_constants::put(nk_hi_, nk >> 32);
        script_constants::put(nk_lo_, nk & 0xffff'ffff);
        script_constants::put(want_, want);
        script_constants::put(look_, look_us);
        if (now_us >= 0) script_constants::put(now_, now_us);
        const std::string_view args[14] = {"EVALSHA",     {},           "1",           key,           c.q(),
                                           c.k(),         c.tau_hi(),   c.tau_lo(),    n_.view(),     nk_hi_.view(),
                                           nk_lo_.view(), want_.view(), look_.view(),  now_.view()};
        for (std::size_t i = 0; i < 14; ++i) {
            argv_[i] = args[i].data();
            lens_[i] = args[i].size();
        }
        lens_[1] = 40;
        argc_ = now_us >= 0 ? 14 : 13;
    }
    script_arguments(const script_arguments&) = delete;
    script_arguments& operator=(const script_arguments&) = delete;

    void use_sha(const char* sha) noexcept {
        argv_[0] = "EVALSHA";
        lens_[0] = 7;
        argv_[1] = sha;
        lens_[1] = 40;
    }
    void use_text() noexcept {
        argv_[0] = "EVAL";
        lens_[0] = 4;
        argv_[1] = gcra_script.data();
        lens_[1] = gcra_script.size();
    }

    [[nodiscard]] int argc() const noexcept { return argc_; }
    [[nodiscard]] const char** argv() noexcept { return argv_; }
    [[nodiscard]] const std::size_t* lens() const noexcept { return lens_; }

private:
    script_constants::number n_, nk_hi_, nk_lo_, want_, look_, now_;
    const char* argv_[14];
    std::size_t lens_[14];
    int argc_ = 13;
};

/// The script's answer, read and checked, in the terms of a limiter's result.
struct script_answer {
    std::int64_t taken = 0;      ///< 0: rejected; otherwise ≥ the permits asked for
    /// rejected: nanoseconds until the permits exist (≥ 1); granted: a
    /// reservation's wait (0 when the permits exist now).
    std::int64_t wait_ns = 0;
    std::int64_t remaining = 0;  ///< whole permits in the quota after the decision, in [0, burst]
    std::int64_t reset_ns = 0;   ///< nanoseconds until the quota next gains a whole permit; 0 when full
};

/// What a reply was.
enum class reply_kind : std::uint8_t {
    answer,     ///< a well-formed answer (in `answer`)
    noscript,   ///< NOSCRIPT: the script cache was flushed; load it again
    error,      ///< an error reply (`error` says which)
    bad_shape,  ///< not the script's answer (`error` says how)
};

struct reading {
    reply_kind kind = reply_kind::bad_shape;
    script_answer answer{};
    std::string error{};
};

/// Reads a reply to EVALSHA of gcra_script for `need` to `want` permits of a
/// quota with constants `p`, asked with a lookahead of `look_us`: exactly five
/// integers, in range, and a decision that is GCRA's for the TAT and instant
/// it names (a rejection that the TAT would have granted, or a grant beyond
/// the lookahead asked for, which would make the caller sleep unasked, is
/// refused); anything else is bad_shape with a description. Never trusts the
/// reply (a proxy, another script under the same name, a version skew).
[[nodiscard]] inline reading read_answer(const redisReply* r, const resil::detail::gcra::params& p, std::int64_t need,
                                         std::int64_t want, std::int64_t look_us) {
    namespace gcra = resil::detail::gcra;
    reading out;
    if (r == nullptr) {
        out.error = "no reply";
        return out;
    }
    if (r->type == REDIS_REPLY_ERROR) {
        const std::string_view text(r->str ? r->str : "", r->str ? r->len : 0);
        out.kind = text.substr(0, 8) == "NOSCRIPT" ? reply_kind::noscript : reply_kind::error;
        out.error = std::string(text.substr(0, 200));
        // A Redis Cluster node that does not own the key's slot ("MOVED
        // <slot> <host>:<port>", or "ASK" during a slot migration): the
        // limiter talks to one node and follows no redirect, so say so.
        if (text.substr(0, 6) == "MOVED " || text.substr(0, 4) == "ASK ")
            out.error = "Redis Cluster redirected the key (" + out.error +
                        "): the limiter follows no redirect; give it the node that owns the key's slot";
        return out;
    }
    constexpr std::size_t fields = 5;
    if (r->type != REDIS_REPLY_ARRAY || r->elements != fields) {
        out.error = "the script's answer must be an array of 5 integers, got " +
                    std::string(r->type == REDIS_REPLY_ARRAY ? "an array of " + std::to_string(r->elements)
                                                             : "a reply of type " + std::to_string(r->type));
        return out;
    }
    long long v[fields];
    for (std::size_t i = 0; i < fields; ++i) {
        if (r->element[i] == nullptr || r->element[i]->type != REDIS_REPLY_INTEGER) {
            out.error = "the script's answer must be an array of 5 integers; element " + std::to_string(i) +
                        " is not an integer";
            return out;
        }
        v[i] = r->element[i]->integer;
    }
    const auto out_of_range = [&](std::string_view why) {
        out.error = "the script's answer is out of range (" + std::string(why) + "): {" + std::to_string(v[0]) + ", " +
                    std::to_string(v[1]) + ", " + std::to_string(v[2]) + ", " + std::to_string(v[3]) + ", " +
                    std::to_string(v[4]) + "} for " + std::to_string(need) + " to " + std::to_string(want) +
                    " permits within " + std::to_string(look_us) + " us";
        return out;
    };
    constexpr long long word = std::int64_t{1} << 32;
    const long long taken = v[0];
    if (taken < 0 || taken > want || (taken > 0 && taken < need)) return out_of_range("permits taken");
    if (v[1] < 0 || v[1] >= (max_tat_units >> 32) || v[2] < 0 || v[2] >= word) return out_of_range("TAT");
    if (v[3] < 0 || v[3] > (gcra::max_elapsed_ns >> 32) || v[4] < 0 || v[4] >= word) return out_of_range("instant");
    const std::int64_t tat = v[1] << 32 | v[2];
    const std::int64_t elapsed = v[3] << 32 | v[4];
    if (elapsed > gcra::max_elapsed_ns) return out_of_range("instant");

    const std::int64_t now = gcra::to_units(p, elapsed);
    const std::int64_t lookahead = gcra::to_units(p, elapsed + look_us * 1000) - now;
    script_answer& a = out.answer;
    a.taken = taken;
    if (taken == 0) {
        const auto d = gcra::decide(p, tat, now, need, lookahead);
        if (tat < now || d.conforming) return out_of_range("a rejection the TAT grants");
        a.wait_ns = gcra::first_ns_at(p, d.ready_at) - elapsed;
        if (a.wait_ns < 1) a.wait_ns = 1;
    } else {
        // A grant leaves the TAT at least `taken` permits past now, and its
        // permits exist within the lookahead asked for.
        if (tat - now < taken * p.token_units) return out_of_range("a grant the TAT does not hold");
        if (tat - p.tolerance - now > lookahead) return out_of_range("a grant beyond the lookahead");
        const auto wait = gcra::first_ns_at(p, tat - p.tolerance) - elapsed;
        a.wait_ns = wait > 0 ? wait : 0;
    }
    a.remaining = gcra::whole_tokens(p, tat, now);
    const auto next = gcra::next_token_at(p, tat, now);
    a.reset_ns = next == 0 ? 0 : gcra::first_ns_at(p, next) - elapsed;
    // A state near the TAT's bound could name waits of a century: 73 years
    // at most, as the local bucket's clock (no absurd sleeps downstream).
    if (a.wait_ns > gcra::max_elapsed_ns) a.wait_ns = gcra::max_elapsed_ns;
    if (a.reset_ns > gcra::max_elapsed_ns) a.reset_ns = gcra::max_elapsed_ns;
    out.kind = reply_kind::answer;
    return out;
}

}  // namespace resil::redis::detail
