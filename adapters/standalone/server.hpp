#pragma once
/// The standalone server (docs/standalone.md): runs any csgi::App over HTTP/1.0 and 1.1, HTTP/2 (h2c and
/// over TLS) and, with --http3, HTTP/3 over QUIC, with keep-alive, pipelining, chunked bodies, file
/// bodies by sendfile(2), delayed and streaming responses, and the csgix.io / csgix.cleanup /
/// csgix.informational / csgix.server_stats / csgix.websocket extensions.
///
/// Threads and workers. Each of `threads` io threads runs its own io_context with its own connections;
/// the app is called on the io thread that owns the connection. An app that blocks holds up only the
/// connections of its own thread; the other threads keep serving.
/// Request bodies are read whole by the io thread before the app is called (in memory up to
/// body_buffer_bytes, then in a temporary file), bounded by body_timeout and body_min_rate: csgi.input
/// never waits on the network.
/// With `workers` > 0 a master process opens the listening sockets, forks the workers (each with
/// `threads` io threads), restarts a worker that dies, and keeps the sockets open throughout. In a worker,
/// a fault (SIGSEGV, SIGBUS, SIGFPE, SIGILL) in the app's code fails only the request that raised it: the
/// worker finishes its other requests and exits, and the master replaces it (docs/reliability.md §4).
/// SIGUSR2 to the master starts the csgi binary now at this one's path on the same sockets and hands
/// over to it once its workers listen (docs/standalone.md, "Binary upgrade"); with NOTIFY_SOCKET set the
/// server speaks systemd's Type=notify protocol.
///
/// A graceful stop (stop(), SIGTERM/SIGINT, an old worker on SIGHUP) stops accepting and finishes the
/// requests in flight; idle keep-alive connections stay open until their idle timeout (at most
/// graceful_timeout) and a request on them is answered with Connection: close. A second stop request
/// closes idle connections at once.
///
///   csgi::standalone::ServerOptions opt;
///   opt.listen = {"127.0.0.1:8080"};
///   return csgi::standalone::Server(app, opt).run();   // returns when stopped by SIGTERM/SIGINT
///
/// The command line (`--listen`, `--threads`, …) and csgi::run() are csgi::runner's
/// (csgi/adapters/runner/runner.hpp), which also serves FastCGI and CGI.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "csgi/core/app.hpp"

namespace csgi {
class ServerStats;
}

namespace csgi::standalone {

/// A certificate chain (PEM, the server's certificate first) and its private key (PEM), for TLS.
struct TlsCertificate {
  std::string cert_file;
  std::string key_file;
};

/// The exit status of a prefork worker whose app cannot start (an ASGI lifespan startup failed): the
/// master does not replace it but stops the server, and run() returns this status.
inline constexpr int kWorkerCannotStart = 3;

struct ServerOptions {
  /// Where to listen: "host:port", "[v6]:port", ":port" (all IPv4), "unix:/path". Empty with
  /// LISTEN_FDS set in the environment: the sockets systemd handed over. Empty otherwise: 127.0.0.1:5000.
  std::vector<std::string> listen;
  unsigned threads = 1;           // io threads per process
  unsigned workers = 0;           // 0: serve in this process; N: prefork N workers under a master
  unsigned app_threads = 0;       // 0: the app runs on the io thread (inline); N: on a pool of N threads per process
  bool app_inline_first = false;  // with app_threads N: inline until a call blocks or computes past 2 ms, then on the pool
  bool reuseport = false;         // one SO_REUSEPORT socket per thread instead of one shared socket
  std::string script_name;        // mount prefix ("" or "/prefix"); other paths answer 404
  std::string error_log;          // file for csgi.errors ("" = stderr)
  bool handle_signals = true;     // SIGTERM/SIGINT stop, SIGUSR1 (SIGHUP) reopen logs, systemd notification; off for embedding

