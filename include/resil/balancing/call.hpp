// resil/balancing/call.hpp — moved to resil/balancer/call.hpp (the folder is
// named as resil/balancer.hpp is); this path keeps compiling.
#pragma once

#include "../balancer/call.hpp"
