// resil/balancer.hpp — client-side balancing: an endpoint set replaceable at
// run time, pickers (round-robin, random, least outstanding, power of two
// choices, peak EWMA; ring hash, Maglev and rendezvous by a call's affinity
// key), passive health with outlier ejection, panic mode,
// failover between priority groups, idempotency scopes, and one attempt of a
// call on a picked endpoint. See docs/balancing.md.
#pragma once

#include "balancer/affinity.hpp"
#include "balancer/balancer.hpp"
#include "balancer/call.hpp"
#include "balancer/endpoint.hpp"
#include "balancer/health_check.hpp"
#include "balancer/options.hpp"
#include "balancer/tried_endpoints.hpp"