  // TLS (docs/standalone.md, TLS): served on the listeners given as https://HOST:PORT, or on every
  // listener when certificates are given and no listener says https://. SIGHUP re-reads the files.
  std::vector<TlsCertificate> tls_certificates;  // the first is the default; the others chosen by SNI
  std::string tls_client_ca;                     // non-empty: clients must present a certificate it signed

  // Limits (over the limit: the status in the comment, and the connection is closed).
  std::size_t max_request_line = 8192;        // 414
  std::size_t max_header_bytes = 16384;       // 431 (request line + fields)
  std::size_t max_header_count = 100;         // 431
  std::uint64_t max_body_bytes = 64ull << 20; // 413, for Content-Length and chunked bodies alike
  // Every request body (HTTP/1 Content-Length or chunked, HTTP/2 DATA) is read by the io thread before
  // the app runs, so no app ever waits on the network. A body is kept in memory up to body_buffer_bytes
  // (nginx's client_body_buffer_size) while the bodies in memory of the whole process stay within
  // body_memory_bytes; past either it goes to an unlinked temporary file in body_temp_dir (empty: $TMPDIR,
  // else /tmp).
  std::uint64_t body_buffer_bytes = 1ull << 20;
  std::uint64_t body_memory_bytes = 64ull << 20;
  std::string body_temp_dir;
  // A body slower than this many bytes a second, on average since its first byte, after a grace of
  // body_timeout, is refused with 408 (Apache mod_reqtimeout's body=N,MinRate=R); 0: no minimum rate.
  std::uint64_t body_min_rate = 500;
  std::size_t max_connections = 10000;        // per process; accepting pauses at the limit
  // HTTP/2 (h2 by ALPN on TLS listeners; h2c with prior knowledge on plain ones): streams a
  // connection may have open at once (SETTINGS_MAX_CONCURRENT_STREAMS; 0: no HTTP/2 at all), and each
  // stream's receive window (SETTINGS_INITIAL_WINDOW_SIZE). The header list size is max_header_bytes;
  // request bodies are read whole (up to max_body_bytes) before the app runs, as HTTP/1 bodies are.
  std::uint32_t h2_max_streams = 100;
  std::uint32_t h2_initial_window = 65535;
  // WebSocket over an HTTP/2 stream (RFC 8441: SETTINGS_ENABLE_CONNECT_PROTOCOL, an extended CONNECT);
  // off: HTTP/2 clients open their WebSockets on an HTTP/1.1 connection.
  bool h2_websocket = true;
  // HTTP/1.1 `Upgrade: h2c` (RFC 7540 §3.2, deprecated by RFC 9113 §3.1). Off: the Upgrade header is
  // ignored and the request answered in HTTP/1.1. On, behind a proxy that forwards Upgrade (WebSocket
  // configurations do), the client speaks HTTP/2 straight to the server and its further requests pass
  // the proxy's per-request rules unseen.
  bool h2c_upgrade = false;
  // HTTP/3 over QUIC (docs/standalone.md, HTTP/3): a UDP socket on the port of each https:// listener,
  // and Alt-Svc on that listener's HTTP/1.1 and HTTP/2 responses. With http3_retry every new client proves
  // its address with a Retry round trip before the server keeps any state for it. 0-RTT is never accepted.
  bool http3 = false;
  bool http3_retry = false;

  // PROXY protocol (v1 and v2, as HAProxy's send-proxy/send-proxy-v2 send it): with proxy_protocol, a TCP
  // connection from an address in trusted_proxies (CIDR blocks, IPv4 or IPv6; required then) must start
  // with a PROXY header, which gives REMOTE_ADDR/REMOTE_PORT, SERVER_PORT and the scheme; a connection
  // from any other address must not. Unix sockets are not affected.
  bool proxy_protocol = false;
  std::vector<std::string> trusted_proxies;

