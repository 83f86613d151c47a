// A plugin loaded with dlopen() by tests/stripes_plugin.cpp, built
// with hidden visibility: the program exports nothing, so this copy of the
// stripes code keeps an index table of its own.
#include <resil/detail/stripes.hpp>

#include "support/stripe_sharing.hpp"

#include <atomic>
#include <cstdint>

extern "C" [[gnu::visibility("default")]] const void* resil_test_plugin_stripe_table() {
    return &resil::detail::stripe_index_users;
}

// Adds `n` to `cells` (an owned_stripes<std::atomic<std::uint64_t>> made by
// the program) the way resil's policies write such cells: a plain load and
// store when this thread is the cell's only writer, an atomic add otherwise.
extern "C" [[gnu::visibility("default")]] void resil_test_plugin_add(void* cells, std::uint64_t n,
                                                                   const std::atomic<bool>* go) {
    const auto& stripes = *static_cast<const resil::detail::owned_stripes<std::atomic<std::uint64_t>>*>(cells);
    while (!go->load()) {
    }
    for (std::uint64_t i = 0; i < n; ++i) resil_test::add_one(stripes);
}
