// Seed 001's sticky connections, simulated on the manual clock with seeded
// randomness (so its output is checked): 3 gateway pods keep one long-lived
// connection each to the Service of Triton, which has 2 pods; kube-proxy
// draws a pod per connection, never per request.
//
//   (a) with 2 pods, a pod is left idle in 2 of the 8 draws (25 %);
//   (b) a third pod added gets nothing until a connection is reopened;
//   (c) with a maximum connection age, each reopened connection draws among
//       3 pods: the new pod holds 1 connection of 3 on average (none in
//       8/27 = 29.6 % of the draws: with so few connections the spread
//       stays lumpy);
//   (d) a headless Service and per-request balancing in the gateway
//       (resil::balancer fed by resil::dns_discovery): each pod a third,
//       the new one within one TTL of its arrival.
//
// kube-proxy is a resil::balancer with the random picker, one pick per
// connection; the gateways' balancers learn the pods from a
// resil::dns_discovery whose lookup reads the simulated headless Service
// (the same TTL clamping and replace() as against a real DNS server, which
// tests/discovery_dns.cpp covers with dnsmasq).
//
//   $ ./example_discovery_sticky_connections [--csv shares.csv] [--svg docs/discovery_sticky_connections.svg]
#include <resil/discovery.hpp>
#include <resil/testing/manual_clock.hpp>

#include <array>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "support/svg.hpp"

using namespace std::chrono_literals;

