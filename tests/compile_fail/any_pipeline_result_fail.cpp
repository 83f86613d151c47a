// An any_pipeline<R> runs callables returning R only.
// expect: resil: the callable must return exactly the any_pipeline's result type
#include <resil/any_pipeline.hpp>

int main() {
    resil::any_pipeline<int> pipe{resil::pipeline(), resil::always_success};
    (void)pipe([] { return 1L; });
}
