// The standalone server's HTTP/3 codec (adapters/standalone/detail/http3/h3.hpp) behind a QUIC connection
// that is only memory: the fuzzer's input is a run of records, each a stream (client request streams 0, 4,
// 8; client unidirectional streams 2, 6, 10: control, QPACK encoder, decoder), a length, a FIN bit and
// that many bytes, handed to the codec as ngtcp2 would hand them; after each record the codec's output is
// taken as the connection would (written, then acknowledged). Every complete request is answered by the
// app with a body kind picked by its path's length (complete, file-less stream, shared bytes, 103 then
// complete, trailers). Invariants beyond "no crash": every env handed to the app passes Lint's env rules
// (ENV-19 for HTTP/3 included) and says SERVER_PROTOCOL HTTP/3; its csgi.input reads no more than the
// body limit; the output stays bounded by the input.
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio/post.hpp>

#include "csgi/adapters/standalone/detail/http3/h3.hpp"
#include "csgi/adapters/standalone/detail/process/io_thread.hpp"
#include "csgi/adapters/standalone/detail/process/shared.hpp"
#include "csgi/adapters/standalone/detail/tls/tls.hpp"
#include "csgi/adapters/standalone/listen.hpp"
#include "csgi/core/extensions.hpp"
#include "csgi/core/keys.hpp"
#include "csgi/core/lint.hpp"
#include "fuzz_support.hpp"

namespace {

using csgi::fuzz::check;
using csgi::fuzz::check_env;
using namespace csgi;
using namespace csgi::standalone;
using namespace csgi::standalone::detail;

constexpr std::uint64_t max_body = 4096;

class Conn final : public QuicStreams {
public:
  std::int64_t next_uni = 3;
  std::uint64_t out_bytes = 0;
  bool closed = false;
  bool open_uni(std::int64_t& id) override {
    id = next_uni;
    next_uni += 4;
    return true;
  }
  void consumed(std::int64_t, std::size_t) override {}
  void reset(std::int64_t, std::uint64_t) override {}
  void stop_reading(std::int64_t, std::uint64_t) override {}
  void allow_stream() override {}
  void wake() override {}
  void close(std::uint64_t) override { closed = true; }
  std::string tls_cipher() const override { return "TLS_AES_128_GCM_SHA256"; }
  std::string tls_sni() const override { return "localhost"; }
  const char* peer_addr() const override { return "127.0.0.1"; }
  const char* peer_port() const override { return "40000"; }
};

class Chunks final : public Stream {
public:
  bool next(std::string& chunk) override {
    if (n_ == 3) return false;
    chunk.assign(100 * ++n_, 'p');
    return true;
  }
  Headers trailers() override { return {{"grpc-status", "0"}}; }

private:
  int n_ = 0;
};

Response app(Env& env) {
  env.set_bool(keys::streaming, true);
  check_env(env, "the env of an HTTP/3 request passes Lint");
  check(env.get(keys::SERVER_PROTOCOL) == "HTTP/3", "SERVER_PROTOCOL is HTTP/3");
  auto* in = env.object<Input>(keys::input);
  check(in != nullptr, "csgi.input is there");
  char buf[1024];
  std::uint64_t total = 0;
  for (int i = 0; i < 64; ++i) {
    std::size_t n = in->read(buf, sizeof buf);
    if (n == 0) break;
    total += n;
  }
  check(total <= max_body, "the body is within the limit");
  switch (env.get(keys::PATH_INFO).size() % 5) {
    case 0: return Response::text(200, "hello");
    case 1: return Response{200, {{"Content-Type", "text/plain"}}, StreamPtr(std::make_shared<Chunks>())};
    case 2: return Response{200, {}, SharedBytes(std::make_shared<const std::string>(3000, 'b'))};
    case 3:
      if (auto* info = env.object<Informational>(keys::x::informational)) info->send(103, {{"Link", "</a.css>"}});
      return Response::text(200, "after 103");
    default: {
      Response r = Response::text(200, "");
      r.headers.add("X-Bad\n", "dropped");
      return r;
    }
  }
}

struct World {
  ServerStats stats;
  Shared shared;
  std::unique_ptr<IoThread> thread;
  ListenSocket listener;
  World() {
    shared.app = app;
    shared.stats = &stats;
    shared.opt.max_body_bytes = max_body;
    shared.opt.max_header_bytes = 4096;
    shared.init_status_lines();
    thread = std::make_unique<IoThread>(shared, 0);
    listener.server_name = "localhost";
    listener.server_port = "443";
    listener.tls = true;
  }
};

}  // namespace

namespace {

void feed(World* world, const std::uint8_t* data, std::size_t size) {
  Conn conn;
  std::shared_ptr<QuicApp> h3 = make_h3(conn, *world->thread, world->listener);
  static constexpr std::int64_t ids[] = {0, 4, 8, 2, 6, 10};
  bool alive = h3->start();
  std::string_view in(reinterpret_cast<const char*>(data), size);
  while (alive && in.size() >= 3) {
    std::int64_t id = ids[static_cast<std::uint8_t>(in[0]) % 6];
    std::size_t n = std::min<std::size_t>(static_cast<std::uint8_t>(in[1]), in.size() - 3);
    bool fin = in[2] & 1;
    alive = h3->received(id, reinterpret_cast<const std::uint8_t*>(in.data() + 3), n, fin);
    in.remove_prefix(3 + n);
    // The connection's turn: everything the codec has to send, written and acknowledged.
    for (int turn = 0; alive && turn < 256; ++turn) {
      std::int64_t sid = -1;
      bool sfin = false;
      QuicVec v[16];
      long count = h3->pending(sid, sfin, v, 16);
      if (count < 0) alive = false;
      if (count <= 0 && sid < 0) break;
      std::size_t bytes = 0;
      for (long i = 0; i < count; ++i) bytes += v[i].len;
      conn.out_bytes += bytes;
      if (!h3->wrote(sid, bytes) || (sid >= 0 && bytes > 0 && !h3->acked(sid, bytes))) alive = false;
      if (bytes == 0 && !sfin) break;
    }
    h3->deadline();
  }
  check(conn.out_bytes <= 64 * 1024 + 40 * size, "the output stays bounded by the input");
  h3->detach();
}

}  // namespace

// Run on the io thread's context, as the codec always is (a 103 is sent there directly).
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static World* world = new World();
  asio::io_context& ioc = world->thread->ioc;
  bool done = false;
  asio::post(ioc, [&] {
    feed(world, data, size);
    done = true;
  });
  ioc.restart();
  while (!done) ioc.run_one();
  ioc.poll();
  return 0;
}
