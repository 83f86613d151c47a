// What a user writes without resil: a libcurl GET with a connect and a total
// timeout, retried up to three times with full-jitter exponential backoff
// under one overall deadline. The baseline scripts/compile_time.sh compares
// resil's translation units with.
#include <curl/curl.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <random>
#include <string>
#include <thread>

namespace {

std::size_t append_body(char* data, std::size_t size, std::size_t count, void* user) {
    static_cast<std::string*>(user)->append(data, size * count);
    return size * count;
}

bool retryable(CURLcode rc, long status) {
    if (rc == CURLE_COULDNT_CONNECT || rc == CURLE_OPERATION_TIMEDOUT || rc == CURLE_COULDNT_RESOLVE_HOST) return true;
    return rc == CURLE_OK && (status == 429 || status == 502 || status == 503 || status == 504);
}

}  // namespace

std::optional<std::string> fetch_catalog(const std::string& url) {
    using namespace std::chrono;
    const auto deadline = steady_clock::now() + milliseconds{250};
    thread_local std::mt19937_64 rng{std::random_device{}()};
    CURL* easy = curl_easy_init();
    if (easy == nullptr) return std::nullopt;
    std::optional<std::string> result;
    milliseconds backoff{100};
    for (int attempt = 1; attempt <= 3; ++attempt) {
        const auto left = duration_cast<milliseconds>(deadline - steady_clock::now());
        if (left <= milliseconds{0}) break;
        std::string body;
        curl_easy_setopt(easy, CURLOPT_URL, url.c_str());
        curl_easy_setopt(easy, CURLOPT_CONNECTTIMEOUT_MS, 20L);
        curl_easy_setopt(easy, CURLOPT_TIMEOUT_MS, static_cast<long>(std::min(left, milliseconds{150}).count()));
        curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, append_body);
        curl_easy_setopt(easy, CURLOPT_WRITEDATA, &body);
        const CURLcode rc = curl_easy_perform(easy);
        long status = 0;
        curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
        if (rc == CURLE_OK && status < 500 && status != 429) {
            result = std::move(body);
            break;
        }
        if (!retryable(rc, status) || attempt == 3) break;
        std::uniform_int_distribution<long long> jitter{0, backoff.count()};
        const milliseconds wait{jitter(rng)};
        if (steady_clock::now() + wait >= deadline) break;
        std::this_thread::sleep_for(wait);
        backoff = std::min(backoff * 2, milliseconds{1000});
    }
    curl_easy_cleanup(easy);
    return result;
}
