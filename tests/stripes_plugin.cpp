// A plugin loaded with dlopen() by a program that exports nothing keeps a
// stripe index table of its own (tests/stripes_library/plugin.cpp): threads
// on either side may hold the same index alone, each in its own table, and
// detail::owned_stripes cells they both write must still count exactly.
#include <resil/detail/stripes.hpp>

#include <dlfcn.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <thread>

#include "catch.hpp"
#include "support/stripe_sharing.hpp"

TEST_CASE("stripes: a plugin with an index table of its own and the program write one owned cell exactly") {
    // This thread and a thread running the plugin's code both hold index 0
    // alone, each in its own table. Had both written cell 0 alone, their
    // plain stores would overwrite each other's counts.
    namespace d = resil::detail;
    const std::unique_ptr<void, int (*)(void*)> plugin{::dlopen(RESIL_TEST_PLUGIN_PATH, RTLD_NOW | RTLD_LOCAL),
                                                       ::dlclose};
    REQUIRE(plugin != nullptr);
    const auto table = reinterpret_cast<const void* (*)()>(::dlsym(plugin.get(), "resil_test_plugin_stripe_table"));
    const auto add = reinterpret_cast<void (*)(void*, std::uint64_t, const std::atomic<bool>*)>(
        ::dlsym(plugin.get(), "resil_test_plugin_add"));
    REQUIRE(table != nullptr);
    REQUIRE(add != nullptr);
    if (table() == static_cast<const void*>(&d::stripe_index_users)) {
        // A program built to export its symbols (-rdynamic) shares its table.
        WARN("the plugin shares this program's stripe index table: nothing to test");
        return;
    }
    REQUIRE(d::this_thread_stripe_claim() == 0);  // index 0 of this program's table, alone

    d::owned_stripes<std::atomic<std::uint64_t>> cells{1};
    constexpr std::uint64_t n = 5'000'000;
    std::atomic<bool> go{false};
    std::jthread other{[&] { add(&cells, n, &go); }};  // a fresh thread: index 0 of the plugin's table
    go = true;
    for (std::uint64_t i = 0; i < n; ++i) resil_test::add_one(cells);
    other.join();
    std::uint64_t total = 0;
    for (std::size_t i = 0; i < cells.size(); ++i) total += cells[i].load();
    CHECK(total == 2 * n);
}
