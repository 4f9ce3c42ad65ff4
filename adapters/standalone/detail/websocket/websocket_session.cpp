// WebSocket sessions of the standalone server (see websocket_session.hpp).
#include "csgi/adapters/standalone/detail/websocket/websocket_session.hpp"

#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/websocket/stream.hpp>
#include <deque>

#include "csgi/adapters/standalone/detail/exchange/app_pool.hpp"
#include "csgi/adapters/standalone/detail/http2/h2_websocket.hpp"
#include "csgi/adapters/standalone/detail/tls/tls_stream.hpp"
#include "csgi/core/keys.hpp"
#include "csgi/core/text.hpp"

namespace csgi::standalone::detail {

namespace beast = boost::beast;
namespace bws = boost::beast::websocket;
using boost::system::error_code;

namespace {

/// The app's side of a session: a queue of messages to send and a close request, filled from any thread
/// and emptied by the session on the io thread. The app may keep it after the session and the server.
class Channel final : public websocket::Connection {
public:
  struct Out {
    std::string data;
    bool binary = false;
  };
  Channel(std::string remote, std::size_t limit, std::shared_ptr<Mailbox> mailbox)
      : remote_(std::move(remote)), limit_(limit), mailbox_(std::move(mailbox)) {}

  bool send_text(std::string_view text) override { return websocket::valid_utf8(text) && push(text, false); }
  bool send_binary(std::string_view data) override { return push(data, true); }
  void close(int code, std::string_view reason) override {
    {
      std::lock_guard lock(mu_);
      if (state_ != State::open) return;
      state_ = State::closing;
      close_code_ = websocket::sendable_close_code(code) ? code : websocket::close_code::normal;
      close_reason_ = std::string(reason.substr(0, 123));
      while (!close_reason_.empty() && !websocket::valid_utf8(close_reason_)) close_reason_.pop_back();
      if (scheduled_) return;
      scheduled_ = true;
    }
    wake();
  }
  bool is_open() const override {
    std::lock_guard lock(mu_);
    return state_ == State::open;
  }
  std::size_t buffered_amount() const override {
    std::lock_guard lock(mu_);
    return queued_;
  }
  std::string remote_addr() const override { return remote_; }

  // The session's side (io thread).
  void set_wake(std::function<void()> f) { wake_ = std::move(f); }
  /// The next message to write; false (and no wake pending) when there is none.
  bool pop(Out& o) {
    std::lock_guard lock(mu_);
    if (q_.empty()) {
      scheduled_ = false;
      return false;
    }
    o = std::move(q_.front());
    q_.pop_front();
    return true;
  }
  void wrote(std::size_t n) {
    std::lock_guard lock(mu_);
    queued_ -= std::min(queued_, n);
  }
  /// The close the app asked for, once everything before it is written.
  bool close_wanted(int& code, std::string& reason) {
    std::lock_guard lock(mu_);
    if (state_ != State::closing || !q_.empty()) return false;
    code = close_code_;
    reason = close_reason_;
    return true;
  }
  void ended() {
    std::lock_guard lock(mu_);
    state_ = State::closed;
    q_.clear();
    queued_ = 0;
  }

private:
  enum class State { open, closing, closed };
  bool push(std::string_view data, bool binary) {
    {
      std::lock_guard lock(mu_);
      if (state_ != State::open) return false;
      if (queued_ > 0 && queued_ + data.size() > limit_) return false;
      q_.push_back({std::string(data), binary});
      queued_ += data.size();
      if (scheduled_) return true;
      scheduled_ = true;
    }
    wake();
    return true;
  }
  void wake() {
    auto f = wake_;
    mailbox_->post(f);
  }

