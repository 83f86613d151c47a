// Links resil's core for Windows: the umbrella header, and the CSPRNG behind
// idempotency keys (BCryptGenRandom, from the bcrypt library that
// resil::resil links on Windows).
#include <resil/resil.hpp>

#include <cstdio>

int main() {
    const auto v4 = resil::idempotency_key::v4();
    const auto v7 = resil::idempotency_key::v7();
    std::printf("resil %d.%d.%d on Windows: %s %s\n", RESIL_VERSION_MAJOR, RESIL_VERSION_MINOR, RESIL_VERSION_PATCH,
                v4.text().view().data(), v7.text().view().data());
    return v4 == v7 ? 1 : 0;
}
