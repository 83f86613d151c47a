// resil/detail/csprng.hpp — a per-thread, fork-safe cryptographically secure
// generator: ChaCha20 keystream (detail/chacha20.hpp) keyed from the OS.
//
//   std::uint8_t bytes[16];
//   resil::detail::csprng::fill16(bytes);   // ~ a memcpy; a ChaCha20 batch every 30 draws
//
// Design, and why:
// - Entropy (detail/platform.hpp decides which): BCryptGenRandom on Windows;
//   getrandom(2) on Linux (blocks only until the kernel pool is first
//   initialised), /dev/urandom only when getrandom is missing (ENOSYS) or
//   filtered (EPERM); arc4random_buf(3) on macOS and the BSDs; /dev/urandom on
//   other POSIX systems. If the source fails, std::system_error. Never a
//   fallback to time, addresses or any other guessable seed.
// - Fast key erasure: each refill computes 8 blocks with the current key; the
//   first 32 bytes become the next key and are wiped from the buffer, the other
//   480 are handed out 16 at a time and wiped as they go. Whoever reads a
//   thread's state learns nothing about bytes already handed out. The key is
//   replaced from the OS every 2048 refills (~1 MB) as well.
// - Per thread: the state is reached through a trivial thread_local pointer,
//   so the hot path takes no lock and touches no shared cache line but one
//   read-mostly atomic. On POSIX it lives in a page of its own (see Fork); on
//   Windows, which has no fork, in a plain thread_local, wiped at thread exit.
// - Fork (POSIX): a child must never replay its parent's stream. Two
//   independent guards, either one sufficient:
//   1. the state page is mapped MADV_WIPEONFORK (Linux >= 4.14): the kernel
//      hands the child a zeroed page, which reads as "never seeded", whatever
//      created the child (fork, _Fork, raw clone) — no handler has to run;
//   2. a pthread_atfork child handler bumps `fork_epoch`, which every draw
//      compares with the epoch its state was seeded under (one relaxed load).
//   A getpid() check would cost a system call per draw (glibc no longer caches
//   the pid), so it is not used.
// - Thread exit (POSIX) unmaps the page (a pthread key destructor, which runs
//   after C++ thread_local destructors, so those may still draw).
// Not async-signal-safe: do not draw from a signal handler.
#pragma once

// Lets a test prove that a header does not pull the CSPRNG (and its OS
// headers) in: resil/pipeline.hpp must not.
#define RESIL_DETAIL_CSPRNG_INCLUDED 1

#include "platform.hpp"

#include <array>
#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <new>
#include <system_error>

#if RESIL_DETAIL_OS_WINDOWS
#ifndef NOMINMAX
#define NOMINMAX  // windows.h's min and max macros would break std::numeric_limits<T>::max()
#endif
#include <windows.h>
// After windows.h, which defines the types it uses.
#include <bcrypt.h>
#if defined(_MSC_VER)
#pragma comment(lib, "bcrypt")  // MinGW: -lbcrypt, which resil::resil's CMake target adds
#endif
#else
#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#if RESIL_DETAIL_HAVE_GETRANDOM
#include <sys/random.h>
#endif
#if RESIL_DETAIL_HAVE_ARC4RANDOM
#include <stdlib.h>  // NOLINT(modernize-deprecated-headers): arc4random_buf is not in <cstdlib>
#endif
#endif

#include "chacha20.hpp"
#include "fork_epoch.hpp"

