// Counts every allocation in a test or benchmark binary (replaces the global
// operator new), so tests can show that a call allocates nothing and
// benchmarks can report allocations per operation. Include from one
// translation unit per binary. ThreadSanitizer's runtime defines operator
// new itself: there nothing is replaced and `counting_allocations` is false.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>

#if defined(__SANITIZE_THREAD__)
#define RESIL_TEST_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define RESIL_TEST_TSAN 1
#endif
#endif

namespace resil_test {
inline std::atomic<std::uint64_t> allocations{0};
/// While true, every allocation throws std::bad_alloc (to show that code
/// survives running out of memory).
inline std::atomic<bool> refuse_allocations{false};
#ifdef RESIL_TEST_TSAN
inline constexpr bool counting_allocations = false;
#else
inline constexpr bool counting_allocations = true;
#endif
}  // namespace resil_test

#ifndef RESIL_TEST_TSAN
// g++ flags free() in a replaced operator delete as mismatched; here it is
// the matching malloc by design.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif
void* operator new(std::size_t n) {
    resil_test::allocations.fetch_add(1, std::memory_order_relaxed);
    if (resil_test::refuse_allocations.load(std::memory_order_relaxed)) throw std::bad_alloc{};
    if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
    throw std::bad_alloc{};
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
    try {
        return ::operator new(n);
    } catch (...) {
        return nullptr;
    }
}
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void* operator new[](std::size_t n) { return ::operator new(n); }
void* operator new[](std::size_t n, const std::nothrow_t& t) noexcept { return ::operator new(n, t); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
#endif
