// A payment-style POST: a "refund order" tool that an orchestrator calls with
// a 5 s timeout and may retry. Refunding is not idempotent — a repeat pays
// out twice — so each refund carries an idempotency key: made once, when the
// refund is decided, and sent unchanged on every attempt.
//
//   $ ./example_payment_post
//
// The ambiguous timeout. When a POST times out, the caller cannot tell which
// of three things happened:
//   1. the request never arrived;
//   2. it arrived and the server is still working on it;
//   3. the server did it, and the response was lost on the way back.
// All three look the same: silence. Retrying is harmless in case 1 and pays
// twice in case 3. resil therefore judges a timeout `ambiguous` and retries
// it only when the operation is idempotent or carries a key (the retry policy
// gives up with reason::unsafe_to_retry otherwise). With a key, the server
// remembers each key and its response: the same key gets the same answer and
// no second refund; a retry arriving while the first attempt is still running
// gets 409 (try again shortly); the same key with a different amount is a bug
// in the client, answered 422 rather than hidden.
//
// Everything runs on resil's manual clock with a simulated server and
// network, and a fixed jitter seed, so the output is the same on every run.
// Keys are random UUIDs; they are printed as K1, K2, ... in the order the
// server first sees them. What the reader should see:
//   1. a hand-written retry loop without a key: the response of the first
//      attempt is lost, it sends again, and order 1041 is refunded twice.
//   2. resil without a key: the timeout is not retried (unsafe_to_retry) after
//      2 s; order 1042 is refunded once, but the caller does not know it.
//   3. resil with a key, the response lost: retried after a jittered wait
//      (17 ms, drawn from [0, 200 ms)); the server replays refund #4; order
//      1043 is refunded once; done after 2 s + 17 ms + 50 ms = 2.067 s.
//   4. resil with a key, the server slow (2.5 s): the retry at 2.076 s finds
//      the first attempt still running (409, Retry-After 1 s, which beats the
//      jitter); the third attempt, at 3.126 s, gets the stored answer: order
//      1044 is refunded once, after 3.176 s — inside the 5 s deadline.
//   5. the key of refund 3 reused with another amount: 422, not retried.
//   the ledger: 5 refunds (1041 twice, then 1042, 1043, 1044 once each).
#include <resil/backoff.hpp>
#include <resil/context.hpp>
#include <resil/deadline_policy.hpp>
#include <resil/events.hpp>
#include <resil/idempotency_key.hpp>
#include <resil/outcome.hpp>
#include <resil/pipeline.hpp>
#include <resil/retry.hpp>
#include <resil/testing/manual_clock.hpp>
#include <resil/timeout_policy.hpp>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

using namespace std::chrono_literals;

namespace {

using clock_type = resil::testing::manual_clock;

struct refund_request {
    int order = 0;
    std::int64_t cents = 0;
    std::optional<resil::idempotency_key> key;  // the Idempotency-Key header, if any
};

struct refund_response {
    int status = 0;  // 0: no response before the timeout
    int refund_id = 0;
    std::optional<std::chrono::seconds> retry_after;
};

std::string euros(std::int64_t cents) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%lld.%02lld EUR", static_cast<long long>(cents / 100),
                  static_cast<long long>(cents % 100));
    return buf;
}

// The payment service, simulated. It stores each key *before* paying, marked
// "in progress" (in a real service: a unique index, so two copies of one
// request cannot both insert it), and its response once done. Keys are kept
// as long as retries may come, with a margin: hours or days (Stripe keeps
// them at least 24 hours).
class payment_server {
public:
    explicit payment_server(clock_type clock) : clock_(std::move(clock)) {}

    /// How long the next refund takes to process (the server is sometimes slow).
    void set_processing_time(resil::duration d) { processing_ = d; }

    /// What the server answers, and how long it takes to answer.
    struct reply {
        refund_response response;
        resil::duration takes = 50ms;
    };

