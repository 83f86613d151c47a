// resil/balancing/health_check.hpp — moved to resil/balancer/health_check.hpp (the folder is
// named as resil/balancer.hpp is); this path keeps compiling.
#pragma once

#include "../balancer/health_check.hpp"
