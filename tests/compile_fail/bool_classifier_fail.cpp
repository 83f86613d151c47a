// A classifier that answers bool cannot say retryable, permanent or ambiguous.
// expect: resil: the classifier returns bool
#include <resil/pipeline.hpp>

int main() {
    auto pipe = resil::pipeline();
    (void)pipe([] { return 200; }, [](const int& status) { return status == 200; });
}