  mutable std::mutex mu_;
  std::deque<Out> q_;
  std::size_t queued_ = 0;
  State state_ = State::open;
  bool scheduled_ = false;  // a wake is posted, or the session is writing and will look again
  int close_code_ = websocket::close_code::normal;
  std::string close_reason_;
  const std::string remote_;
  const std::size_t limit_;
  std::shared_ptr<Mailbox> mailbox_;
  std::function<void()> wake_;  // set before the channel is handed to the app
};

/// The close code on_close reports when the peer sent no close frame: the one Beast sent for a protocol
/// failure, else 1006.
int failure_code(const error_code& ec) {
  if (ec == bws::error::message_too_big) return websocket::close_code::too_big;
  if (ec == bws::error::bad_frame_payload) return websocket::close_code::invalid_payload;
  if (ec == bws::condition::protocol_violation) return websocket::close_code::protocol_error;
  return websocket::close_code::abnormal;
}

template <class Next>
class Session final : public WsSession, public std::enable_shared_from_this<Session<Next>> {
public:
  Session(IoThread& t, Next next, WsStart st)
      : t_(t), sh_(t.shared), ws_(std::move(next)), st_(std::move(st)) {
    std::size_t limit = sh_.opt.ws_max_message_bytes;
    if (st_.handler.max_message_bytes > 0) limit = std::min(limit, st_.handler.max_message_bytes);
    ws_.read_message_max(limit);
    message_max_ = limit;
    ws_.auto_fragment(false);
    bws::stream_base::timeout to{};
    to.handshake_timeout = sh_.opt.header_timeout;
    to.idle_timeout = sh_.opt.ws_idle_timeout.count() > 0 ? std::chrono::duration_cast<bws::stream_base::duration>(sh_.opt.ws_idle_timeout)
                                                         : bws::stream_base::none();
    to.keep_alive_pings = true;
    ws_.set_option(to);
    auto headers = std::make_shared<Headers>(std::move(st_.headers));
    ws_.set_option(bws::stream_base::decorator([headers](bws::response_type& res) {
      res.erase(beast::http::field::server);  // Beast names itself unless a Server field is there
      bool named = false;
      for (const Header& h : *headers) {
        named = named || iequals(h.name, "server");
        if (iequals(h.name, "upgrade") || iequals(h.name, "connection") || iequals(h.name, "sec-websocket-accept") ||
            !is_token(h.name) || has_ctl(h.value, true))
          continue;
        res.insert(h.name, h.value);
      }
      if (!named) res.set(beast::http::field::server, "csgi");
    }));
    ch_ = std::make_shared<Channel>(std::move(st_.remote_addr), sh_.opt.ws_send_queue_bytes, t_.mailbox);
  }

  ~Session() override {
    if (st_.connection_budget) st_.connection_budget->give(charged_);
    budget_->give(charged_);
  }

  void start() {
    std::weak_ptr<Session> w = this->shared_from_this();
    ch_->set_wake([w] {
      if (auto s = w.lock()) s->pump();
    });
    if (st_.pending_out.empty()) return accept();
    asio::async_write(ws_.next_layer(), asio::buffer(st_.pending_out),
                      [self = this->shared_from_this()](error_code ec, std::size_t) {
                        if (ec) return self->end(ec);
                        self->accept();
                      });
  }

  void going_away() override {
    if (opened_) ch_->close(websocket::close_code::going_away, "server shutting down");
    else abort();
  }

  void abort() noexcept override {
    error_code ec;
    beast::get_lowest_layer(ws_).close(ec);
  }

private:
  void accept() {
    ws_.async_accept(asio::buffer(st_.handshake), [self = this->shared_from_this()](error_code ec) {
      std::string().swap(self->st_.handshake);  // their memory goes now, not with the connection
      std::string().swap(self->st_.pending_out);
      if (ec) return self->end(ec);
      self->opened_ = true;
      self->call([self] {
        if (self->st_.handler.on_open) self->st_.handler.on_open(*self->ch_);
      }, [self] { self->read(); });
    });
  }

