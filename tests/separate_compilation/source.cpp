// The one translation unit of a separate-compilation program
// (RESIL_SEPARATE_COMPILATION, docs/compile_time.md): resil's out-of-line
// functions are compiled here, once, and every test file linked with it sees
// their declarations only.
#include <resil/separate_compilation.hpp>
#if RESIL_TEST_WITH_CURL
#include <resil/curl/separate_compilation.hpp>
#endif
#if RESIL_TEST_WITH_JSON
#include <resil/json/separate_compilation.hpp>
#endif
#if RESIL_TEST_WITH_CURL && RESIL_TEST_WITH_JSON
#include <resil/http/separate_compilation.hpp>  // resil::http::load_client
#endif
#if RESIL_TEST_WITH_REDIS
#include <resil/redis/separate_compilation.hpp>  // the blocking limiter's decision
#endif
#if RESIL_TEST_WITH_CURL && RESIL_TEST_WITH_REDIS
#include <resil/http/redis_separate_compilation.hpp>  // a dependency's Redis quota
#endif
#if RESIL_TEST_WITH_ASIO
#include <resil/curl_asio/separate_compilation.hpp>  // resil::http::dependency's Asio face
#endif
#if RESIL_TEST_WITH_ASIO && RESIL_TEST_WITH_REDIS
#include <resil/http/async_redis_quota.hpp>  // its Redis quota on Asio
#endif
