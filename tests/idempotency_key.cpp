#include <resil/idempotency_key.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_set>
#include <vector>

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "catch.hpp"

namespace {

using resil::idempotency_key;
using bytes16 = idempotency_key::bytes_type;
namespace chacha20 = resil::detail::chacha20;
namespace csprng = resil::detail::csprng;

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define RESIL_TEST_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define RESIL_TEST_SANITIZED 1
#endif
#endif

// How many keys the uniqueness tests make per kind: 10 million, or 1 million
// under ASan/TSan, where each key costs ~50x more and 10 million would take
// minutes. RESIL_TEST_KEY_COUNT (a positive integer) overrides either.
std::size_t key_count() {
    static const std::size_t count = [] {
#ifdef RESIL_TEST_SANITIZED
        std::size_t n = 1'000'000;
#else
        std::size_t n = 10'000'000;
#endif
        if (const char* env = std::getenv("RESIL_TEST_KEY_COUNT")) {
            char* end = nullptr;
            const unsigned long long v = std::strtoull(env, &end, 10);
            if (end != env && *end == '\0' && v > 0) n = static_cast<std::size_t>(v);
        }
        return n;
    }();
    return count;
}

std::vector<std::uint8_t> from_hex(std::string_view hex) {
    std::vector<std::uint8_t> out;
    auto nibble = [](char c) { return c <= '9' ? c - '0' : c - 'a' + 10; };
    for (std::size_t i = 0; i + 1 < hex.size(); i += 2)
        out.push_back(static_cast<std::uint8_t>(nibble(hex[i]) << 4 | nibble(hex[i + 1])));
    return out;
}

bool has_rfc_variant(const bytes16& b) { return (b[8] & 0xC0) == 0x80; }

std::uint64_t embedded_ms(const bytes16& b) {
    std::uint64_t ms = 0;
    for (std::size_t i = 0; i < 6; ++i) ms = ms << 8 | b[i];
    return ms;
}

// The 16-bit (timestamp, counter) stamp a v7 key was built from, rebuilt
// from its bytes: 48 bits of ms, then rand_a (12 bits), then the top 4 of rand_b.
std::uint64_t embedded_stamp(const bytes16& b) {
    const std::uint64_t counter = (std::uint64_t{b[6] & 0x0Fu} << 12) | (std::uint64_t{b[7]} << 4) | ((b[8] >> 2) & 0x0Fu);
    return embedded_ms(b) << 16 | counter;
}

std::uint64_t unix_ms_now() {
    return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                          std::chrono::system_clock::now().time_since_epoch())
                                          .count());
}

// A key as two native words: sorting these is several times faster than
// sorting byte arrays, and any total order serves a uniqueness check.
struct words128 {
    std::uint64_t first;
    std::uint64_t second;
};

words128 as_words(const bytes16& b) {
    words128 w{};
    std::memcpy(&w.first, b.data(), 8);
    std::memcpy(&w.second, b.data() + 8, 8);
    return w;
}

bool all_distinct(std::vector<words128>& keys) {
    // A plain comparator: unoptimised sanitizer builds pay per call, and the
    // synthesized <=> makes several.
    std::sort(keys.begin(), keys.end(), [](const words128& a, const words128& b) {
        return a.first < b.first || (a.first == b.first && a.second < b.second);
    });
    for (std::size_t i = 1; i < keys.size(); ++i)
        if (keys[i].first == keys[i - 1].first && keys[i].second == keys[i - 1].second) return false;
    return true;
}