  // Timeouts.
  std::chrono::milliseconds header_timeout{10000};     // first byte to end of header → 408
  std::chrono::milliseconds body_timeout{30000};       // between two pieces of a request body → 408
  std::chrono::milliseconds idle_timeout{15000};       // keep-alive connection with no request → closed
  std::chrono::milliseconds send_timeout{60000};       // client not reading the response → closed
  std::chrono::milliseconds graceful_timeout{10000};   // on SIGTERM: in-flight requests (and idle connections) get this long

  // Prefork workers only (workers > 0): recycling and the request timeout (docs/reliability.md §4). A
  // worker past a limit stops accepting and finishes its requests while the master forks its replacement.
  std::uint64_t max_requests = 0;         // 0: none; else each worker's limit is this + a random 0…jitter
  std::uint64_t max_requests_jitter = 0;
  std::uint64_t max_worker_rss = 0;       // bytes of resident memory, checked after each request; 0: none
  // An app call running longer is answered 504, its thread's stack logged, and its worker replaced; 0: none.
  std::chrono::milliseconds request_timeout{0};
  // WebSocket (csgix.websocket, core/websocket.hpp).
  std::size_t ws_max_message_bytes = 16ull << 20;     // a bigger message is closed with 1009
  std::size_t ws_send_queue_bytes = 16ull << 20;      // Connection::send returns false past this much queued
  // Memory held for incoming messages not yet complete (the read buffers' capacity), counted across the
  // WebSocket streams of one HTTP/2 connection, and across every WebSocket of the process (HTTP/1.1 and
  // HTTP/2). A read that would pass the first is closed with 1009, one that would pass the second with
  // 1013 (try again later); other WebSockets and requests go on.
  std::size_t ws_connection_buffer_bytes = 32ull << 20;
  std::size_t ws_process_buffer_bytes = 256ull << 20;
  std::chrono::milliseconds ws_idle_timeout{60000};   // a ping after half of it; closed after all of it in silence (0: never)
  // Origins ("https://app.example", "*": any) whose pages may open a WebSocket besides the request's own
  // origin; a browser's handshake from another Origin is answered 403 (websocket::origin_problem).
  std::vector<std::string> ws_allowed_origins;

  /// Development reload (csgi serve --reload; docs/standalone.md, "Reload on change"). With `load` set,
  /// each prefork worker calls it after its fork, before it listens (the app's library or module is
  /// loaded there, afresh in every new worker); an exception from it ends that worker before it is
  /// ready. A change to one of `files`, or to a file ending in `tree_suffix` under one of `trees`, starts
  /// new workers, which replace the old ones once all of them listen; when they cannot start, the old
  /// ones keep serving. Needs a master: with `workers` = 0, one worker runs under it.
  struct Reload {
    std::function<void()> load;
    std::vector<std::string> files;
    std::vector<std::string> trees;
    std::string tree_suffix = ".py";
  } reload;

  /// Called once per listening address when the server is ready ("http://127.0.0.1:5000/",
  /// "unix:/path"). By default the address is printed to stdout as "csgi: listening on <address>".
  std::function<void(const std::string&)> on_listening;
};

/// A server running one app. run() blocks until the server is stopped; stop() may be called from any
/// thread (or SIGTERM/SIGINT sent) to stop gracefully.
class Server {
public:
  Server(App app, ServerOptions options);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  /// Serves until stopped. Returns the process exit status (0 after a graceful stop). Throws
  /// std::runtime_error when a listening socket cannot be opened.
  int run();
  /// Asks run() to stop gracefully: stop accepting, finish in-flight requests (up to graceful_timeout).
  void stop();
  /// The addresses actually listened on ("127.0.0.1:41234", "unix:/path"); valid once listening.
  std::vector<std::string> addresses() const;
  /// Blocks until the server listens (or run() failed); true when it listens.
  bool wait_listening(std::chrono::milliseconds timeout = std::chrono::seconds(10)) const;
  /// This server's counters, which it hands to the app as csgix.server_stats (spec EXT-7). In a prefork
  /// worker, that worker's own.
  ServerStats& stats() noexcept;

  struct Impl;

private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace csgi::standalone
