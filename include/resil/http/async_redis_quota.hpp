// resil/http/async_redis_quota.hpp — the quota shared through Redis on the
// Asio face of a resil::http::dependency: included once in a program whose
// dependencies set dependency_options::shared_quota and are used through
// async_dependency (dependency.on(io)). Needs resil::redis and resil::asio
// (and resil::curl, as the face does).
//
//   #include <resil/http/async_dependency.hpp>
//   #include <resil/http/async_redis_quota.hpp>    // includes redis_quota.hpp too
//
//   resil::http::dependency pricing{options};       // options.shared_quota set
//   auto face = pricing.on(io);                     // asks Redis without blocking
//
// Each face asks through a resil::redis::async_rate_limiter of its own, on
// the face's executor, deciding for the dependency's rate_limiter
// (resil/http/redis_quota.hpp): the same key in Redis, the same lease,
// fallback bucket, backoff and counters as the blocking calls, so both
// faces (and every process naming the key) share one quota, with the same
// reasons and events. The round trip is awaited as the limiter's own layer
// of resil::asio::pipeline awaits it, in the "quota" layer of the
// asynchronous pipeline. Registered as redis_quota.hpp registers (a
// factory set during static initialisation); a face of a dependency with a
// shared quota in a program without this header throws
// std::invalid_argument saying to include it.
//
// With RESIL_SEPARATE_COMPILATION, this header declares the registration
// only: include it in the program's one source file too, after
// <resil/curl_asio/separate_compilation.hpp>, where the quota's Asio side is
// compiled (docs/compile_time.md).
#pragma once

#include "../detail/platform.hpp"
#include "async_dependency.hpp"
#include "redis_quota.hpp"

namespace resil::http::detail {

/// Sets async_shared_quota_maker() to the Redis quota's Asio face; true.
RESIL_DECL bool register_async_redis_quota() noexcept;

/// Registers the factory once per program.
inline const bool async_redis_quota_registered = register_async_redis_quota();

}  // namespace resil::http::detail

#if RESIL_DETAIL_BODIES
#include "detail/async_redis_quota_impl.hpp"
#endif