  // A message is read piece by piece into in_, whose room is charged to the budgets before it is
  // allocated (so a refused message never held the memory).
  void read() {
    if (ended_ || refused_) return;
    if (!make_room()) return;
    ws_.async_read_some(in_, in_.capacity() - in_.size(),
                        [self = this->shared_from_this()](error_code ec, std::size_t) { self->on_read(ec); });
  }

  static constexpr std::size_t min_room = 4096;  // a read is never smaller (Beast reads a frame head in 1536)
  static constexpr std::size_t kept = 64 * 1024;  // a buffer up to this size stays between messages

  /// Room for the next read: in_ grows (doubling, at most to the message limit and min_room) only when
  /// the connection's and the process's budgets give the bytes. Past one, the WebSocket is closed: 1009
  /// for the connection's, 1013 (try again later) for the process's.
  bool make_room() {
    if (in_.capacity() - in_.size() >= min_room) return true;
    std::size_t cap = std::min(std::max(in_.size() + min_room, in_.capacity() * 2), message_max_ + min_room);
    std::size_t more = cap > charged_ ? cap - charged_ : 0;
    if (st_.connection_budget && !st_.connection_budget->take(more)) {
      refuse(websocket::close_code::too_big, "message too big for this connection's WebSocket buffers");
      return false;
    }
    if (!budget_->take(more)) {
      if (st_.connection_budget) st_.connection_budget->give(more);
      refuse(websocket::close_code::try_again_later, "server busy: too many WebSocket bytes buffered, try again later");
      return false;
    }
    charged_ += more;
    in_.max_size(cap);
    in_.reserve(cap);
    return true;
  }

  /// Gives back what the budgets hold beyond in_'s capacity now.
  void settle() noexcept {
    std::size_t keep = std::min(charged_, in_.capacity());
    if (charged_ > keep) {
      if (st_.connection_budget) st_.connection_budget->give(charged_ - keep);
      budget_->give(charged_ - keep);
      charged_ = keep;
    }
  }

  /// The message being read goes (its memory at once) and the WebSocket closes with `code` after what
  /// the app has queued; the app's on_close gets the peer's answer.
  void refuse(int code, const char* reason) {
    refused_ = true;
    in_.consume(in_.size());
    in_.shrink_to_fit();
    settle();
    ch_->close(code, reason);
  }

  void on_read(error_code ec) {
    if (ec) return end(ec);
    if (!ws_.is_message_done()) return read();
    bool binary = ws_.got_binary();
    auto self = this->shared_from_this();
    call([self, binary] {
      if (!self->st_.handler.on_message) return;
      auto d = self->in_.data();
      self->st_.handler.on_message(*self->ch_, std::string_view(static_cast<const char*>(d.data()), d.size()), binary);
    }, [self] {
      self->in_.consume(self->in_.size());
      if (self->in_.capacity() > kept) self->in_.shrink_to_fit();
      self->settle();
      self->read();
    });
  }

  /// Runs app code `job` where apps run, then `then` on the io thread. Nothing else of the session runs
  /// app code meanwhile (no read is pending), so callbacks never overlap and keep their order.
  template <class Job, class Then>
  void call(Job job, Then then) {
    if (!sh_.pool) {
      guarded(job);
      then();
      return;
    }
    auto self = this->shared_from_this();
    bool posted = sh_.pool->post([self, job = std::move(job), then = std::move(then)]() mutable {
      self->guarded(job);
      // Every reference goes back to the io thread with `then`: the session is destroyed only there.
      auto mailbox = self->t_.mailbox;
      auto back = [self = std::move(self), job = std::move(job), then = std::move(then)]() mutable { then(); };
      mailbox->post(back);
    });
    if (!posted) {
      ch_->close(websocket::close_code::going_away, "server shutting down");
      then();
    }
  }

  template <class Job>
  void guarded(Job& job) noexcept {
    try {
      job();
      return;
    } catch (const std::exception& e) {
      sh_.errors.write(std::string("csgi: a WebSocket handler threw (closing with 1011): ") + e.what());
    } catch (...) {
      sh_.errors.write("csgi: a WebSocket handler threw a non-standard exception (closing with 1011)");
    }
    ch_->close(websocket::close_code::internal_error, "internal error");
  }

