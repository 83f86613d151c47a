// resil/discovery.hpp — endpoints found by DNS (target resil::discovery,
// libresolv): dns_discovery, its options and the thread that drives it.
// The Asio driver is resil/discovery/asio.hpp (with resil::asio).
#pragma once

#include "discovery/dns_discovery.hpp"
#include "discovery/options.hpp"
