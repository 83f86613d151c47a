// resil/version.hpp — the library's version, the one place it is written.
// CMakeLists.txt reads RESIL_VERSION_* from here.
#pragma once

#define RESIL_VERSION_MAJOR 0
#define RESIL_VERSION_MINOR 1
#define RESIL_VERSION_PATCH 0

namespace resil {
/// The library version as `major * 10000 + minor * 100 + patch`.
inline constexpr int version = RESIL_VERSION_MAJOR * 10000 + RESIL_VERSION_MINOR * 100 + RESIL_VERSION_PATCH;
}  // namespace resil
