// The callable must take the context or nothing.
// expect: resil: the callable must take the context
#include <resil/pipeline.hpp>

int main() {
    auto pipe = resil::pipeline();
    (void)pipe([](int x) { return x; }, resil::always_success);
}