namespace {

constexpr int gateways = 3;
constexpr int pods = 3;  // A and B from the start, C added at added_at
const std::array<std::string, pods> pod_address{"http://10.0.1.1:8000", "http://10.0.1.2:8000", "http://10.0.1.3:8000"};
constexpr std::array<const char*, pods> pod_name{"A", "B", "C"};
constexpr resil::duration step = 10ms;           // each gateway sends one request per step: 100/s
constexpr resil::duration run_for = 360s;
constexpr resil::duration added_at = 60500ms;    // pod C ready
constexpr resil::duration max_age_from = 120s;   // the server starts closing connections older than max_age
constexpr resil::duration max_age = 30s;
constexpr resil::duration bucket = 5s;           // the plot's resolution
constexpr int buckets = static_cast<int>(run_for / bucket);
constexpr int draws = 10000;

/// A duration uniform in [0, span), from resil's own engine (the same on every standard library).
resil::duration below(resil::duration span, resil::jitter_engine& rng) {
    return resil::duration{static_cast<resil::duration::rep>(resil::unit_interval(rng) * static_cast<double>(span.count()))};
}

int pod_of(std::string_view address) {
    for (int p = 0; p < pods; ++p)
        if (pod_address[static_cast<std::size_t>(p)] == address) return p;
    return -1;
}

std::vector<resil::endpoint> ready_pods(resil::duration t) {
    std::vector<resil::endpoint> out{{.address = pod_address[0]}, {.address = pod_address[1]}};
    if (t >= added_at) out.push_back({.address = pod_address[2]});
    return out;
}

/// Requests per pod in each bucket of the run, for one way of balancing.
using counts = std::vector<std::array<long, pods>>;

double share(const counts& c, resil::duration from, resil::duration to, int pod) {
    long mine = 0;
    long all = 0;
    for (auto b = static_cast<int>(from / bucket); b < static_cast<int>(to / bucket); ++b)
        for (int p = 0; p < pods; ++p) {
            all += c[static_cast<std::size_t>(b)][static_cast<std::size_t>(p)];
            if (p == pod) mine += c[static_cast<std::size_t>(b)][static_cast<std::size_t>(p)];
        }
    return all == 0 ? 0.0 : 100.0 * static_cast<double>(mine) / static_cast<double>(all);
}

void write_csv(const char* path, const counts& sticky, const counts& per_request) {
    std::FILE* f = std::fopen(path, "w");
    if (f == nullptr) {
        std::fprintf(stderr, "cannot write %s\n", path);
        return;
    }
    std::fprintf(f, "t_s,sticky_A,sticky_B,sticky_C,per_request_A,per_request_B,per_request_C\n");
    for (int b = 0; b < buckets; ++b) {
        const auto from = bucket * b;
        std::fprintf(f, "%d", static_cast<int>(from / 1s));
        for (const auto* c : {&sticky, &per_request})
            for (int p = 0; p < pods; ++p) std::fprintf(f, ",%.1f", share(*c, from, from + bucket, p));
        std::fprintf(f, "\n");
    }
    std::fclose(f);
}

void write_svg(const char* path, const counts& sticky, const counts& per_request) {
    constexpr int width = 900;
    constexpr int panel_h = 200;
    constexpr int left = 60;
    constexpr int plot_w = 700;
    constexpr std::array<const char*, pods> colors{"#1f77b4", "#ff7f0e", "#2ca02c"};
    example_svg::file svg{path, width, 2 * panel_h + 120};
    if (!svg) return;
    const std::array<const char*, 2> titles{
        "one long-lived connection per gateway, drawn by kube-proxy (max connection age 30 s from t = 120 s)",
        "headless Service: per-request balancing over the endpoints resil::dns_discovery finds (TTL 5 s)"};
    const std::array<const counts*, 2> data{&sticky, &per_request};
    const double run_s = static_cast<double>(run_for / 1s);
    for (int panel = 0; panel < 2; ++panel) {
        const int top = 30 + panel * (panel_h + 40);
        svg.add("<text x=\"%d\" y=\"%d\" font-weight=\"bold\">%s</text>\n", left, top - 8, titles[static_cast<std::size_t>(panel)]);
        for (int pct = 0; pct <= 100; pct += 25) {
            const double y = top + panel_h - panel_h * pct / 100.0;
            svg.add("<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#e4e4e4\"/>\n", left, y, left + plot_w, y);
            svg.add("<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%d %%</text>\n", left - 6, y + 4, pct);
        }
        for (const double mark : {static_cast<double>(added_at / 1ms) / 1000.0, static_cast<double>(max_age_from / 1s)}) {
            const double x = left + plot_w * mark / run_s;
            svg.add("<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#444\" stroke-dasharray=\"4 4\"/>\n", x, top, x,
                    top + panel_h);
        }
        svg.add("<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"#444\"/>\n", left, top, plot_w, panel_h);
        // The time axis under each panel, outside it.
        for (int s = 0; s <= 360; s += 60)
            svg.add("<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%d</text>\n", left + plot_w * s / run_s, top + panel_h + 15, s);
        for (int p = 0; p < pods; ++p) {
            std::vector<std::pair<double, double>> points;
            for (int b = 0; b < buckets; ++b) {
                const auto from = bucket * b;
                const double x = left + plot_w * (static_cast<double>(from / 1s) + 2.5) / run_s;
                points.emplace_back(x, top + panel_h - panel_h * share(*data[static_cast<std::size_t>(panel)], from, from + bucket, p) / 100.0);
            }
            svg.polyline(colors[static_cast<std::size_t>(p)], points, 1.8);
            if (panel == 0) {
                const int y = top + 20 + 22 * p;
                svg.add("<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"%s\" stroke-width=\"3\"/>\n", left + plot_w + 15, y,
                        left + plot_w + 37, y, colors[static_cast<std::size_t>(p)]);
                svg.add("<text x=\"%d\" y=\"%d\">pod %s%s</text>\n", left + plot_w + 42, y + 4, pod_name[static_cast<std::size_t>(p)],
                        p == 2 ? " (added)" : "");
            }
        }
    }
    const int bottom = 30 + 2 * panel_h + 40 + 32;
    svg.add("<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">time (s): pod C ready at 60.5 s; share of the requests per 5 s</text>\n",
            left + plot_w / 2, bottom);
}

}  // namespace

int main(int argc, char** argv) {
    resil::jitter_engine rng{1};
    resil::testing::manual_clock clock;
    const auto start = clock.now();

    // kube-proxy: a random pick per connection over the Service's ready pods.
    resil::balancer kube_proxy{ready_pods(0s), {.policy = resil::balancing_policy::random}};

    // (a) 3 connections drawn over 2 pods.
    int idle = 0;
    for (int d = 0; d < draws; ++d) {
        std::array<int, 2> held{};
        for (int c = 0; c < gateways; ++c) ++held[static_cast<std::size_t>(pod_of(kube_proxy.pick(clock.now(), rng).address()))];
        if (held[0] == 0 || held[1] == 0) ++idle;
    }

    // The timeline, both ways at once.
    counts sticky(buckets, std::array<long, pods>{});
    counts per_request(buckets, std::array<long, pods>{});
    struct connection {
        int pod = -1;
        resil::duration closes_at = resil::duration::max();
    };
    std::array<connection, gateways> held;
    for (auto& c : held) c.pod = pod_of(kube_proxy.pick(clock.now(), rng).address());

    // The headless Service's A records now, TTL 5 s (CoreDNS's default).
    resil::duration now_in_run{};
    const auto headless_service = [&] {
        return resil::dns_answer{.outcome = resil::dns_lookup_outcome::resolved, .endpoints = ready_pods(now_in_run), .ttl = 5};
    };
    std::vector<std::unique_ptr<resil::balancer>> lb;
    std::vector<std::unique_ptr<resil::dns_discovery>> discovery;
    std::array<resil::time_point, gateways> next_lookup{};
    for (int g = 0; g < gateways; ++g) {
        lb.push_back(std::make_unique<resil::balancer>(ready_pods(0s), resil::balancer_options{.policy = resil::balancing_policy::round_robin}));
        discovery.push_back(std::make_unique<resil::dns_discovery>(
            resil::dns_discovery_options{.name = "triton.ml.svc.cluster.local", .min_ttl = 5s, .max_ttl = 30s}, *lb.back(),
            headless_service));
        next_lookup[static_cast<std::size_t>(g)] = start + 1s * g;  // the gateways started a second apart
    }

    bool service_changed = false;
    resil::duration seen_by_all = resil::duration::max();
    for (resil::duration t{}; t < run_for; t += step) {
        clock.advance_to(start + t);
        now_in_run = t;
        const auto b = static_cast<std::size_t>(t / bucket);
        if (t >= added_at && !service_changed) {
            kube_proxy.replace(ready_pods(t));  // the Endpoints update: new connections may land on C
            service_changed = true;
        }
        // Sticky: from max_age_from on, the server closes each connection
        // older than max_age at a moment spread over the next max_age (as
        // gRPC's MAX_CONNECTION_AGE jitter does), then every max_age ± 10 %.
        for (auto& c : held) {
            if (t == max_age_from) c.closes_at = t + below(max_age, rng);
            if (t >= c.closes_at) {
                c.pod = pod_of(kube_proxy.pick(clock.now(), rng).address());
                c.closes_at = t + max_age * 9 / 10 + below(max_age / 5, rng);
            }
            ++sticky[b][static_cast<std::size_t>(c.pod)];
        }
        // Per request, over the endpoints each gateway's discovery found.
        bool all_have_c = true;
        for (std::size_t g = 0; g < gateways; ++g) {
            if (clock.now() >= next_lookup[g]) next_lookup[g] = discovery[g]->refresh(clock.now());
            auto lease = lb[g]->pick(clock.now(), rng);
            ++per_request[b][static_cast<std::size_t>(pod_of(lease.address()))];
            lease.record_and_end(clock.now(), resil::endpoint_result::success);
            all_have_c = all_have_c && discovery[g]->current().size() == pods;
        }
        if (all_have_c && seen_by_all == resil::duration::max()) seen_by_all = t;
    }

    // (c) the connections reopened once each over 3 pods.
    long on_new = 0;
    int none = 0;
    for (int d = 0; d < draws; ++d) {
        int mine = 0;
        for (int c = 0; c < gateways; ++c) mine += pod_of(kube_proxy.pick(clock.now(), rng).address()) == 2 ? 1 : 0;
        on_new += mine;
        none += mine == 0 ? 1 : 0;
    }

    std::printf("Seed 001's sticky connections: %d gateway pods, one long-lived connection each to the Service\n"
                "of Triton; kube-proxy draws a pod per connection (a resil::balancer, random picker, seed 1).\n\n",
                gateways);
    std::printf("(a) 2 pods: a pod left idle in %d of %d draws (%.1f %%; 2 of the 8 cases = 25 %%)\n", idle, draws,
                100.0 * idle / draws);
    std::printf("(b) pod C added at 60.5 s: its share of the requests until a connection is reopened: %.1f %%\n",
                share(sticky, 65s, max_age_from, 2));
    std::printf("(c) maximum connection age: reopened once each, the %d connections put %.2f on pod C on average\n"
                "    (expected 1 of 3); none on it in %.1f %% of %d draws (8/27 = 29.6 %%)\n",
                gateways, static_cast<double>(on_new) / draws, 100.0 * none / draws, draws);
    std::printf("(d) headless Service, per-request balancing over the endpoints resil::dns_discovery finds:\n"
                "    every gateway balances over pod C %.1f s after it is ready (TTL 5 s, lookups 1 s apart);\n"
                "    from 70 s on A %.1f %%, B %.1f %%, C %.1f %%\n\n",
                static_cast<double>((seen_by_all - added_at) / 100ms) / 10.0, share(per_request, 70s, run_for, 0),
                share(per_request, 70s, run_for, 1), share(per_request, 70s, run_for, 2));
    std::printf("One run, share of the requests per pod (%%):\n");
    std::printf("  window      sticky A     B     C   per request A     B     C\n");
    for (resil::duration from{}; from < run_for; from += 30s) {
        std::printf("  %3d-%3d s     %5.1f %5.1f %5.1f          %5.1f %5.1f %5.1f\n", static_cast<int>(from / 1s),
                    static_cast<int>((from + 30s) / 1s), share(sticky, from, from + 30s, 0), share(sticky, from, from + 30s, 1),
                    share(sticky, from, from + 30s, 2), share(per_request, from, from + 30s, 0),
                    share(per_request, from, from + 30s, 1), share(per_request, from, from + 30s, 2));
    }
    const auto m = discovery[0]->metrics();
    std::printf("gateway 1's discovery: %llu lookups, %llu sets applied (the first, then pod C), %llu endpoints added\n",
                static_cast<unsigned long long>(m.lookups), static_cast<unsigned long long>(m.changes),
                static_cast<unsigned long long>(m.added));

    for (int i = 1; i + 1 < argc; i += 2) {
        if (std::strcmp(argv[i], "--csv") == 0) write_csv(argv[i + 1], sticky, per_request);
        if (std::strcmp(argv[i], "--svg") == 0) write_svg(argv[i + 1], sticky, per_request);
    }
}