    reply handle(const refund_request& r) {
        settle();
        if (r.key) {
            if (const auto it = keys_.find(*r.key); it != keys_.end()) {
                const auto& seen = it->second;
                if (seen.order != r.order || seen.cents != r.cents) {
                    log("%s reused for %s (it was %s): 422, refunds nothing", label(*r.key).c_str(),
                        euros(r.cents).c_str(), euros(seen.cents).c_str());
                    return {{422, 0, std::nullopt}};
                }
                if (seen.done_at > clock_.now()) {
                    log("%s still in progress: 409, Retry-After 1 s", label(*r.key).c_str());
                    return {{409, 0, 1s}};
                }
                log("%s seen before: replays refund #%d, refunds nothing", label(*r.key).c_str(), seen.refund_id);
                return {{200, seen.refund_id, std::nullopt}};
            }
        }
        const int id = next_id_++;
        const auto done_at = clock_.now() + processing_;
        pending_.push_back({id, r.order, r.cents, r.key ? label(*r.key) : "no key", done_at});
        if (r.key) keys_.emplace(*r.key, stored{r.order, r.cents, id, done_at});
        log("refunds %s for order %d as refund #%d (%s)", euros(r.cents).c_str(), r.order, id,
            r.key ? label(*r.key).c_str() : "no key");
        return {{200, id, std::nullopt}, processing_};
    }

    /// The money that actually went out.
    void print_ledger() {
        settle();
        std::puts("\nthe payment server's ledger:");
        std::int64_t total = 0;
        for (const auto& e : ledger_) {
            std::printf("  refund #%d  order %d  %s  %s\n", e.id, e.order, euros(e.cents).c_str(), e.key.c_str());
            total += e.cents;
        }
        std::printf("  %zu refunds, %s paid out\n", ledger_.size(), euros(total).c_str());
    }

    /// The name a key is printed with: keys are random, their order is not.
    std::string label(const resil::idempotency_key& k) {
        // Appended rather than "K" + std::to_string(...): g++ 12 at -O3 warns
        // falsely (-Wrestrict) on that operator+, which inserts at the front.
        std::string name = "K";
        name += std::to_string(labels_.size() + 1);
        auto [it, added] = labels_.try_emplace(k, std::move(name));
        return it->second;
    }

private:
    struct stored {
        int order;
        std::int64_t cents;
        int refund_id;
        resil::time_point done_at;
    };
    struct entry {
        int id;
        int order;
        std::int64_t cents;
        std::string key;
        resil::time_point done_at;
    };

    // Refunds whose processing has finished reach the ledger.
    void settle() {
        for (auto it = pending_.begin(); it != pending_.end();) {
            if (it->done_at <= clock_.now()) {
                ledger_.push_back(*it);
                it = pending_.erase(it);
            } else {
                ++it;
            }
        }
    }

    template <class... Args>
    void log(const char* format, Args... args) const {
        std::printf("      server: ");
        std::printf(format, args...);
        std::puts("");
    }

    clock_type clock_;
    resil::duration processing_ = 50ms;
    int next_id_ = 1;
    std::unordered_map<resil::idempotency_key, stored> keys_;
    std::map<resil::idempotency_key, std::string> labels_;
    std::vector<entry> pending_;
    std::vector<entry> ledger_;
};

// The network between the tool and the payment service, simulated: it can
// lose the next response, after the server has acted on the request.
struct network {
    clock_type clock;
    payment_server* server;
    int responses_to_lose = 0;

    // One attempt with a total timeout of `cap`: the request reaches the
    // server, and its answer comes back when the server is done, or never
    // (lost); the caller stops waiting at its cap either way.
    refund_response post(const refund_request& r, std::chrono::milliseconds cap) {
        const auto [response, takes] = server->handle(r);
        const bool lost = responses_to_lose > 0 && response.status == 200;
        if (lost) --responses_to_lose;
        if (lost || takes > cap) {
            if (lost) std::puts("      network: the response is lost on the way back");
            clock.advance(cap);
            std::printf("      client: no response within %lld ms\n", static_cast<long long>(cap.count()));
            return {};
        }
        clock.advance(takes);
        std::printf("      client: %d after %lld ms\n", response.status,
                    static_cast<long long>(std::chrono::round<std::chrono::milliseconds>(takes).count()));
        return response;
    }
};

// How one attempt went, for the retry policy. A timeout is ambiguous: the
// refund may have happened. 409 (the key's first use still in progress) is
// retryable for a keyed request: the server did not act on this copy.
resil::classification classify_refund(const refund_response& r) {
    if (r.status == 0) return resil::verdict::ambiguous;
    if (r.status >= 200 && r.status < 300) return resil::verdict::success;
    if (r.status == 409 || r.status == 429 || r.status == 503)
        return {resil::verdict::retryable, resil::server_hint{r.retry_after, false}};
    return resil::verdict::permanent;  // 422 and the other 4xx: the request itself is wrong
}

