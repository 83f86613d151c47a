// resil/http/detail/client_pool.hpp — the libcurl clients the blocking faces
// of resil::http::client and resil::http::dependency lend their calls: one
// per call in flight (a libcurl easy handle serves one transfer at a time),
// kept afterwards with its connections for the next call.
#pragma once

#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "../../curl/client.hpp"
#include "../../curl/options.hpp"

namespace resil::http::detail {

class client_pool {
public:
    /// A client borrowed for one call; goes back to the pool when destroyed.
    class loan {
    public:
        loan(client_pool& pool, std::unique_ptr<curl::client> c) noexcept : pool_(pool), client_(std::move(c)) {}
        loan(const loan&) = delete;
        loan& operator=(const loan&) = delete;
        ~loan() { pool_.give_back(std::move(client_)); }
        curl::client* operator->() const noexcept { return client_.get(); }

    private:
        client_pool& pool_;
        std::unique_ptr<curl::client> client_;
    };

    /// Makes the first client now, so that libcurl's refusals of the
    /// options (an HTTP version it lacks, ...) surface at construction.
    void open(curl::client_options options) {
        options_ = std::move(options);
        idle_.push_back(std::make_unique<curl::client>(options_));
    }
    [[nodiscard]] const curl::client_options& options() const noexcept { return options_; }

    /// An idle client, or a new one when every client is lent.
    [[nodiscard]] loan borrow() {
        {
            const std::lock_guard lock(mutex_);
            if (!idle_.empty()) {
                auto c = std::move(idle_.back());
                idle_.pop_back();
                return loan(*this, std::move(c));
            }
        }
        return loan(*this, std::make_unique<curl::client>(options_));
    }

private:
    void give_back(std::unique_ptr<curl::client> c) noexcept {
        const std::lock_guard lock(mutex_);
        try {
            idle_.push_back(std::move(c));
        } catch (...) {  // no room to keep it: it closes its connections
        }
    }

    curl::client_options options_;
    std::mutex mutex_;
    std::vector<std::unique_ptr<curl::client>> idle_;
};

}  // namespace resil::http::detail
