// resil/redis/detail/script.hpp — GCRA in one Lua script, run atomically by
// Redis on its own clock, and the reading of its answer.
//
// The arithmetic is detail/gcra.hpp's (the local token bucket's): one number
// per quota, the theoretical arrival time (TAT) at which the quota would be
// full again; n permits are granted at `now` when max(TAT, now) + n·T − τ −
// now ≤ lookahead, where T = 1/rate is one permit's refill time and τ = B·T;
// a grant moves TAT there, a rejection writes nothing. Time is in
// microseconds since 2023-11-14 22:13:20 UTC (Unix 1.7e9 s) as a Lua double:
// integers stay exact until the year 2308. T = 1e6 / rate is not always
// whole: then each grant rounds the TAT to the double's step, 2^-6 µs near
// today's TIME (≈ 1e14 µs; 2^-5 from 2028), so up to 0.008 µs per grant
// accumulates while grants follow each other without a pause. Rates
// dividing 1e6 (1, 2, 50, 1000, …) are exact, like the local bucket's.
//
// KEYS[1] the quota's key. ARGV: T (µs), τ (µs), n (the permits needed),
// want (≥ n: the permits to take when there is room, for a lease), lookahead
// (µs: grant permits that exist within it, as a reservation), and, only from
// the tests, a time override (µs since the epoch above) replacing TIME.
//
// Answer: {taken, wait_us, remaining}. taken = 0: rejected, the n permits
// exist in wait_us. taken ≥ n: granted; wait_us > 0 only for a reservation
// (the caller sleeps that long); remaining = whole permits left.
//
// The key is SET with PX = the milliseconds until the quota is full again:
// past that instant a missing key means exactly what the stored one would
// (max(TAT, now) = now), so idle quotas cost no memory. (Under the tests'
// time override the key lives a minute longer: Redis expires keys on its
// own clock, not on the override's.) TIME before a write
// is allowed on Redis ≥ 5 (effects replication; the only mode on Redis 7).
#pragma once

#include <hiredis/hiredis.h>

#include <cstdint>
#include <string>
#include <string_view>

namespace resil::redis::detail {

inline constexpr std::string_view gcra_script = R"lua(
local t = redis.call('TIME')
local now = (tonumber(t[1]) - 1700000000) * 1000000 + tonumber(t[2])
if ARGV[6] then now = tonumber(ARGV[6]) end
local T = tonumber(ARGV[1])
local tau = tonumber(ARGV[2])
local n = tonumber(ARGV[3])
local want = tonumber(ARGV[4])
local look = tonumber(ARGV[5])
local tat = now
local stored = redis.call('GET', KEYS[1])
if stored then
  local v = tonumber(stored)
  if not v then return redis.error_reply('RESILSTATE ' .. KEYS[1] .. ' does not hold a rate limiter state') end
  if v > now then tat = v end
end
local new_tat = tat + n * T
local ready = new_tat - tau - now
if ready > look then return {0, math.ceil(ready), 0} end
local taken = n
if want > n then
  local extra = math.floor((now + look + tau - new_tat) / T)
  if extra > want - n then extra = want - n end
  if extra > 0 then
    taken = n + extra
    new_tat = new_tat + extra * T
    ready = new_tat - tau - now
  end
end
local ttl = math.ceil((new_tat - now) / 1000)
if ttl < 1 then ttl = 1 end
if ARGV[6] then ttl = ttl + 60000 end
redis.call('SET', KEYS[1], string.format('%.17g', new_tat), 'PX', ttl)
local remaining = math.floor((now + tau - new_tat) / T)
if remaining < 0 then remaining = 0 end
if ready < 0 then ready = 0 end
return {taken, math.ceil(ready), remaining}
)lua";

/// The script's answer, read.
struct script_answer {
    std::int64_t taken = 0;      ///< 0: rejected; otherwise ≥ the permits asked for
    std::int64_t wait_us = 0;    ///< rejected: until the permits exist; granted: a reservation's wait
    std::int64_t remaining = 0;  ///< whole permits left after a grant
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

/// Reads a reply to EVALSHA of gcra_script for `want` permits at most,
/// asked with a lookahead of `look_us`: exactly three integers, 0 ≤ taken ≤
/// want, wait ≥ 0, remaining ≥ 0, and a grant's wait within the lookahead
/// (a reservation the caller did not ask for would make it sleep); anything
/// else is bad_shape with a description. Never trusts the reply's shape (a
/// proxy, another script under the same name, a version skew).
[[nodiscard]] inline reading read_answer(const redisReply* r, std::int64_t need, std::int64_t want,
                                         std::int64_t look_us) {
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
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 3) {
        out.error = "the script's answer must be an array of 3 integers, got " +
                    std::string(r->type == REDIS_REPLY_ARRAY ? "an array of " + std::to_string(r->elements)
                                                             : "a reply of type " + std::to_string(r->type));
        return out;
    }
    for (std::size_t i = 0; i < 3; ++i) {
        if (r->element[i] == nullptr || r->element[i]->type != REDIS_REPLY_INTEGER) {
            out.error = "the script's answer must be an array of 3 integers; element " + std::to_string(i) +
                        " is not an integer";
            return out;
        }
    }
    out.answer = {r->element[0]->integer, r->element[1]->integer, r->element[2]->integer};
    const auto& a = out.answer;
    if (a.taken < 0 || a.taken > want || (a.taken > 0 && a.taken < need) || a.wait_us < 0 || a.remaining < 0 ||
        (a.taken > 0 && a.wait_us > look_us)) {
        out.error = "the script's answer is out of range: {" + std::to_string(a.taken) + ", " +
                    std::to_string(a.wait_us) + ", " + std::to_string(a.remaining) + "} for " +
                    std::to_string(need) + " to " + std::to_string(want) + " permits within " +
                    std::to_string(look_us) + " us";
        return out;
    }
    out.kind = reply_kind::answer;
    return out;
}

}  // namespace resil::redis::detail
