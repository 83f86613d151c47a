// resil/balancer.hpp — client-side balancing: an endpoint set replaceable at
// run time, pickers (round-robin, random, least outstanding, power of two
// choices, peak EWMA), passive health with outlier ejection, panic mode and
// failover between priority groups. See docs/balancing.md.
#pragma once

#include "balancing/balancer.hpp"
#include "balancing/call.hpp"
#include "balancing/endpoint.hpp"
#include "balancing/health_check.hpp"