namespace resil::detail::csprng {

#if RESIL_DETAIL_OS_WINDOWS

/// Fills `size` bytes from the operating system's CSPRNG, or throws
/// std::system_error.
inline void os_entropy(std::uint8_t* out, std::size_t size) {
    while (size > 0) {
        const ULONG chunk = size > 0x10000000u ? 0x10000000u : static_cast<ULONG>(size);
        if (!BCRYPT_SUCCESS(::BCryptGenRandom(nullptr, out, chunk, BCRYPT_USE_SYSTEM_PREFERRED_RNG)))
            throw std::system_error(EIO, std::generic_category(), "resil: BCryptGenRandom failed");
        out += chunk;
        size -= chunk;
    }
}

#else

/// Reads `size` bytes from /dev/urandom; throws std::system_error when it
/// cannot be opened, is not a character device (a planted regular file in a
/// chroot would be a fixed "random" stream), or fails to read.
inline void read_dev_urandom(std::uint8_t* out, std::size_t size) {
    int fd = -1;
    do {
        fd = ::open("/dev/urandom", O_RDONLY | O_CLOEXEC | O_NOCTTY);
    } while (fd < 0 && errno == EINTR);
    if (fd < 0)
        throw std::system_error(errno, std::generic_category(),
                                "resil: no entropy source: getrandom(2) is unavailable and /dev/urandom cannot be opened");
    struct closer {
        int fd;
        ~closer() { ::close(fd); }
    } const guard{fd};
    struct stat info {};
    if (::fstat(guard.fd, &info) != 0 || !S_ISCHR(info.st_mode))
        throw std::system_error(ENODEV, std::generic_category(), "resil: /dev/urandom is not a character device");
    while (size > 0) {
        const ::ssize_t got = ::read(guard.fd, out, size);
        if (got > 0) {
            out += got;
            size -= static_cast<std::size_t>(got);
        } else if (got < 0 && errno == EINTR) {
            continue;
        } else {
            throw std::system_error(got < 0 ? errno : EIO, std::generic_category(), "resil: reading /dev/urandom failed");
        }
    }
}

/// Fills `size` bytes from the operating system's CSPRNG, or throws
/// std::system_error. Blocks only on a machine whose entropy pool has not yet
/// been initialised since boot.
inline void os_entropy(std::uint8_t* out, std::size_t size) {
#if RESIL_DETAIL_HAVE_GETRANDOM
    while (size > 0) {
        const ::ssize_t got = ::getrandom(out, size, 0);
        if (got > 0) {
            out += got;
            size -= static_cast<std::size_t>(got);
            continue;
        }
        const int error = got < 0 ? errno : EIO;
        if (error == EINTR) continue;
        // ENOSYS: kernel older than 3.17; EPERM: a seccomp filter refusing it.
        if (error == ENOSYS || error == EPERM) return read_dev_urandom(out, size);
        throw std::system_error(error, std::generic_category(), "resil: getrandom(2) failed");
    }
#elif RESIL_DETAIL_HAVE_ARC4RANDOM
    ::arc4random_buf(out, size);
#else
    read_dev_urandom(out, size);
#endif
}

#endif  // RESIL_DETAIL_OS_WINDOWS

// fork_epoch, on_fork_child and watch_forks: detail/fork_epoch.hpp, shared
// with the jitter engine (one pthread_atfork handler for both).
using detail::fork_epoch;
using detail::watch_forks;

inline constexpr std::size_t batch_blocks = 8;
inline constexpr std::size_t batch_size = batch_blocks * chacha20::block_size;  // 512 bytes
inline constexpr std::uint32_t output_begin = chacha20::key_size;  // bytes [0, 32) key the next batch
inline constexpr std::uint32_t reseed_after_batches = 2048;        // ~1 MB of output

/// One thread's generator. All-zero bytes mean "not seeded": the state of a
/// fresh page, and of a page the kernel wiped in a forked child.
struct generator_state {
    std::uint64_t epoch;          // fork_epoch when seeded from the OS; 0: not seeded
    std::uint32_t position;       // next unread byte of `buffer`
    std::uint32_t batches_left;   // refills before the key is replaced from the OS
    chacha20::key_words key;
    alignas(64) std::array<std::uint8_t, batch_size> buffer;
};

/// This thread's state, or null before its first draw. Trivial, so reading it
/// costs no thread_local initialisation check.
inline thread_local generator_state* current_state = nullptr;
/// Whether the kernel accepted MADV_WIPEONFORK for this thread's state page
/// (always false on Windows, which has no fork).
inline thread_local bool current_state_wipes_on_fork = false;

#if RESIL_DETAIL_OS_WINDOWS

/// This thread's state: trivially destructible, so it stays valid for
/// thread_local destructors that draw after the wipe below.
inline thread_local generator_state thread_state{};

/// Makes this thread's state current; registers its wipe at thread exit.
inline generator_state* attach_state() {
    struct wipe_at_exit {
        // Zeroed means "not seeded": a later draw (from another thread_local's
        // destructor) reseeds rather than reuse the wiped key.
        ~wipe_at_exit() { chacha20::secure_zero(&thread_state, sizeof thread_state); }
    };
    static thread_local wipe_at_exit wipe;
    (void)wipe;
    current_state = &thread_state;
    return current_state;
}

#else

[[nodiscard]] inline std::size_t state_mapping_size() noexcept {
    const long page = ::sysconf(_SC_PAGESIZE);
    const std::size_t page_size = page > 0 ? static_cast<std::size_t>(page) : 4096;
    return (sizeof(generator_state) + page_size - 1) / page_size * page_size;
}

inline void release_state(void* state) noexcept {
    if (state == current_state) current_state = nullptr;
    ::munmap(state, state_mapping_size());
}

/// Process-wide set-up, once: the fork handler and the thread-exit key.
[[nodiscard]] inline ::pthread_key_t state_key() {
    static const ::pthread_key_t key = [] {
        watch_forks();
        ::pthread_key_t k{};
        if (const int rc = ::pthread_key_create(&k, &release_state); rc != 0)
            throw std::system_error(rc, std::generic_category(), "resil: pthread_key_create failed");
        return k;
    }();
    return key;
}

/// Maps this thread's state page (zeroed: "not seeded").
inline generator_state* attach_state() {
    const ::pthread_key_t key = state_key();
    const std::size_t length = state_mapping_size();
    void* page = ::mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (page == MAP_FAILED) throw std::system_error(errno, std::generic_category(), "resil: cannot map the CSPRNG state");
    bool wipes = false;
#ifdef MADV_WIPEONFORK
    wipes = ::madvise(page, length, MADV_WIPEONFORK) == 0;  // EINVAL before Linux 4.14: the epoch still guards
#endif
#ifdef MADV_DONTDUMP
    (void)::madvise(page, length, MADV_DONTDUMP);  // keep key material out of core dumps
#endif
    if (const int rc = ::pthread_setspecific(key, page); rc != 0) {
        ::munmap(page, length);
        throw std::system_error(rc, std::generic_category(), "resil: pthread_setspecific failed");
    }
    current_state_wipes_on_fork = wipes;
    current_state = ::new (page) generator_state{};
    return current_state;
}

#endif  // RESIL_DETAIL_OS_WINDOWS

/// The slow path of every draw: first use on a thread, first use after a
/// fork, or an exhausted batch. Reseeds from the OS when due, then computes the
/// next batch and erases the key that produced it.
[[gnu::noinline]] inline generator_state& refill() {
    generator_state* state = current_state != nullptr ? current_state : attach_state();
    const std::uint64_t epoch = fork_epoch.load(std::memory_order_relaxed);
    if (state->epoch != epoch || state->batches_left == 0) {
        std::array<std::uint8_t, chacha20::key_size> seed{};
        os_entropy(seed.data(), seed.size());
        state->key = chacha20::load_key(seed.data());
        chacha20::secure_zero(seed.data(), seed.size());
        state->epoch = epoch;
        state->batches_left = reseed_after_batches;
    }
    // A fresh key per batch, so counter 0 and a zero nonce never repeat a stream.
    chacha20::blocks<batch_blocks>(state->key, 0, chacha20::nonce_words{}, state->buffer.data());
    state->key = chacha20::load_key(state->buffer.data());
    chacha20::secure_zero(state->buffer.data(), chacha20::key_size);
    state->position = output_begin;
    --state->batches_left;
    return *state;
}

/// Writes 16 unpredictable bytes to `out`. Thread-safe (per-thread state, no
/// lock); fork-safe; throws std::system_error only when the OS gives no
/// entropy (at a thread's first draw, after a fork, or at a periodic reseed).
inline void fill16(std::uint8_t* out) {
    constexpr std::uint32_t n = 16;
    generator_state* state = current_state;
    if (state == nullptr || state->position > batch_size - n ||
        state->epoch != fork_epoch.load(std::memory_order_relaxed)) [[unlikely]]
        state = &refill();
    std::uint8_t* bytes = state->buffer.data() + state->position;
    std::memcpy(out, bytes, n);
    std::memset(bytes, 0, n);  // handed out once, then gone from the state
    state->position += n;
}

}  // namespace resil::detail::csprng
