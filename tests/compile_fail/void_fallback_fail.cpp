// A fallback returning void cannot stand in for a value.
// expect: resil::fallback_policy: a fallback returning void fits only a callable returning void
#include <resil/fallback.hpp>
#include <resil/pipeline.hpp>

int main() {
    auto pipe = resil::pipeline(resil::fallback_policy{[] {}});
    (void)pipe([] { return 1; }, resil::always_success);
}
