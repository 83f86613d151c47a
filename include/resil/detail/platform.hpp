// resil/detail/platform.hpp — what the operating system offers, decided in one
// place. Every header that calls the OS directly tests these macros (each is
// defined as 0 or 1), never the compiler's platform macros itself.
//
//   #include "platform.hpp"
//   #if RESIL_DETAIL_HAVE_GETRANDOM
//   ...
//
// Supported: Windows (MSVC, clang-cl, MinGW-w64), and POSIX systems (Linux,
// macOS, the BSDs). Only the CSPRNG (detail/csprng.hpp, behind
// resil/idempotency_key.hpp and the default jitter engine) and
// resil/coarse_clock.hpp call the OS; every other header is standard C++.
#pragma once

#if defined(_WIN32)
#define RESIL_DETAIL_OS_WINDOWS 1
#define RESIL_DETAIL_OS_POSIX 0
#elif defined(__unix__) || defined(__unix) || (defined(__APPLE__) && defined(__MACH__))
#define RESIL_DETAIL_OS_WINDOWS 0
#define RESIL_DETAIL_OS_POSIX 1
#else
#error "resil supports Windows and POSIX systems (Linux, macOS, the BSDs)"
#endif

#if defined(__linux__)
#define RESIL_DETAIL_OS_LINUX 1
#else
#define RESIL_DETAIL_OS_LINUX 0
#endif

// Entropy, in the order the CSPRNG prefers them:
// - BCryptGenRandom on Windows (links bcrypt.lib; resil::resil's CMake target
//   adds it, and MSVC-style compilers pick it up from a #pragma);
// - getrandom(2) on Linux (falling back to /dev/urandom on kernels before
//   3.17 or under a seccomp filter that refuses it);
// - arc4random_buf(3) on macOS and the BSDs (never fails, never blocks once
//   seeded). glibc >= 2.36 has it too, but on Linux getrandom is the primary;
// - /dev/urandom on any other POSIX system.
#if RESIL_DETAIL_OS_LINUX && defined(__has_include)
#if __has_include(<sys/random.h>)
#define RESIL_DETAIL_HAVE_GETRANDOM 1
#endif
#endif
#ifndef RESIL_DETAIL_HAVE_GETRANDOM
#define RESIL_DETAIL_HAVE_GETRANDOM 0
#endif

#if (defined(__APPLE__) && defined(__MACH__)) || defined(__FreeBSD__) || defined(__OpenBSD__) || \
    defined(__NetBSD__) || defined(__DragonFly__)
#define RESIL_DETAIL_HAVE_ARC4RANDOM 1
#else
#define RESIL_DETAIL_HAVE_ARC4RANDOM 0
#endif

// Fork safety is a POSIX matter (RESIL_DETAIL_OS_POSIX): there the CSPRNG
// keeps its state in an mmap'ed page (wiped in the child where
// MADV_WIPEONFORK exists: Linux >= 4.14) and registers a pthread_atfork child
// handler; Windows has no fork, and the state is a plain thread_local.

// A coarse monotonic clock (CLOCK_MONOTONIC_COARSE) exists on Linux only;
// resil/coarse_clock.hpp is resil::steady_clock elsewhere.
#define RESIL_DETAIL_HAVE_COARSE_MONOTONIC RESIL_DETAIL_OS_LINUX

// Error and other rare paths: kept out of line and marked cold, so that a
// header-only library does not inline its message building into every
// caller (the compiler emits and optimizes it once per translation unit,
// for size, and lays it out away from the hot code). GCC, Clang, MinGW and
// clang-cl take the GNU attributes; MSVC has noinline only.
//
//   [[noreturn]] RESIL_DETAIL_COLD inline void throw_bad_url(std::string_view url);
//
// RESIL_DETAIL_ALWAYS_INLINE is for a decision core whose answer carries
// more than most callers read (a rate limiter's `remaining` and `reset`):
// inlined, the arithmetic of what a caller ignores is dropped.
#if defined(__GNUC__) || defined(__clang__)
#define RESIL_DETAIL_COLD __attribute__((noinline, cold))
#define RESIL_DETAIL_NOINLINE __attribute__((noinline))
#define RESIL_DETAIL_ALWAYS_INLINE __attribute__((always_inline))
#elif defined(_MSC_VER)
#define RESIL_DETAIL_COLD __declspec(noinline)
#define RESIL_DETAIL_NOINLINE __declspec(noinline)
#define RESIL_DETAIL_ALWAYS_INLINE __forceinline
#else
#define RESIL_DETAIL_COLD
#define RESIL_DETAIL_NOINLINE
#define RESIL_DETAIL_ALWAYS_INLINE
#endif

// Header-only by default: every function is inline and compiled in each
// translation unit that calls it. A program that defines
// RESIL_SEPARATE_COMPILATION (for every translation unit, e.g. with
// target_compile_definitions) compiles the heavy non-template functions, and
// the steady-clock instantiations of the clock templates, once: in the one
// translation unit that includes <resil/separate_compilation.hpp>; the others
// see declarations only (docs/compile_time.md).
//
//   RESIL_DECL validation_result validate() const;   // in the class
//   #if RESIL_DETAIL_BODIES
//   RESIL_DECL validation_result retry_options::validate() const { ... }
//   #endif
#if defined(RESIL_SEPARATE_COMPILATION)
#define RESIL_DECL
#if defined(RESIL_DETAIL_SOURCE)
#define RESIL_DETAIL_BODIES 1
#define RESIL_DETAIL_EXTERN_TEMPLATES 0
#else
#define RESIL_DETAIL_BODIES 0
#define RESIL_DETAIL_EXTERN_TEMPLATES 1
#endif
#else
#define RESIL_DECL inline
#define RESIL_DETAIL_BODIES 1
#define RESIL_DETAIL_EXTERN_TEMPLATES 0
#endif
