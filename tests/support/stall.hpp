// Time in which the machine did not run the calling thread although it was
// ready: its wait on the kernel's run queue (/proc/thread-self/schedstat)
// plus the time the hypervisor took the virtual CPUs away (steal, summed
// over every CPU in /proc/stat). A test that bounds how long a call waits
// takes this off the wall time it measured: the bound is on the call's own
// waiting, and a shared machine that stops the thread for a second is not a
// wait of the call. On a machine without these files both read zero and the
// wall time is judged as it is.
#pragma once

#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>

namespace resil_test {

class stall_meter {
public:
    stall_meter() noexcept : at_start_(now()) {}

    /// Stalled time since construction (or the last restart()).
    [[nodiscard]] std::chrono::microseconds elapsed() const {
        return std::chrono::duration_cast<std::chrono::microseconds>(now() - at_start_);
    }
    void restart() { at_start_ = now(); }

private:
    static std::chrono::nanoseconds now() { return run_queue_wait() + steal(); }

    static std::chrono::nanoseconds run_queue_wait() {
        std::ifstream in("/proc/thread-self/schedstat");
        std::uint64_t on_cpu = 0, waiting = 0;
        if (!(in >> on_cpu >> waiting)) return {};
        return std::chrono::nanoseconds{static_cast<std::int64_t>(waiting)};
    }

    // The "cpu" line: user nice system idle iowait irq softirq steal ..., in
    // clock ticks (USER_HZ).
    static std::chrono::nanoseconds steal() {
        std::ifstream in("/proc/stat");
        std::string line;
        if (!std::getline(in, line) || line.rfind("cpu ", 0) != 0) return {};
        std::istringstream fields(line.substr(4));
        std::uint64_t v[8] = {};
        for (auto& x : v)
            if (!(fields >> x)) return {};
        const long hz = ::sysconf(_SC_CLK_TCK);
        if (hz <= 0) return {};
        return std::chrono::nanoseconds{static_cast<std::int64_t>(v[7] * (1'000'000'000 / static_cast<std::uint64_t>(hz)))};
    }

    std::chrono::nanoseconds at_start_;
};

}  // namespace resil_test
