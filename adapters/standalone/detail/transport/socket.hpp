#pragma once
// The socket types of the standalone server: one generic stream protocol for TCP and unix sockets.
#include <boost/asio/basic_socket_acceptor.hpp>
#include <boost/asio/generic/stream_protocol.hpp>

namespace csgi::standalone::detail {

namespace asio = boost::asio;
using Protocol = asio::generic::stream_protocol;
using Socket = Protocol::socket;
using Acceptor = asio::basic_socket_acceptor<Protocol>;

}  // namespace csgi::standalone::detail
