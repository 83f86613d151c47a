// Idempotency keys: resil's v4 and v7 (per-thread ChaCha20, fast key erasure)
// side by side with libuuid and Boost.Uuid, which ask the kernel for every
// random UUID (getrandom(2)) or, for libuuid's time-based ones, keep a clock
// state of their own. The "_text" groups generate and format the
// 36-character text; the others only generate.
//
// Names follow bench/README.md: <group>/resil_<variant> and
// <group>/baseline_<what>, compared within a group.
#include "bench_support.hpp"

#include <resil/idempotency_key.hpp>

#include <array>

#if RESIL_BENCH_HAVE_LIBUUID
#include <uuid/uuid.h>
#endif
#if RESIL_BENCH_HAVE_BOOST
#include <boost/uuid/uuid_generators.hpp>
#include <boost/uuid/uuid_io.hpp>
#endif

// ------------------------------------------------------------------ resil

static void resil_v4(benchmark::State& state) {
    const auto before = resil_bench::allocations.load();
    for (auto _ : state) benchmark::DoNotOptimize(resil::idempotency_key::v4());
    resil_bench::report_allocations(state, before);
}
BENCHMARK(resil_v4)->Name("v4/resil")->Threads(1)->Threads(2);

static void resil_v7(benchmark::State& state) {
    const auto before = resil_bench::allocations.load();
    for (auto _ : state) benchmark::DoNotOptimize(resil::idempotency_key::v7());
    resil_bench::report_allocations(state, before);
}
// With 2 threads both CAS the one v7 stamp word.
BENCHMARK(resil_v7)->Name("v7/resil")->Threads(1)->Threads(2);

static void resil_v4_text(benchmark::State& state) {
    const auto before = resil_bench::allocations.load();
    for (auto _ : state) {
        const auto text = resil::idempotency_key::v4().text();
        benchmark::DoNotOptimize(text);
    }
    resil_bench::report_allocations(state, before);
}
BENCHMARK(resil_v4_text)->Name("v4_text/resil");

static void resil_v7_text(benchmark::State& state) {
    const auto before = resil_bench::allocations.load();
    for (auto _ : state) {
        const auto text = resil::idempotency_key::v7().text();
        benchmark::DoNotOptimize(text);
    }
    resil_bench::report_allocations(state, before);
}
BENCHMARK(resil_v7_text)->Name("v7_text/resil");

// The parse a server runs on every incoming Idempotency-Key header.
static void resil_parse(benchmark::State& state) {
    const auto text = resil::idempotency_key::v4().text();
    const auto before = resil_bench::allocations.load();
    for (auto _ : state) {
        benchmark::DoNotOptimize(text);
        benchmark::DoNotOptimize(resil::idempotency_key::parse(text.view()));
    }
    resil_bench::report_allocations(state, before);
}
BENCHMARK(resil_parse)->Name("parse/resil");

// ---------------------------------------------------------------- libuuid

#if RESIL_BENCH_HAVE_LIBUUID
static void libuuid_generate_random(benchmark::State& state) {
    const auto before = resil_bench::allocations.load();
    uuid_t out;
    for (auto _ : state) {
        uuid_generate_random(out);
        benchmark::DoNotOptimize(out);
    }
    resil_bench::report_allocations(state, before);
}
BENCHMARK(libuuid_generate_random)->Name("v4/baseline_libuuid_random")->Threads(1)->Threads(2);

// libuuid's time-based UUIDs are v1, not v7: the nearest it has to a
// time-ordered key.
static void libuuid_generate_time(benchmark::State& state) {
    const auto before = resil_bench::allocations.load();
    uuid_t out;
    for (auto _ : state) {
        uuid_generate_time(out);
        benchmark::DoNotOptimize(out);
    }
    resil_bench::report_allocations(state, before);
}
BENCHMARK(libuuid_generate_time)->Name("v7/baseline_libuuid_time_v1")->Threads(1)->Threads(2);

static void libuuid_generate_random_text(benchmark::State& state) {
    const auto before = resil_bench::allocations.load();
    uuid_t out;
    std::array<char, 37> text{};
    for (auto _ : state) {
        uuid_generate_random(out);
        uuid_unparse_lower(out, text.data());
        benchmark::DoNotOptimize(text);
    }
    resil_bench::report_allocations(state, before);
}
BENCHMARK(libuuid_generate_random_text)->Name("v4_text/baseline_libuuid_random");

static void libuuid_generate_time_text(benchmark::State& state) {
    const auto before = resil_bench::allocations.load();
    uuid_t out;
    std::array<char, 37> text{};
    for (auto _ : state) {
        uuid_generate_time(out);
        uuid_unparse_lower(out, text.data());
        benchmark::DoNotOptimize(text);
    }
    resil_bench::report_allocations(state, before);
}
BENCHMARK(libuuid_generate_time_text)->Name("v7_text/baseline_libuuid_time_v1");

static void libuuid_parse(benchmark::State& state) {
    const auto text = resil::idempotency_key::v4().text();
    const auto before = resil_bench::allocations.load();
    uuid_t out;
    for (auto _ : state) {
        benchmark::DoNotOptimize(text);
        benchmark::DoNotOptimize(uuid_parse(text.c_str(), out));
        benchmark::DoNotOptimize(out);
    }
    resil_bench::report_allocations(state, before);
}
BENCHMARK(libuuid_parse)->Name("parse/baseline_libuuid");
#endif

// ------------------------------------------------------------------ Boost

#if RESIL_BENCH_HAVE_BOOST
static void boost_random_generator(benchmark::State& state) {
    boost::uuids::random_generator generate;  // getrandom(2) per UUID
    const auto before = resil_bench::allocations.load();
    for (auto _ : state) benchmark::DoNotOptimize(generate());
    resil_bench::report_allocations(state, before);
}
BENCHMARK(boost_random_generator)->Name("v4/baseline_boost_random_generator");

// Boost's own text conversion (1.74 has no allocation-free one).
static void boost_random_generator_to_string(benchmark::State& state) {
    boost::uuids::random_generator generate;
    const auto before = resil_bench::allocations.load();
    for (auto _ : state) benchmark::DoNotOptimize(boost::uuids::to_string(generate()));
    resil_bench::report_allocations(state, before);
}
BENCHMARK(boost_random_generator_to_string)->Name("v4_text/baseline_boost_to_string");

// Not a CSPRNG (a seeded mt19937: predictable from its output); the speed a
// cryptographically secure generator has to come close to.
static void boost_mt19937_generator_not_secure(benchmark::State& state) {
    boost::uuids::random_generator_mt19937 generate;
    const auto before = resil_bench::allocations.load();
    for (auto _ : state) benchmark::DoNotOptimize(generate());
    resil_bench::report_allocations(state, before);
}
BENCHMARK(boost_mt19937_generator_not_secure)->Name("v4/baseline_boost_mt19937_not_secure");
#endif

BENCHMARK_MAIN();
