// A shared library built the way many are (-fvisibility=hidden
// -fvisibility-inlines-hidden) that uses resil's stripes: built twice, as two
// libraries, by tests/CMakeLists.txt. RESIL_TEST_LIBRARY names its functions.
#include <resil/detail/stripes.hpp>

#include <cstdint>

#define RESIL_TEST_CAT2(a, b) a##b
#define RESIL_TEST_CAT(a, b) RESIL_TEST_CAT2(a, b)

extern "C" [[gnu::visibility("default")]] const void* RESIL_TEST_CAT(RESIL_TEST_LIBRARY, _stripe_table)() {
    return &resil::detail::stripe_index_users;
}

// Claims (if not yet) and returns the calling thread's stripe word, as this
// library's copy of the code sees it.
extern "C" [[gnu::visibility("default")]] std::uint32_t RESIL_TEST_CAT(RESIL_TEST_LIBRARY, _stripe_word)() {
    return resil::detail::this_thread_stripe_claim();
}
