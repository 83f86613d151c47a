// A policy of one's own with only a blocking execute() in
// resil::asio::pipeline: one short error naming the policy and what to write.
// expect: resil::asio::pipeline: the policy named in this requirement has no asynchronous form
// also-expect: require_asynchronous_form<blocking_only_policy>
// max-lines: 40
#include <resil/asio/pipeline.hpp>

struct blocking_only_policy {
    template <class Context, class Next>
    auto execute(Context& ctx, Next&& next) const {
        return next(ctx);
    }
};

int main() {
    auto pipe = resil::asio::pipeline(blocking_only_policy{});
    // Called as a service would: nothing more is reported than the error above.
    auto call = [&pipe]() -> asio::awaitable<int> { co_return (co_await pipe([]() -> asio::awaitable<int> { co_return 1; }, resil::always_success)).value(); };
    (void)call;
}
