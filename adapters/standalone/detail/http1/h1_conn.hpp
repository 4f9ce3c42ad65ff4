#pragma once
// The HTTP/1 codec of a connection (internal, not installed): it reads requests from its transport
// (transport/transport.hpp), serves them through the exchange and writes their responses. The class is
// declared here and its members are defined by concern:
//   h1_conn.cpp     the codec's life (closing, timeouts, graceful stop, faults), the env and the app call of
//                   a request, interim responses and csgix.io;
//   read.cpp        reading requests (parsed by request_parser.hpp) and their bodies;
//   respond.cpp     turning the app's response into bytes: heads, bodies, files, pull streams, writing;
//   delayed.cpp     delayed responses: the Responder and the streaming Writer, usable from any thread;
//   pooled.cpp      the app on the pool;
//   h2_start.cpp    handing the connection to HTTP/2.
//
// The connection's bytes live in one buffer. A request's env values point into it (no copies), so the
// bytes of an active request's header never move; body bytes are read behind the header and go, decoded,
// into the request's body store (request_body.hpp) before the app runs. A body longer than the buffer's
// room is read through a larger buffer of its own, the header's staying put until the request ends. Responses are serialised into
// one output buffer and written with one gathered write for as many pipelined responses as are ready.
#include <arpa/inet.h>
#include <fcntl.h>
#include <malloc.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <boost/asio/post.hpp>
#include <boost/beast/http/error.hpp>
#include <charconv>
#include <condition_variable>
#include <functional>
#include <cstring>
#include <mutex>
#include <optional>
#include <variant>

#include "csgi/adapters/standalone/detail/exchange/app_pool.hpp"
#include "csgi/adapters/standalone/detail/exchange/request.hpp"
#include "csgi/adapters/standalone/detail/exchange/responder.hpp"
#include "csgi/adapters/standalone/detail/exchange/response_body.hpp"
#include "csgi/adapters/standalone/detail/process/shared.hpp"
#include "csgi/adapters/standalone/detail/http1/framing.hpp"
#include "csgi/adapters/standalone/detail/http1/request_parser.hpp"
#include "csgi/adapters/standalone/detail/websocket/websocket_session.hpp"
#include "csgi/adapters/standalone/detail/transport/transport.hpp"
#include "csgi/adapters/standalone/detail/exchange/mailbox.hpp"
#include "csgi/adapters/standalone/detail/process/fault.hpp"
#include "csgi/adapters/standalone/detail/process/io_thread.hpp"
#include "csgi/core/extensions.hpp"
#include "csgi/core/http_date.hpp"
#include "csgi/core/http_error.hpp"
#include "csgi/core/request_env.hpp"
#include "csgi/core/text.hpp"

