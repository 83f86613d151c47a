// Pipeline helpers for the HTTP tests: a listener counting attempts as the
// pipeline reports them, and retries quick enough for a test.
#pragma once

#include <resil/backoff.hpp>
#include <resil/events.hpp>
#include <resil/retry.hpp>

#include <atomic>
#include <chrono>

namespace resil_test {

struct attempt_counter {
    std::atomic<int>* started;
    void operator()(const resil::events::attempt_started&) const { started->fetch_add(1); }
};

// The tests are about what is retried, not how long it waits.
inline const resil::retry_options quick_retries{
    .max_attempts = 3, .backoff = resil::full_jitter{std::chrono::milliseconds{1}, std::chrono::milliseconds{5}}};

}  // namespace resil_test
