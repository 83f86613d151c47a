// resil/balancer.hpp alone: call_endpoint with a result type of the user's
// (its classifier and its endpoint_failure found by ADL), and by hand.
#include <resil/balancer.hpp>
#include <resil/context.hpp>  // the context type is the caller's: call_endpoint takes any

namespace resil_entry_points {

struct balanced_reply {
    int status = 200;
};
inline resil::classification classify(const balanced_reply& r) {
    return r.status < 500 ? resil::verdict::success : resil::verdict::retryable;
}
inline bool endpoint_failure(const balanced_reply& r) { return r.status >= 500; }

resil::outcome<balanced_reply> balancer_call_endpoint(const resil::balancer& lb, resil::context& ctx) {
    resil::tried_endpoints tried;
    auto out = resil::call_endpoint(lb, ctx, tried, [](const resil::endpoint&) { return balanced_reply{}; });
    if (auto lease = lb.pick(ctx.now(), &tried); lease && tried.enter_scope(lease.scope())) {
        tried.leave_scope(true);
        lease.record_and_end(ctx.now(), resil::endpoint_result::success);
    }
    return out;
}

}  // namespace resil_entry_points
