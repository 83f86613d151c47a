// A result type with no classifier, given none.
// expect: resil: no classifier for this result type
#include <resil/pipeline.hpp>

struct reply {
    int status;
};

int main() {
    auto pipe = resil::pipeline();
    (void)pipe([] { return reply{200}; });
}
