// A listener given by value is called as const.
// expect: resil: this listener handles no event as the pipeline calls it
#include <resil/events.hpp>
#include <resil/pipeline.hpp>

struct counter {
    int seen = 0;
    void operator()(const resil::events::attempt_started&) { ++seen; }  // not const
};

int main() {
    auto pipe = resil::pipeline().with_listener(counter{});
    (void)pipe([] { return 1; }, resil::always_success);
}