// Runs `produce` in a forked child and returns the keys it wrote to a pipe,
// while the parent runs `meanwhile`. Bounded: a child silent for 60 s is
// killed and the test fails. `exit_code` receives the child's exit status.
template <class Produce, class Meanwhile>
std::vector<bytes16> keys_from_child(Produce produce, Meanwhile meanwhile, int& exit_code, pid_t (*fork_fn)() = &::fork) {
    int fds[2];
    REQUIRE(::pipe(fds) == 0);
    const pid_t pid = fork_fn();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        ::close(fds[0]);
        int code = 0;
        try {
            code = produce(fds[1]);
        } catch (...) {
            code = 100;
        }
        ::close(fds[1]);
        ::_exit(code);
    }
    ::close(fds[1]);
    meanwhile();
    std::vector<std::uint8_t> raw;
    std::array<std::uint8_t, 4096> chunk{};
    bool timed_out = false;
    for (;;) {
        pollfd p{fds[0], POLLIN, 0};
        const int ready = ::poll(&p, 1, 60'000);
        if (ready < 0 && errno == EINTR) continue;
        if (ready <= 0) {
            timed_out = true;
            break;
        }
        const ssize_t got = ::read(fds[0], chunk.data(), chunk.size());
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) break;
        raw.insert(raw.end(), chunk.begin(), chunk.begin() + got);
    }
    ::close(fds[0]);
    if (timed_out) ::kill(pid, SIGKILL);
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    REQUIRE_FALSE(timed_out);
    REQUIRE(WIFEXITED(status));
    exit_code = WEXITSTATUS(status);
    REQUIRE(raw.size() % 16 == 0);
    std::vector<bytes16> keys(raw.size() / 16);
    if (!keys.empty()) std::memcpy(keys.data(), raw.data(), raw.size());
    return keys;
}

bool write_all(int fd, const void* data, std::size_t size) {
    const auto* p = static_cast<const std::uint8_t*>(data);
    while (size > 0) {
        const ssize_t n = ::write(fd, p, size);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        p += n;
        size -= static_cast<std::size_t>(n);
    }
    return true;
}

// In a child: n v4 then n v7 keys, written to `fd`.
int write_child_keys(int fd, std::size_t n) {
    std::vector<bytes16> keys;
    keys.reserve(2 * n);
    for (std::size_t i = 0; i < n; ++i) keys.push_back(idempotency_key::v4().bytes());
    for (std::size_t i = 0; i < n; ++i) keys.push_back(idempotency_key::v7().bytes());
    return write_all(fd, keys.data(), keys.size() * sizeof(bytes16)) ? 0 : 101;
}

void append_keys(std::vector<bytes16>& out, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) out.push_back(idempotency_key::v4().bytes());
    for (std::size_t i = 0; i < n; ++i) out.push_back(idempotency_key::v7().bytes());
}

std::size_t common_keys(std::vector<bytes16> a, std::vector<bytes16> b) {
    std::sort(a.begin(), a.end());
    std::sort(b.begin(), b.end());
    std::vector<bytes16> both;
    std::set_intersection(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(both));
    return both.size();
}

}  // namespace

// ---------------------------------------------------------------- ChaCha20

TEST_CASE("chacha20: RFC 8439 section 2.3.2 block test vector") {
    std::array<std::uint8_t, 32> key_bytes{};
    for (std::size_t i = 0; i < key_bytes.size(); ++i) key_bytes[i] = static_cast<std::uint8_t>(i);
    const std::array<std::uint8_t, 12> nonce_bytes{0, 0, 0, 0x09, 0, 0, 0, 0x4a, 0, 0, 0, 0};
    const auto expected = from_hex(
        "10f1e7e4d13b5915500fdd1fa32071c4c7d1f4c733c068030422aa9ac3d46c4e"
        "d2826446079faa0914c2d705d98b02a2b5129cd1de164eb9cbd083e8a2503c4e");
    std::array<std::uint8_t, 64> out{};
    chacha20::block(chacha20::load_key(key_bytes.data()), 1, chacha20::load_nonce(nonce_bytes.data()), out.data());
    CHECK(std::equal(out.begin(), out.end(), expected.begin(), expected.end()));
}

TEST_CASE("chacha20: RFC 8439 appendix A.1 vector #1 (zero key, zero nonce, block 0), as the generator runs it") {
    const auto expected = from_hex(
        "76b8e0ada0f13d90405d6ae55386bd28bdd219b8a08ded1aa836efcc8b770dc7"
        "da41597c5157488d7724e03fb8d84a376a43b8f41518a11cc387b669b2ee6586");
    std::array<std::uint8_t, 64> scalar{};
    chacha20::block(chacha20::key_words{}, 0, chacha20::nonce_words{}, scalar.data());
    CHECK(std::equal(scalar.begin(), scalar.end(), expected.begin(), expected.end()));
    std::array<std::uint8_t, 4 * 64> lanes{};
    chacha20::blocks<4>(chacha20::key_words{}, 0, chacha20::nonce_words{}, lanes.data());
    CHECK(std::equal(lanes.begin(), lanes.begin() + 64, expected.begin(), expected.end()));
}