// Prints what the retry policy decides, between attempts.
struct retry_log {
    void operator()(const resil::events::retry_scheduled& e) const {
        std::printf("    retry: attempt %u failed (%s); next in %lld ms%s\n", e.attempt,
                    std::string(resil::to_string(e.verdict)).c_str(),
                    static_cast<long long>(std::chrono::round<std::chrono::milliseconds>(e.delay).count()),
                    e.from_retry_after ? " (the server's Retry-After)" : " (full jitter)");
    }
};

}  // namespace

int main() {
    const clock_type clock;
    payment_server server{clock};
    network net{clock, &server};
    resil::jitter_engine jitter{42};  // fixed seed: the same waits on every run

    // The orchestrator gives the tool 5 s in all; each attempt may take 2 s;
    // at most 3 attempts, with full jitter between them.
    const auto tool = resil::pipeline(clock, resil::deadline_policy{5s},
                                      resil::retry_policy{{.max_attempts = 3,
                                                           .backoff = resil::full_jitter{100ms, 1s}}},
                                      resil::timeout_policy{{.total = 2s}})
                          .with_listener(retry_log{});

    // One refund through the tool. `key`: the refund's idempotency key, or
    // none. `processing`: how long the server takes over it.
    const auto refund = [&](int order, std::int64_t cents, std::optional<resil::idempotency_key> key,
                            resil::duration processing) {
        const auto start = clock.now();
        server.set_processing_time(processing);
        resil::basic_context<clock_type> ctx{
            resil::basic_call_options<clock_type>{.idempotency_key = key, .jitter = &jitter}};
        const auto out = tool.execute(
            ctx,
            [&](resil::basic_context<clock_type>& c) {
                // The same key on every attempt: the context holds the one
                // given at the start. Never make a new one here — a key per
                // attempt makes every retry a new refund.
                refund_request r{order, cents, std::nullopt};
                if (c.has_idempotency_key()) r.key = c.idempotency_key();
                std::printf("    attempt %u: POST /refunds order %d, %s%s\n", c.attempt(), order, euros(cents).c_str(),
                            r.key ? (", Idempotency-Key " + server.label(*r.key)).c_str() : ", no key");
                return net.post(r, c.attempt_timeouts().total);
            },
            classify_refund);
        const auto took = std::chrono::duration<double>(clock.now() - start).count();
        if (out) {
            std::printf("    => refunded: refund #%d, after %.3f s\n", out->refund_id, took);
        } else {
            std::printf("    => gave up after %.3f s: %s", took, std::string(resil::to_string(out.reason())).c_str());
            if (out.verdict() == resil::verdict::ambiguous)
                std::printf(" (refunded or not? the caller cannot tell)\n");
            else
                std::printf(" (%d: nothing refunded)\n", out->status);
        }
    };

    std::puts("1. A hand-written retry loop, no key; the first response is lost");
    {
        server.set_processing_time(50ms);
        net.responses_to_lose = 1;
        for (int attempt = 1; attempt <= 3; ++attempt) {
            std::printf("    attempt %d: POST /refunds order 1041, %s, no key\n", attempt, euros(3500).c_str());
            if (net.post({1041, 3500, std::nullopt}, 2s).status == 200) break;  // "it timed out: send it again"
        }
        std::puts("    => the customer is refunded twice");
    }

    std::puts("\n2. resil, no key; the first response is lost");
    net.responses_to_lose = 1;
    refund(1042, 3500, std::nullopt, 50ms);
    std::puts("    (the refund did happen: the caller must look it up before doing it again by hand)");

    std::puts("\n3. resil, one key for the refund; the first response is lost");
    // The key is made when the refund is decided, before the first attempt,
    // and kept with the decision (so a restarted orchestrator reuses it too).
    const auto key3 = resil::idempotency_key::v4();
    net.responses_to_lose = 1;
    refund(1043, 3500, key3, 50ms);

    std::puts("\n4. resil, one key; the server takes 2.5 s, longer than an attempt may wait");
    refund(1044, 3500, resil::idempotency_key::v4(), 2500ms);

    std::puts("\n5. refund 3's key sent again with another amount (a bug in the caller)");
    refund(1043, 5300, key3, 50ms);

    server.print_ledger();
}
