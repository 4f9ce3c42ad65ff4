// The standalone server's HTTP/2 session (adapters/standalone/detail/http2/h2_session.hpp) on a raw client stream: the
// connection preface, then the fuzzer's bytes (frames) in pieces of fuzzer-chosen sizes, the session's
// output produced after each piece as the driver would. Every complete request is answered with a body
// kind picked by its stream id (complete, shared bytes, pull stream, writer, 103 then complete). Invariants
// beyond "no crash":
//  - every env handed to the app passes Lint's env rules (ENV-*, CORE-*: ENV-16 for HTTP/2 included),
//    says SERVER_PROTOCOL HTTP/2, and has a csgi.input that reads its whole body, no more than the limit;
//  - the output stays bounded by the input (no amplification past a fixed allowance per input byte).
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "csgi/adapters/standalone/detail/http2/h2_session.hpp"
#include "csgi/core/keys.hpp"
#include "csgi/core/lint.hpp"
#include "fuzz_support.hpp"

namespace {

using csgi::fuzz::check;
using csgi::fuzz::check_env;
using namespace csgi;
using namespace csgi::standalone::detail;

class NullErrors final : public ErrorStream {
public:
  void write(std::string_view) override {}
};

class Host final : public H2Host {
public:
  std::vector<std::shared_ptr<H2Request>> ready;
  void on_request(std::shared_ptr<H2Request> req) override { ready.push_back(std::move(req)); }
  void on_response_done(const H2Request&, int status, std::uint64_t, bool) override {
    check(status >= 200 && status <= 999, "a final status");
  }
  void log_error(std::string_view) override {}
};

NullErrors errors;

void check_request(H2Request& req, const H2Limits& limits) {
  Env& env = *req.env;
  env.set_object<Input>(keys::input, static_cast<Input*>(&req));
  env.set_object<ErrorStream>(keys::errors, &errors);
  for (std::string_view k : {keys::multithread, keys::multiprocess, keys::run_once, keys::nonblocking})
    env.set_bool(k, false);
  env.set_bool(keys::streaming, true);
  env.set_bool(keys::x::input_buffered, true);
  check_env(env, "the env of an HTTP/2 request passes Lint");
  check(env.get(keys::SERVER_PROTOCOL) == "HTTP/2", "SERVER_PROTOCOL is HTTP/2");
  std::string body = req.read_all();
  check(body.size() <= limits.max_body_bytes, "the body is within the limit");
  if (auto cl = env.get(keys::CONTENT_LENGTH); !cl.empty())
    check(cl == std::to_string(body.size()), "CONTENT_LENGTH matches the body");
}

class Chunks final : public Stream {
public:
  bool next(std::string& chunk) override {
    if (n_ == 3) return false;
    chunk.assign(100 * ++n_, 'p');
    return true;
  }

private:
  int n_ = 0;
};

void answer(H2Session& s, H2Request& req) {
  std::int32_t id = req.id;
  switch ((id >> 1) % 5) {
    case 0: s.respond(id, Response::text(200, "hello")); break;
    case 1: s.respond(id, Response{200, {{"Content-Type", "text/plain"}, {"Connection", "close"}},
                                   std::make_shared<const std::string>(std::string(40000, 'b'))});
      break;
    case 2: s.respond(id, Response{200, {}, StreamPtr(std::make_shared<Chunks>())}); break;
    case 3: {
      auto w = std::make_shared<WriterState>();
      w->pending = std::string(20000, 'w');
      w->closed = true;
      s.start_writer(id, 200, {{"Transfer-Encoding", "chunked"}}, w);
      s.pull_writer(id);
      break;
    }
    default:
      s.interim(id, 103, {{"Link", "</a.css>; rel=preload"}});
      s.respond(id, Response::error(404));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static constexpr std::string_view preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
  std::string_view in(reinterpret_cast<const char*>(data), size);
  H2Limits limits;
  limits.max_body_bytes = 4096;
  limits.max_header_bytes = 4096;
  limits.max_streams = 16;
  Host host;
  csgi::ConnectionInfo conn;
  conn.server_name = "fuzz";
  conn.server_port = "80";
  conn.remote_addr = "127.0.0.1";
  conn.remote_port = "1234";
  H2Session session(host, limits, conn);
  std::string out;
  std::size_t produced = 0;
  bool alive = session.receive(preface.data(), preface.size());
  while (alive && !in.empty()) {
    // The first byte of each piece says how long it is (1…256 bytes of what follows).
    std::size_t n = std::min<std::size_t>(static_cast<unsigned char>(in[0]) + 1, in.size() - 1);
    std::string_view piece = in.substr(1, n);
    in.remove_prefix(1 + n);
    alive = session.receive(piece.data(), piece.size());
    for (auto& req : host.ready) {
      check_request(*req, limits);
      answer(session, *req);
    }
    host.ready.clear();
    out.clear();
    session.produce(out, 1 << 20);
    produced += out.size();
  }
  out.clear();
  session.produce(out, 1 << 20);
  produced += out.size();
  check(produced <= 4096 + 64 * 1024 * (size / 9 + 1), "output bounded by the input");
  return 0;
}
