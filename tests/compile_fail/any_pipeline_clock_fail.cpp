// An any_pipeline on the steady clock cannot hold a pipeline on another clock.
// expect: resil: this pipeline runs on another clock
#include <resil/any_pipeline.hpp>
#include <resil/testing/manual_clock.hpp>

int main() {
    resil::any_pipeline<int> pipe{resil::pipeline(resil::testing::manual_clock{}), resil::always_success};
    return pipe([] { return 1; }).value();
}
