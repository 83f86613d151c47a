// resil/curl/async_hedged_client.hpp — moved to
// resil/curl_asio/async_hedged_client.hpp (it needs both resil::curl and
// resil::asio); this path keeps compiling.
#pragma once

#include "../curl_asio/async_hedged_client.hpp"
