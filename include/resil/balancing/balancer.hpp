// resil/balancing/balancer.hpp — moved to resil/balancer/balancer.hpp (the folder is
// named as resil/balancer.hpp is); this path keeps compiling.
#pragma once

#include "../balancer/balancer.hpp"
