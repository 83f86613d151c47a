// An exception-only classifier for a void callable would never be asked.
// expect: resil: this classifier takes only exceptions, and the callable returns void
#include <exception>

#include <resil/pipeline.hpp>

int main() {
    auto pipe = resil::pipeline();
    (void)pipe([] {}, [](const std::exception_ptr&) { return resil::verdict::retryable; });
}