TEST_CASE("chacha20: the four-lane blocks equal the scalar block function, across a counter wrap") {
    chacha20::key_words key{};
    for (std::size_t i = 0; i < key.size(); ++i) key[i] = 0x9E3779B9u * static_cast<std::uint32_t>(i + 1);
    const chacha20::nonce_words nonce{0x01020304u, 0xA0B0C0D0u, 0xDEADBEEFu};
    for (const std::uint32_t first : {0u, 1u, 12345u, 0xFFFFFFFCu, 0xFFFFFFFEu}) {
        std::array<std::uint8_t, 8 * 64> lanes{};
        chacha20::blocks<8>(key, first, nonce, lanes.data());
        for (std::uint32_t b = 0; b < 8; ++b) {
            std::array<std::uint8_t, 64> one{};
            chacha20::block(key, first + b, nonce, one.data());
            INFO("counter " << first << " + " << b);
            CHECK(std::equal(one.begin(), one.end(), lanes.begin() + b * 64));
        }
    }
}

// ---------------------------------------------------------------- CSPRNG

TEST_CASE("csprng: each batch is ChaCha20 under the previous key, whose first 32 bytes key the next batch") {
    std::array<std::uint8_t, 16> sink{};
    csprng::fill16(sink.data());
    while (csprng::current_state->batches_left < 2) csprng::fill16(sink.data());  // no OS reseed below
    const chacha20::key_words old_key = csprng::current_state->key;
    std::array<std::uint8_t, csprng::batch_size> expected{};
    chacha20::blocks<csprng::batch_blocks>(old_key, 0, chacha20::nonce_words{}, expected.data());

    const auto& state = csprng::refill();
    CHECK(state.key == chacha20::load_key(expected.data()));
    CHECK(state.key != old_key);
    CHECK(state.position == csprng::output_begin);
    // The next key is not left in the output buffer.
    CHECK(std::all_of(state.buffer.begin(), state.buffer.begin() + 32, [](std::uint8_t b) { return b == 0; }));
    CHECK(std::equal(state.buffer.begin() + 32, state.buffer.end(), expected.begin() + 32));

    // Drawing hands out exactly those bytes and wipes them from the state.
    std::array<std::uint8_t, 16> drawn{};
    csprng::fill16(drawn.data());
    CHECK(std::equal(drawn.begin(), drawn.end(), expected.begin() + 32));
    CHECK(std::all_of(state.buffer.begin() + 32, state.buffer.begin() + 48, [](std::uint8_t b) { return b == 0; }));
}

TEST_CASE("csprng: the OS replaces the key after the documented number of batches") {
    std::array<std::uint8_t, 16> sink{};
    csprng::fill16(sink.data());
    while (csprng::current_state->batches_left != 1) csprng::fill16(sink.data());
    // The last batch before the reseed: the next refill must not follow the chain.
    const chacha20::key_words chained_key = csprng::current_state->key;
    csprng::current_state->batches_left = 0;
    const auto& state = csprng::refill();
    std::array<std::uint8_t, csprng::batch_size> chained{};
    chacha20::blocks<csprng::batch_blocks>(chained_key, 0, chacha20::nonce_words{}, chained.data());
    CHECK(state.batches_left == csprng::reseed_after_batches - 1);
    CHECK_FALSE(std::equal(state.buffer.begin() + 32, state.buffer.end(), chained.begin() + 32));
}

// ---------------------------------------------------------------- v4

TEST_CASE("v4: key_count() keys, every one version 4 / RFC variant, none repeated") {
    const std::size_t n = key_count();
    std::vector<words128> keys;
    keys.reserve(n);
    std::size_t malformed = 0;
    for (std::size_t i = 0; i < n; ++i) {
        const auto key = idempotency_key::v4();
        if (key.version() != 4 || !has_rfc_variant(key.bytes())) ++malformed;
        keys.push_back(as_words(key.bytes()));
    }
    CHECK(malformed == 0);
    CHECK(all_distinct(keys));
}