namespace csgi::standalone::detail {

namespace http = boost::beast::http;
using boost::system::error_code;

inline constexpr std::size_t initial_buffer = 4096;
inline constexpr std::size_t body_read_max = 256 * 1024;   // a body's read buffer: at most this
inline constexpr std::size_t body_read_chunked = 64 * 1024; // a chunked body's (its length unknown)
inline constexpr std::size_t flush_threshold = 64 * 1024;     // flush pipelined output past this size
inline constexpr std::size_t inline_body_max = 16 * 1024;     // copy string bodies up to this size

/// A delayed response's request, kept when its connection closed before the response was complete
/// (APP-4): the env, the read buffer its text views point into, and the cleanup handlers, which run when
/// this is destroyed. It stands in for the connection's csgi.input, csgix.io and csgix.informational,
/// which fail from then on.
struct HeldRequest final : Input, Hijack, Informational, websocket::Handshake {
  std::unique_ptr<Env> env;
  std::unique_ptr<char[]> buf;
  CleanupHandlers cleanup;
  ~HeldRequest() override {
    if (env && cleanup.size() > 0) cleanup.run(*env);
  }
  std::size_t read(char*, std::size_t) override {
    throw BadRequest("client closed the connection before the end of the body");
  }
  int take(std::string&) override { return -1; }
  bool send(int, const Headers&) override { return false; }
  bool take(websocket::Handler) override { return false; }
};


class H1Conn final : public Codec,
                     public Hijack,
                     public Informational,
                     public websocket::Handshake {
public:
  explicit H1Conn(Transport& t);
  ~H1Conn() override;
  /// The connection's own bytes begin (after a PROXY header): requests are read.
  void serve();
  /// Framing is lost (or a PROXY header refused): answers `status` with `why`, then closes.
  void reject(int status, std::string_view why);

  // Codec.
  void on_read(error_code ec, std::size_t n) override;
  void on_writable(error_code ec) override;
  void on_timeout() override;
  void on_shutdown(bool hurry) override;
  void on_close() noexcept override;
  std::string abandon(int status) noexcept override;
  std::string abandon_pooled(int status, std::atomic<bool>& answered) noexcept override;

  // csgix.io
  int take(std::string& pending) override;
  // csgix.informational
  bool send(int status, const Headers& headers) override;
  // csgix.websocket (websocket/websocket_handshake.cpp)
  bool take(websocket::Handler handler) override;
  const std::vector<std::string>& allowed_origins() const override { return sh_.opt.ws_allowed_origins; }

  // Delayed responses (called on the io thread, posted by the responder / writer).
  void on_delayed(Response r);
  void on_responder_dropped() {
    if (phase_ != Phase::delayed) return;
    log_error("500: the delayed response's Responder was dropped without an answer (ADP-11)");
    on_delayed(Response::error(500));
  }
  void on_writer_start(const std::shared_ptr<WriterState>& st, int status, Headers headers);
  void on_writer_flush(const std::shared_ptr<WriterState>& st);

  // The app on the pool (--app-threads; pooled.cpp).
  void pool_job(std::shared_ptr<H1Conn> self, Env& env);
  void on_pooled_done(Response r, int failed);
  void on_pooled_delayed(std::weak_ptr<RequestKeeper> keeper);

  /// This codec, sharing the ownership of its connection (the transport).
  std::shared_ptr<H1Conn> shared_from_this() { return {tr_.shared_from_this(), this}; }
  std::weak_ptr<H1Conn> weak_from_this() { return shared_from_this(); }

private:
  // What the connection is doing; each event handler looks here first.
  enum class Phase {
    reading,     // reading and serving requests (process)
    app,         // the app runs on the io thread
    pooled,      // the app runs on the pool (pooled.cpp)
    delayed,     // a delayed response's Responder has not answered yet (delayed.cpp)
    body,        // a body past its head is being sent: what kind, body_ says
    lingering,   // half-closed after the last response, reading until the client closes
    websocket,   // the socket belongs to a WebSocket session (websocket/websocket_handshake.cpp)
    closed,      // the transport closed
    h2,          // the connection speaks HTTP/2 (H2Conn): nothing of this codec is used again
  };
  // The request in the buffer: none (waiting for or parsing a head), active (head parsed, response not
  // finished).
  enum class Request { none, active };
  // What a step of process() leaves to do: the next step, the loop again, wait for bytes, or nothing.
  enum class Step { next, again, wait, stop };

  // The PROXY protocol header before the connection's own bytes (proxy_header.cpp).
  void read_proxy_header();
  void proxy_from_trusted(std::string_view bytes);
  void proxy_from_untrusted(std::string_view bytes);
  void wait_proxy_bytes();
  void on_proxy_readable(error_code ec);
  void accept_proxy_header(const proxy_protocol::Header& h, std::size_t length);
  void refuse_proxy(std::string_view why, std::string_view bytes);
  void proxy_timeout();

  bool on_io_thread() const { return tr_.on_io_thread(); }
  void set_deadline(std::chrono::milliseconds d) { tr_.set_deadline(d); }
  void clear_deadline() { tr_.clear_deadline(); }

  // Reading and parsing.
  void wait_read();
  void process();
  Step read_head();
  Step start_request();
  Step head_incomplete();
  Step parse_head();
  Step read_body();
  Step store_body(char* chunk, std::size_t cap);
  bool body_room();
  void release_head() noexcept;
  void release_body_buffer() noexcept;
  void body_deadline();
  void wait_for_request();
  bool make_room();
  void begin_request();
  void start_h2();
  bool try_h2c_upgrade();
  void request_ready();
  void set_connection_env(Env& env);
  void after_app(Response&& res, int failed);
  bool send_interim(int status, const Headers& headers);
  int take_here(std::string& pending);
  // WebSocket (websocket/websocket_handshake.cpp): the app's 101 hands the socket to a session.
  bool upgrade_here(websocket::Handler& handler);
  void begin_websocket(Response& res);

  // The app on the pool (pooled.cpp).
  void run_in_pool();
  void post_done(std::shared_ptr<H1Conn> self, Response r, int failed);
  void release_on_io(std::shared_ptr<H1Conn> self);
  std::shared_ptr<ResponderImpl> pool_responder(const std::shared_ptr<H1Conn>& self);
  void run_on_io(const std::function<void()>& f);
  void pooled_timeout();

  // Delayed responses (delayed.cpp): this connection as their route.
  std::shared_ptr<ResponderImpl> delayed_responder(const std::shared_ptr<H1Conn>& self,
                                                   std::shared_ptr<RequestKeeper> keeper);
  void writer_failed(bool aborted);
  void end_writer(const WriterState::Turn& turn);

  // Responding.
  void handle(Response&& res);
  void write_head(int status, const Headers& headers, std::optional<std::uint64_t> length, bool chunked);
  void start_body(Response& res);
  void drop_stream() noexcept;
  void pump_file();
  void pump_stream();
  void end_stream();
  Headers pull_trailers();
  bool append_counted(std::string_view chunk);
  void log_length_error(std::uint64_t declared, std::uint64_t produced, bool over);
  void finish_response();
  void end_request();
  void settle_request_body();
  void log_cut_short() noexcept;
  void log_error(std::string_view what);

  // Writing.
  bool flush();  // true when everything is written; false when waiting for writability (or dead)
  void wait_write();
  void after_flush();
  void set_idle(bool idle) noexcept {
    if (idle == link_.idle) return;
    link_.idle = idle;
    if (sh_.slot) {
      if (idle) sh_.slot->connections_idle.fetch_add(1, std::memory_order_relaxed);
      else sh_.slot->connections_idle.fetch_sub(1, std::memory_order_relaxed);
    }
  }
  void close_now() { tr_.close(); }
  void drop_env() noexcept;
  bool hand_over(RequestKeeper& k);
  void linger();

  // csgi.errors lines about the request in progress (log_error), for the exchange's pieces.
  struct Log final : ExchangeLog {
    H1Conn* c;
    explicit Log(H1Conn* conn) : c(conn) {}
    void error(std::string_view what) noexcept override;
    FaultScope fault_scope() const noexcept override;
  };
  Log log_{this};

  // Where the exchange hands a response (drive_response): written as HTTP/1 bytes (respond.cpp).
  struct Sink final : ResponseSink {
    H1Conn* c;
    explicit Sink(H1Conn* conn) : c(conn) {}
    void head_only(int status, Headers& headers, std::optional<std::uint64_t> length) override;
    void text(int status, Headers& headers, std::string& body) override;
    void bytes(int status, Headers& headers, const SharedBytes& body) override;
    void file(int status, Headers& headers, FileSpan span) override;
    void stream(int status, Headers& headers, StreamPtr stream, std::string first,
                std::optional<std::uint64_t> declared) override;
    void trailers_only(int status, Headers& headers, Headers trailers) override;
  };

  IoThread& t_;
  Shared& sh_;

  // The codec's own state, for the connection's whole life.
  struct Link {
    bool peer_eof = false;    // the client half-closed
    bool idle = false;        // a keep-alive connection waiting for its next request (counted on the board)
    bool hijacked = false;    // the app took the socket (csgix.io)
    bool h2_possible = true;  // HTTP/2 may still start (h2_preface_match; on TLS, the protocol ALPN chose)
  };
  Link link_;

  // The bytes read: [begin, end) unparsed; an active request's header lies before body_base, and its
  // env's views point into it, so those bytes never move while it is served. While a body is read
  // through a buffer of its own (body_room), `head` holds the header's buffer and `buf` is that body
  // buffer, `charged` bytes of it counted in the process's body memory.
  struct Inbound {
    std::unique_ptr<char[]> buf;
    std::size_t cap = 0, begin = 0, end = 0, body_base = 0;
    std::unique_ptr<char[]> head;
    std::size_t head_cap = 0, charged = 0;
    char* at(std::size_t i) const noexcept { return buf.get() + i; }
    std::string_view unparsed() const noexcept { return {buf.get() + begin, end - begin}; }
  };
  Inbound in_;

  // The request being served, from its first byte until the next request's: reset as a whole
  // (begin_request).
  struct Exchange {
    Request stage = Request::none;
    bool keep_alive = true;
    bool http10 = false;
    bool head = false;
    bool continue_pending = false;  // Expect: 100-continue, not yet answered (the body is not read yet)
    bool body_begun = false;        // read_body() has begun reading the body (pace_ runs)
    std::uint64_t content_length = 0;
    std::size_t scanned = 0;      // head_complete() scanned up to here (relative to in_.begin)
    bool folded = false;          // head_complete() saw a field line starting with SP or HTAB (obs-fold)
    std::string_view expect;      // copied from the parser (the parser goes before the response may end)
    int status = 0;               // the response's, once its head is written
    std::uint64_t sent_body = 0;
  };
  Exchange req_;
  static_assert(std::is_trivially_copyable_v<Exchange>, "req_ = {} stays a few stores");
  bool response_started() const noexcept { return req_.status != 0 || phase_ == Phase::h2; }

  // What is to be written, in order: the serialised bytes, with external segments (large bodies) spliced
  // in before given positions.
  struct Ext {
    std::size_t at;  // position in buf before which this segment goes
    std::string_view data;
    std::shared_ptr<const void> keep;
  };
  struct Output {
    std::string buf;
    std::size_t pos = 0;  // written of buf
    std::vector<Ext> ext;
    std::size_t ext_done = 0;  // segments already fully written
    std::size_t ext_off = 0;   // bytes written of segment ext_done
    Output& append(std::string_view s) {
      buf.append(s);
      return *this;
    }
    std::size_t size() const noexcept { return buf.size(); }
    std::size_t unsent() const noexcept { return buf.size() - pos; }
    bool pending() const noexcept { return pos < buf.size() || !ext.empty(); }
    void clear() noexcept {
      buf.clear();
      pos = 0;
      ext.clear();
      ext_done = ext_off = 0;
    }
    bool written() const noexcept { return pos == buf.size() && ext_done == ext.size(); }
    // Fills `iov` (room for `max`, at least 3) with what is unwritten, in order; returns how many it used.
    int gather(iovec* iov, int max) const noexcept {
      if (!ext.empty()) return gather_segments(iov, max);
      if (pos == buf.size()) return 0;
      iov[0] = {const_cast<char*>(buf.data()) + pos, buf.size() - pos};
      return 1;
    }
    // Moves past `n` written bytes.
    void advance(std::size_t n) noexcept {
      if (ext.empty()) pos += n;
      else advance_segments(n);
    }
    int gather_segments(iovec* iov, int max) const noexcept;
    void advance_segments(std::size_t n) noexcept;
    std::string take();
  };
  Output out_;

  // The response body in progress past its head (Phase::body), one of:
  // a file, sent with sendfile from `off`, `left` bytes to go;
  struct FileBody {
    std::shared_ptr<FileHandle> file;
    std::uint64_t off = 0, left = 0;
  };
  // a pull stream, framed by the app's Content-Length (counted, ADP-13: declared and the bytes it still
  // allows, left), chunked, or ended by closing (HTTP/1.0 without a length);
  enum class Framing { counted, chunked, until_close };
  struct StreamBody {
    StreamPtr stream;
    Framing framing = Framing::chunked;
    std::uint64_t declared = 0, left = 0;
  };
  // a streaming Writer's bytes, chunked or not.
  struct WriterBody {
    std::shared_ptr<WriterState> writer;
    bool chunked = false;
  };
  std::variant<std::monostate, FileBody, StreamBody, WriterBody> body_;
  /// Ends the body in progress: a pull stream is closed (a close() that throws is ignored), a writer
  /// learns that the client is gone.
  void drop_body() noexcept;

  std::optional<RequestParser> parser_;
  std::unique_ptr<Env> env_;
  CleanupHandlers cleanup_;
  Phase phase_ = Phase::reading;
  // The request's body, read whole before the app runs: the env's csgi.input. Emptied when the next
  // request begins (a delayed response's app may read it until its response is complete).
  RequestBody body_in_;
  BodyPace pace_;
  // The Responder (and Writer) of a delayed response not yet complete; it takes the env if the
  // connection closes first (APP-4).
  std::weak_ptr<RequestKeeper> keeper_;
  // Keeps the connection alive while only the app's responder or writer refers to it (every entry
  // point into the connection holds its own reference, so dropping this one never frees it mid-call).
  std::shared_ptr<H1Conn> self_hold_;
  // The handler the app gave csgix.websocket during its call, then the session running it.
  std::unique_ptr<websocket::Handler> ws_handler_;
  std::shared_ptr<WsSession> ws_;
};


}  // namespace csgi::standalone::detail
