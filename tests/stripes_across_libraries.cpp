// The stripe index table across copies of resil's code: the program and the
// libraries linked to it share one, also when those libraries hide their
// symbols by default (tests/stripes_plugin.cpp: a plugin that does not).
#include <resil/detail/stripes.hpp>

#include <cstdint>
#include <latch>
#include <thread>
#include <vector>

#include "catch.hpp"

extern "C" const void* resil_test_stripes_a_stripe_table();
extern "C" const void* resil_test_stripes_b_stripe_table();
extern "C" std::uint32_t resil_test_stripes_a_stripe_word();
extern "C" std::uint32_t resil_test_stripes_b_stripe_word();

TEST_CASE("stripes: the program and libraries built with hidden visibility share one index table") {
    const void* here = &resil::detail::stripe_index_users;
    CHECK(resil_test_stripes_a_stripe_table() == here);
    CHECK(resil_test_stripes_b_stripe_table() == here);
}

TEST_CASE("stripes: threads claiming through different libraries never hold one index alone together") {
    // Each thread claims through one of three copies of the code (the
    // program, library a, library b); all stay alive together, so no index
    // may be held alone by two of them.
    namespace d = resil::detail;
    constexpr int threads = 3 * 20;
    std::vector<std::uint32_t> words(threads);
    std::latch claimed{threads};
    {
        std::vector<std::jthread> pool;
        for (int i = 0; i < threads; ++i)
            pool.emplace_back([&, i] {
                switch (i % 3) {
                    case 0: words[static_cast<std::size_t>(i)] = d::this_thread_stripe_claim(); break;
                    case 1: words[static_cast<std::size_t>(i)] = resil_test_stripes_a_stripe_word(); break;
                    default: words[static_cast<std::size_t>(i)] = resil_test_stripes_b_stripe_word(); break;
                }
                claimed.arrive_and_wait();
            });
    }
    std::vector<int> alone(d::max_stripes, 0);
    for (const auto w : words)
        if ((w & d::shared_stripe_bit) == 0) ++alone[w];
    for (const auto n : alone) CHECK(n <= 1);
    int held_alone = 0;
    for (const auto n : alone) held_alone += n;
    CHECK(held_alone >= threads - 1);  // this thread may hold one index
}
