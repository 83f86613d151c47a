// A classifier must answer with a verdict (or a classification).
// expect: resil: the classifier must return resil::verdict or resil::classification
#include <string>

#include <resil/pipeline.hpp>

int main() {
    auto pipe = resil::pipeline();
    (void)pipe([] { return 200; }, [](const int&) { return std::string("ok"); });
}
