// Making an idempotency key needs resil/idempotency_key.hpp.
// expect: resil: making an idempotency key needs its generator
#include <resil/pipeline.hpp>

int main() {
    resil::context ctx;
    return ctx.idempotency_key().version();
}
