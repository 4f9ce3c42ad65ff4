#pragma once
// HTTP/3 (RFC 9114) over a QUIC connection (quic.hpp), internal, not installed: an nghttp3 server
// connection whose request streams become requests through the exchange, as HTTP/2's streams do: the
// env (SERVER_PROTOCOL "HTTP/3"), csgi.input read whole before the app runs (the same body limits and
// buffering), the app inline or on its pool, every response kind through the ResponseSink, delayed
// responses through the Responder and Writer. Everything here runs on the io thread of its endpoint.
#include <memory>

#include "csgi/adapters/standalone/detail/http3/quic.hpp"

namespace csgi::standalone::detail {

/// The HTTP/3 protocol of a new QUIC connection on `listener` (a QuicAppMaker).
std::shared_ptr<QuicApp> make_h3(QuicStreams& streams, IoThread& thread, const ListenSocket& listener);

/// Opens the HTTP/3 endpoints of io thread `thread` (one per TLS listener, each on the thread's socket of
/// the listener's group) when ServerOptions::http3 is set. Called for every io thread before they run.
std::vector<std::unique_ptr<QuicEndpoint>> open_http3(IoThread& thread);

}  // namespace csgi::standalone::detail