TEST_CASE("v4: each of the 122 random bits is set about half the time") {
    constexpr std::size_t n = 200'000;
    std::array<std::size_t, 128> ones{};
    for (std::size_t i = 0; i < n; ++i) {
        const auto b = idempotency_key::v4().bytes();
        for (std::size_t bit = 0; bit < 128; ++bit) ones[bit] += (b[bit / 8] >> (7 - bit % 8)) & 1u;
    }
    // Fixed bits: version 0100 at bits 48..51, variant 10 at bits 64..65.
    for (std::size_t bit : {48u, 50u, 51u, 65u}) CHECK(ones[bit] == 0);
    for (std::size_t bit : {49u, 64u}) CHECK(ones[bit] == n);
    // Random bits: binomial(n, 1/2), sigma ~ 224; 6 sigma is ~1350.
    for (std::size_t bit = 0; bit < 128; ++bit) {
        if ((bit >= 48 && bit <= 51) || bit == 64 || bit == 65) continue;
        INFO("bit " << bit << ": " << ones[bit] << " ones");
        CHECK(ones[bit] > n / 2 - 1350);
        CHECK(ones[bit] < n / 2 + 1350);
    }
}

TEST_CASE("v4: threads draw from independent streams") {
    constexpr int threads = 4;
    const std::size_t per_thread = std::max<std::size_t>(key_count() / 20, 1000);
    std::vector<std::vector<bytes16>> keys(threads);
    std::vector<std::thread> workers;
    for (int t = 0; t < threads; ++t)
        workers.emplace_back([&, t] {
            auto& mine = keys[static_cast<std::size_t>(t)];
            mine.reserve(per_thread);
            for (std::size_t i = 0; i < per_thread; ++i) mine.push_back(idempotency_key::v4().bytes());
        });
    for (auto& w : workers) w.join();
    std::vector<words128> all;
    for (const auto& mine : keys)
        for (const auto& k : mine) all.push_back(as_words(k));
    REQUIRE(all.size() == threads * per_thread);
    CHECK(all_distinct(all));
}

TEST_CASE("v4: a thread_local destructor may still make keys") {
    struct makes_key_at_exit {
        idempotency_key* out = nullptr;
        ~makes_key_at_exit() {
            if (out != nullptr) *out = idempotency_key::v4();
        }
    };
    idempotency_key at_exit;
    std::thread([&] {
        (void)idempotency_key::v4();  // maps this thread's state first
        thread_local makes_key_at_exit guard;
        guard.out = &at_exit;
    }).join();
    CHECK(at_exit.version() == 4);
}

// ---------------------------------------------------------------- v7

TEST_CASE("v7: key_count() keys in sequence strictly increase (so none repeats), every one version 7 / RFC variant") {
    const std::size_t n = key_count();
    std::vector<bytes16> keys;
    keys.reserve(n);
    std::size_t malformed = 0;
    for (std::size_t i = 0; i < n; ++i) {
        const auto key = idempotency_key::v7();
        if (key.version() != 7 || !has_rfc_variant(key.bytes())) ++malformed;
        keys.push_back(key.bytes());
    }
    CHECK(malformed == 0);
    CHECK(std::adjacent_find(keys.begin(), keys.end(), std::greater_equal<>{}) == keys.end());
}

TEST_CASE("v7: the embedded time is system_clock's Unix milliseconds") {
    std::size_t early = 0;
    std::size_t late = 0;
    for (int i = 0; i < 1000; ++i) {
        const auto before = unix_ms_now();
        const auto key = idempotency_key::v7();
        const auto after = unix_ms_now();
        const auto ms = embedded_ms(key.bytes());
        if (ms < before) ++early;
        // Ahead of the clock only after > 32768 keys in one millisecond (an
        // earlier test may have done that): allow one second.
        if (ms > after + 1000) ++late;
    }
    CHECK(early == 0);
    CHECK(late == 0);
}

