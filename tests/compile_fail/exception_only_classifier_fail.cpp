// An exception-only classifier for a callable returning a value.
// expect: resil: this classifier takes only exceptions; results need one too
#include <exception>

#include <resil/pipeline.hpp>

int main() {
    auto pipe = resil::pipeline();
    (void)pipe([] { return 1; }, [](const std::exception_ptr&) { return resil::verdict::retryable; });
}
