// Include Boost.Asio through this header: Boost 1.74's asio/awaitable.hpp uses std::exchange
// without including <utility>, which GCC 12 in C++20 mode does not pull in transitively.
#pragma once

#include <utility>

#include <boost/asio.hpp>