TEST_CASE("v7: text order is creation order too") {
    std::vector<std::string> texts;
    for (int i = 0; i < 10'000; ++i) texts.push_back(idempotency_key::v7().to_string());
    CHECK(std::adjacent_find(texts.begin(), texts.end(), std::greater_equal<>{}) == texts.end());
}

TEST_CASE("v7: threads share one increasing stamp sequence; each thread's keys increase") {
    constexpr int threads = 4;
    const std::size_t per_thread = std::max<std::size_t>(key_count() / 20, 1000);
    std::vector<std::vector<bytes16>> keys(threads);
    std::atomic<int> ready{0};
    std::vector<std::thread> workers;
    for (int t = 0; t < threads; ++t)
        workers.emplace_back([&, t] {
            auto& mine = keys[static_cast<std::size_t>(t)];
            mine.reserve(per_thread);
            ready.fetch_add(1);
            while (ready.load() < threads) std::this_thread::yield();  // maximise contention
            for (std::size_t i = 0; i < per_thread; ++i) mine.push_back(idempotency_key::v7().bytes());
        });
    for (auto& w : workers) w.join();
    std::vector<std::uint64_t> stamps;
    for (const auto& mine : keys) {
        CHECK(std::adjacent_find(mine.begin(), mine.end(), std::greater_equal<>{}) == mine.end());
        for (const auto& k : mine) stamps.push_back(embedded_stamp(k));
    }
    // Not just unique keys: unique (ms, counter) stamps, without help from the random bits.
    std::sort(stamps.begin(), stamps.end());
    CHECK(std::adjacent_find(stamps.begin(), stamps.end()) == stamps.end());
}

TEST_CASE("v7 stamps: counter starts random in a new millisecond, steps by one within it") {
    std::atomic<std::uint64_t> last{0};
    CHECK(resil::detail::next_v7_stamp(last, 1000, 0xFFFF) == (1000u << 16 | 0x7FFF));  // top counter bit kept clear
    CHECK(resil::detail::next_v7_stamp(last, 1000, 0x0123) == (1000u << 16 | 0x8000));
    CHECK(resil::detail::next_v7_stamp(last, 1001, 0x0123) == (1001u << 16 | 0x0123));
    CHECK(last.load() == (1001u << 16 | 0x0123));
}

TEST_CASE("v7 stamps: a clock stepping back keeps the last timestamp and counts on") {
    std::atomic<std::uint64_t> last{0};
    const auto t = std::uint64_t{1'700'000'000'000};
    const auto first = resil::detail::next_v7_stamp(last, t, 5);
    CHECK(resil::detail::next_v7_stamp(last, t - 60'000, 9) == first + 1);
    CHECK(resil::detail::next_v7_stamp(last, 0, 9) == first + 2);
    CHECK(resil::detail::next_v7_stamp(last, t + 1, 9) == ((t + 1) << 16 | 9));
}

TEST_CASE("v7 stamps: counter overflow carries into the timestamp, which the clock then catches up with") {
    std::atomic<std::uint64_t> last{std::uint64_t{1000} << 16 | 0xFFFE};
    CHECK(resil::detail::next_v7_stamp(last, 1000, 3) == (1000u << 16 | 0xFFFF));
    CHECK(resil::detail::next_v7_stamp(last, 1000, 3) == (1001u << 16));  // ahead of the clock
    CHECK(resil::detail::next_v7_stamp(last, 1001, 3) == (1001u << 16 | 1));  // same ms: no random restart
    CHECK(resil::detail::next_v7_stamp(last, 1002, 3) == (1002u << 16 | 3));
}

TEST_CASE("v7 stamps: an exhausted 64-bit space is an error, not a wrap") {
    std::atomic<std::uint64_t> last{~std::uint64_t{0}};
    CHECK_THROWS_AS(resil::detail::next_v7_stamp(last, (std::uint64_t{1} << 48) - 1, 0), std::overflow_error);
    CHECK(last.load() == ~std::uint64_t{0});
}

TEST_CASE("v7 stamps: times outside 48 bits of Unix milliseconds are clamped") {
    using std::chrono::system_clock;
    CHECK(resil::detail::unix_ms_48(system_clock::time_point{}) == 0);
    CHECK(resil::detail::unix_ms_48(system_clock::time_point{} - std::chrono::hours{24}) == 0);
    CHECK(resil::detail::unix_ms_48(system_clock::time_point{} + std::chrono::milliseconds{1234}) == 1234);
    CHECK(resil::detail::unix_ms_48(system_clock::time_point::max()) <= (std::uint64_t{1} << 48) - 1);
}

// ---------------------------------------------------------------- fork

TEST_CASE("fork: the child's keys collide neither with the parent's earlier nor its later keys") {
    constexpr std::size_t n = 20'000;
    std::vector<bytes16> parent;
    append_keys(parent, n);  // before the fork; the parent's buffer is part-used
    int exit_code = -1;
    const auto child = keys_from_child([](int fd) { return write_child_keys(fd, n); },
                                       [&] { append_keys(parent, n); }, exit_code);
    REQUIRE(exit_code == 0);
    REQUIRE(child.size() == 2 * n);
    REQUIRE(parent.size() == 4 * n);
    CHECK(common_keys(parent, child) == 0);
    // The child's v7 keys still carry a version and the variant.
    CHECK(std::all_of(child.begin() + n, child.end(),
                      [](const bytes16& b) { return b[6] >> 4 == 7 && has_rfc_variant(b); }));
}

TEST_CASE("fork: both guards fire in the child (wiped state page, bumped fork epoch)") {
    (void)idempotency_key::v4();  // this thread's state exists and is seeded
    REQUIRE(csprng::current_state != nullptr);
    REQUIRE(csprng::current_state->epoch != 0);
    const auto parent_epoch = csprng::fork_epoch.load();
    int exit_code = -1;
    (void)keys_from_child(
        [parent_epoch](int) {
            int code = 0;
            if (csprng::current_state->epoch == 0) code |= 1;
            if (csprng::fork_epoch.load() == parent_epoch + 1) code |= 2;
            return code;
        },
        [] {}, exit_code);
    CHECK((exit_code & 2) != 0);
    if (csprng::current_state_wipes_on_fork)
        CHECK((exit_code & 1) != 0);
    else
        WARN("MADV_WIPEONFORK unsupported here: only the pthread_atfork guard protects forks");
}

#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 34))
#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define RESIL_TEST_UNDER_TSAN 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define RESIL_TEST_UNDER_TSAN 1
#endif
#ifndef RESIL_TEST_UNDER_TSAN
// _Fork() runs no pthread_atfork handlers, as a raw clone would not: only the
// wiped page stands between the child and a replay of the parent's stream.
TEST_CASE("fork: a child made without atfork handlers (_Fork) still does not replay the parent") {
    (void)idempotency_key::v4();
    if (!csprng::current_state_wipes_on_fork) {
        WARN("MADV_WIPEONFORK unsupported here: _Fork children are not protected; skipped");
        return;
    }
    constexpr std::size_t n = 20'000;
    std::vector<bytes16> parent;
    append_keys(parent, n);
    const auto parent_epoch = csprng::fork_epoch.load();
    int exit_code = -1;
    const auto child = keys_from_child(
        [parent_epoch](int fd) {
            if (csprng::fork_epoch.load() != parent_epoch) return 102;  // a handler ran: not the case under test
            return write_child_keys(fd, n);
        },
        [&] { append_keys(parent, n); }, exit_code, &::_Fork);
    REQUIRE(exit_code == 0);
    REQUIRE(child.size() == 2 * n);
    CHECK(common_keys(parent, child) == 0);
}
#endif
#endif

// ---------------------------------------------------------------- text

// Parsing and formatting are constexpr: keys can be checked at compile time.
static_assert(idempotency_key::parse("919108f7-52d1-4320-9bac-f847db4148a8")->version() == 4);
static_assert(idempotency_key::parse("919108F7-52D1-4320-9BAC-F847DB4148A8")->text().view() ==
              "919108f7-52d1-4320-9bac-f847db4148a8");
static_assert(!idempotency_key::parse("919108f7-52d1-4320-cbac-f847db4148a8"));

TEST_CASE("text: RFC 9562 example keys parse in either case and format in lowercase") {
    const auto v7 = idempotency_key::parse("017F22E2-79B0-7CC3-98C4-DC0C0C07398F");  // RFC 9562 A.6
    REQUIRE(v7);
    CHECK(v7->version() == 7);
    CHECK(v7->text().view() == "017f22e2-79b0-7cc3-98c4-dc0c0c07398f");
    CHECK(embedded_ms(v7->bytes()) == 0x017F22E279B0u);
    const auto v4 = idempotency_key::parse("919108f7-52d1-4320-9bac-f847db4148a8");  // RFC 9562 A.3
    REQUIRE(v4);
    CHECK(v4->version() == 4);
    CHECK(v4->bytes() == bytes16{0x91, 0x91, 0x08, 0xf7, 0x52, 0xd1, 0x43, 0x20,
                                 0x9b, 0xac, 0xf8, 0x47, 0xdb, 0x41, 0x48, 0xa8});
    CHECK(v4->to_string() == "919108f7-52d1-4320-9bac-f847db4148a8");
    CHECK(idempotency_key::parse("919108F7-52d1-4320-9BAC-f847db4148A8") == v4);
}

TEST_CASE("text: format, text and parse round-trip for generated keys") {
    for (int i = 0; i < 20'000; ++i) {
        const auto key = (i % 2 == 0) ? idempotency_key::v4() : idempotency_key::v7();
        const auto text = key.text();
        REQUIRE(text.view().size() == 36);
        REQUIRE(std::strlen(text.c_str()) == 36);
        REQUIRE(idempotency_key::parse(text) == key);
        REQUIRE(idempotency_key::from_bytes(key.bytes()) == key);
    }
}

TEST_CASE("text: format_to writes exactly 36 characters and returns the end") {
    std::array<char, 40> buffer;
    buffer.fill('#');
    const auto key = *idempotency_key::parse("017f22e2-79b0-7cc3-98c4-dc0c0c07398f");
    char* end = key.format_to(buffer.data());
    CHECK(end == buffer.data() + 36);
    CHECK(std::string_view(buffer.data(), 36) == "017f22e2-79b0-7cc3-98c4-dc0c0c07398f");
    CHECK(buffer[36] == '#');
}

TEST_CASE("text: malformed keys are rejected") {
    const std::string_view good = "919108f7-52d1-4320-9bac-f847db4148a8";
    REQUIRE(idempotency_key::parse(good));
    const char* bad[] = {
        "",
        "919108f7-52d1-4320-9bac-f847db4148a",     // 35 characters
        "919108f7-52d1-4320-9bac-f847db4148a80",   // 37
        "919108f7552d1-4320-9bac-f847db4148a8",    // hyphen replaced by a digit
        "919108f-752d1-4320-9bac-f847db4148a8",    // hyphen one place early
        "919108f7-52d14320--9bac-f847db4148a8",    // hyphen one place late
        "919108f7_52d1_4320_9bac_f847db4148a8",    // other separators
        "919108f752d143209bacf847db4148a8----",    // hyphens at the end
        "919108g7-52d1-4320-9bac-f847db4148a8",    // not hex
        "919108f7-52d1-4320-9bac-f847db4148a ",    // space
        " 19108f7-52d1-4320-9bac-f847db4148a8",
        "919108f7-52d1-4320-+bac-f847db4148a8",
        "{19108f7-52d1-4320-9bac-f847db4148a}",
        "919108f7-52d1-4320-1bac-f847db4148a8",    // variant 0xxx (NCS)
        "919108f7-52d1-4320-cbac-f847db4148a8",    // variant 110x (Microsoft)
        "919108f7-52d1-4320-fbac-f847db4148a8",    // variant 111x (reserved)
        "919108f7-52d1-0320-9bac-f847db4148a8",    // version 0
        "919108f7-52d1-9320-9bac-f847db4148a8",    // version 9
        "919108f7-52d1-f320-9bac-f847db4148a8",    // version 15
        "00000000-0000-0000-0000-000000000000",    // nil
        "ffffffff-ffff-ffff-ffff-ffffffffffff",    // max
        "urn:uuid:919108f7-52d1-4320-9bac-f847db4148a8",  // URN form
    };
    for (const char* text : bad) {
        INFO('"' << text << '"');
        CHECK_FALSE(idempotency_key::parse(text));
    }
    std::string with_nul(good);
    with_nul[20] = '\0';
    CHECK_FALSE(idempotency_key::parse(with_nul));
    // Every version RFC 9562 defines is accepted.
    for (char v : std::string_view("12345678")) {
        std::string text(good);
        text[14] = v;
        INFO(text);
        CHECK(idempotency_key::parse(text));
    }
}

TEST_CASE("nil: the default key is nil, version 0, and not a parseable key") {
    const idempotency_key nil;
    CHECK(nil.is_nil());
    CHECK(nil.version() == 0);
    CHECK(nil.text().view() == "00000000-0000-0000-0000-000000000000");
    CHECK_FALSE(idempotency_key::from_bytes(nil.bytes()));
    CHECK_FALSE(idempotency_key::v4().is_nil());
    CHECK(nil < idempotency_key::v7());
}

TEST_CASE("hash: equal keys hash equal, distinct keys spread") {
    const auto key = idempotency_key::v7();
    CHECK(std::hash<idempotency_key>{}(key) == std::hash<idempotency_key>{}(*idempotency_key::parse(key.text())));
    std::unordered_set<std::size_t> hashes;
    for (int i = 0; i < 50'000; ++i) {
        hashes.insert(std::hash<idempotency_key>{}(idempotency_key::v7()));
        hashes.insert(std::hash<idempotency_key>{}(idempotency_key::v4()));
    }
    CHECK(hashes.size() == 100'000);
}
