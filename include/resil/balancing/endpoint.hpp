// resil/balancing/endpoint.hpp — moved to resil/balancer/endpoint.hpp (the folder is
// named as resil/balancer.hpp is); this path keeps compiling.
#pragma once

#include "../balancer/endpoint.hpp"
