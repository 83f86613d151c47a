// resil/resil.hpp — the whole core in one include: every policy and
// primitive that needs only the standard library. The integrations have their
// own headers and CMake targets: resil/curl.hpp (resil::curl),
// resil/json.hpp (resil::json), resil/fmt.hpp (resil::fmt).
#pragma once

#include "adaptive_limit.hpp"
#include "adaptive_throttle.hpp"
#include "any_pipeline.hpp"
#include "backoff.hpp"
#include "circuit_breaker.hpp"
#include "clock.hpp"
#include "coarse_clock.hpp"
#include "concurrency_limit.hpp"
#include "context.hpp"
#include "deadline.hpp"
#include "deadline_policy.hpp"
#include "events.hpp"
#include "fallback.hpp"
#include "idempotency_key.hpp"
#include "idempotency_key_type.hpp"
#include "load_signal.hpp"
#include "metrics.hpp"
#include "outcome.hpp"
#include "paced_bucket.hpp"
#include "pipeline.hpp"
#include "retry.hpp"
#include "retry_after.hpp"
#include "retry_budget.hpp"
#include "timeout_policy.hpp"
#include "timeouts.hpp"
#include "token_bucket.hpp"
#include "version.hpp"
