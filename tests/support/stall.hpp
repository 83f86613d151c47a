// Time in which the machine did not run the calling thread although it was
// ready: its wait on the kernel's run queue (/proc/thread-self/schedstat)
// plus the time the hypervisor took a virtual CPU away (steal, from
// /proc/stat: the largest increase of any one CPU, which is what the thread
// lost to it if it stayed on that CPU; one that moved may have lost more or
// less, so this is an estimate, and it only ever loosens a bound). A test that
// bounds how long a call waits takes this off the wall time it measured:
// the bound is on the call's own waiting, and a shared machine that stops
// the thread for a second is not a wait of the call. On a machine without
// these files both read zero and the wall time is judged as it is.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

namespace resil_test {

class stall_meter {
public:
    stall_meter() : queued_(run_queue_wait()), steal_(steal_per_cpu()) {}

    /// Stalled time since construction.
    [[nodiscard]] std::chrono::microseconds elapsed() const {
        std::chrono::nanoseconds stolen{};
        for (const auto& [cpu, steal] : steal_per_cpu())  // by number: an offline CPU has no line
            if (const auto before = steal_.find(cpu); before != steal_.end())
                stolen = std::max(stolen, steal - before->second);
        return std::chrono::duration_cast<std::chrono::microseconds>(run_queue_wait() - queued_ + stolen);
    }

private:
    static std::chrono::nanoseconds run_queue_wait() {
        std::ifstream in("/proc/thread-self/schedstat");
        std::uint64_t on_cpu = 0, waiting = 0;
        if (!(in >> on_cpu >> waiting)) return {};
        return std::chrono::nanoseconds{static_cast<std::int64_t>(waiting)};
    }

    // The "cpuN" lines: user nice system idle iowait irq softirq steal ...,
    // in clock ticks (USER_HZ).
    static std::map<int, std::chrono::nanoseconds> steal_per_cpu() {
        std::map<int, std::chrono::nanoseconds> out;
        const long hz = ::sysconf(_SC_CLK_TCK);
        if (hz <= 0) return out;
        std::ifstream in("/proc/stat");
        std::string line;
        while (std::getline(in, line)) {
            if (line.rfind("cpu", 0) != 0) break;  // the cpu lines come first
            if (line.size() < 4 || line[3] == ' ') continue;  // the total
            std::istringstream fields(line.substr(3));
            int cpu = 0;
            std::uint64_t v[8] = {};
            fields >> cpu;
            for (auto& x : v) fields >> x;
            if (!fields) continue;  // a line without steal: that CPU counts none
            out[cpu] = std::chrono::nanoseconds{static_cast<std::int64_t>(v[7] * (1'000'000'000 / static_cast<std::uint64_t>(hz)))};
        }
        return out;
    }

    std::chrono::nanoseconds queued_;
    std::map<int, std::chrono::nanoseconds> steal_;
};

}  // namespace resil_test