  // Writes what the app queued, one message at a time, then its close.
  void pump() {
    if (writing_ || ended_ || !opened_ || close_sent_) return;
    Channel::Out o;
    if (ch_->pop(o)) return write(std::move(o));
    int code;
    std::string reason;
    if (!ch_->close_wanted(code, reason)) return;
    close_sent_ = true;
    bws::close_reason cr(static_cast<bws::close_code>(code), reason);
    ws_.async_close(cr, [self = this->shared_from_this()](error_code ec) { self->end(ec); });
  }

  void write(Channel::Out o) {
    writing_ = true;
    auto msg = std::make_shared<Channel::Out>(std::move(o));
    ws_.binary(msg->binary);
    ws_.async_write(asio::buffer(msg->data), [self = this->shared_from_this(), msg](error_code ec, std::size_t) {
      self->writing_ = false;
      self->ch_->wrote(msg->data.size());
      if (ec) return self->end(ec);
      self->pump();
    });
  }

  // The session is over (read or close finished, or a failure): the app's on_close, then the socket goes
  // and the connection learns.
  void end(error_code ec) {
    if (ended_) return;
    ended_ = true;
    ch_->ended();
    if (!opened_) return finish();
    int code = failure_code(ec);
    std::string reason;
    if (ws_.reason().code != bws::close_code::none) {
      code = ws_.reason().code;
      reason = std::string(ws_.reason().reason.data(), ws_.reason().reason.size());
    } else if (ec == bws::error::closed) {
      code = websocket::close_code::no_status;
    }
    auto self = this->shared_from_this();
    call([self, code, reason] {
      if (self->st_.handler.on_close) self->st_.handler.on_close(*self->ch_, code, reason);
    }, [self] { self->finish(); });
  }

  void finish() {
    in_.consume(in_.size());
    in_.shrink_to_fit();
    settle();
    abort();
    if (auto f = std::exchange(st_.on_end, nullptr)) f();
  }

  IoThread& t_;
  Shared& sh_;
  bws::stream<Next> ws_;
  WsStart st_;
  beast::flat_buffer in_;
  std::shared_ptr<ByteBudget> budget_ = sh_.ws_budget;  // the process's
  std::size_t charged_ = 0;      // bytes of in_'s capacity held in budget_ (and the connection's)
  std::size_t message_max_ = 0;  // read_message_max
  std::shared_ptr<Channel> ch_;
  bool opened_ = false, writing_ = false, close_sent_ = false, ended_ = false, refused_ = false;
};

}  // namespace

std::shared_ptr<WsSession> start_ws_session(IoThread& t, Socket socket, WsStart start) {
  auto s = std::make_shared<Session<Socket>>(t, std::move(socket), std::move(start));
  s->start();
  return s;
}

std::shared_ptr<WsSession> start_ws_session(IoThread& t, Socket socket, std::unique_ptr<TlsSession> tls, WsStart start) {
  auto s = std::make_shared<Session<TlsStream>>(t, TlsStream(std::move(socket), std::move(tls)), std::move(start));
  s->start();
  return s;
}

std::shared_ptr<WsSession> start_ws_session(IoThread& t, H2WsStream stream, WsStart start) {
  auto s = std::make_shared<Session<H2WsStream>>(t, std::move(stream), std::move(start));
  s->start();
  return s;
}

std::string ws_handshake_text(const Env& env) {
  std::string r = "GET / HTTP/1.1\r\nHost: ";
  r.append(env.get(keys::HTTP_HOST));
  r.append("\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: ");
  r.append(trim_ows(env.get("HTTP_SEC_WEBSOCKET_KEY")));
  r.append("\r\nSec-WebSocket-Version: 13\r\n\r\n");
  return r;
}

}  // namespace csgi::standalone::detail
