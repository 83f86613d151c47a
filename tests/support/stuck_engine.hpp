// An engine stuck at one output: the extremes that code turning engine bits
// into numbers (unit_interval, the backoff strategies) must survive.
#pragma once

#include <cstdint>
#include <limits>

namespace resil_test {

template <class UInt, UInt Lowest, UInt Highest>
struct stuck_engine {
    using result_type = UInt;
    UInt value;
    int calls = 0;
    static constexpr UInt min() { return Lowest; }
    static constexpr UInt max() { return Highest; }
    UInt operator()() {
        ++calls;
        return value;
    }
};
using stuck64 = stuck_engine<std::uint64_t, 0, std::numeric_limits<std::uint64_t>::max()>;
using stuck32 = stuck_engine<std::uint32_t, 0, std::numeric_limits<std::uint32_t>::max()>;
using stuck_minstd = stuck_engine<std::uint32_t, 1, 2147483646>;  // minstd_rand's range: not a power of two

}  // namespace resil_test
