// A classifier for another type than the callable returns.
// expect: resil: the classifier cannot be called with the callable's result
#include <string>

#include <resil/pipeline.hpp>

int main() {
    auto pipe = resil::pipeline();
    (void)pipe([] { return 1; }, [](const std::string&) { return resil::verdict::success; });
}
