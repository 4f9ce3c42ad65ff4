// The HTTP/2 session (adapters/standalone/detail/http2/h2_session.hpp) on hand-made client frames: a request's env
// keeps what it says of the connection after the session, the caller's strings and the stream's object
// (reused by a later stream) are gone (APP-4).
#include <catch2/catch.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "csgi/adapters/standalone/detail/http2/h2_session.hpp"
#include "csgi/core/keys.hpp"

namespace {

using namespace csgi;
using namespace csgi::standalone::detail;

class Host final : public H2Host {
public:
  std::vector<std::shared_ptr<H2Request>> ready;
  void on_request(std::shared_ptr<H2Request> req) override { ready.push_back(std::move(req)); }
  void on_response_done(const H2Request&, int, std::uint64_t, bool) override {}
  void log_error(std::string_view) override {}
};

// A frame header (RFC 9113 §4.1) and its payload.
std::string frame(std::uint8_t type, std::uint8_t flags, std::uint32_t stream, std::string_view payload) {
  std::string f;
  std::size_t n = payload.size();
  f += {static_cast<char>(n >> 16), static_cast<char>(n >> 8), static_cast<char>(n), static_cast<char>(type),
        static_cast<char>(flags), static_cast<char>(stream >> 24), static_cast<char>(stream >> 16),
        static_cast<char>(stream >> 8), static_cast<char>(stream)};
  f += payload;
  return f;
}

// GET `path` (HPACK: static :method GET, :scheme http; :path and :authority as literals not indexed).
std::string get(std::uint32_t stream, std::string_view path) {
  std::string block = "\x82\x86";
  block += '\x04';
  block += static_cast<char>(path.size());
  block += path;
  block += '\x01';
  block += static_cast<char>(std::string_view("example.com").size());
  block += "example.com";
  return frame(0x1, 0x5, stream, block);  // HEADERS, END_STREAM | END_HEADERS
}

}  // namespace

TEST_CASE("h2 session: a request's env keeps the connection's values after the session is gone (APP-4)", "[h2]") {
  Host host;
  std::string addr = "192.0.2.7", port = "4711", server_port = "8443", script = "/app";
  {
    csgi::ConnectionInfo conn;
    conn.remote_addr = addr;
    conn.remote_port = port;
    conn.server_port = server_port;
    conn.script_name = script;
    H2Session session(host, H2Limits{}, conn);
    // The caller's strings change once the session has them.
    for (std::string* s : {&addr, &port, &server_port, &script}) s->assign(s->size(), 'x');
    std::string in = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + frame(0x4, 0, 0, "") + get(1, "/app/one");
    REQUIRE(session.receive(in.data(), in.size()));
    REQUIRE(host.ready.size() == 1);
    session.respond(1, Response::text(200, "one"));
    std::string out;
    REQUIRE(session.produce(out, 1 << 20));
    REQUIRE(session.open_streams() == 0);
    // The next stream reuses the closed one's object; the first request is still held here.
    std::string next = get(3, "/app/two");
    REQUIRE(session.receive(next.data(), next.size()));
    REQUIRE(host.ready.size() == 2);
  }
  for (std::size_t i = 0; i < host.ready.size(); ++i) {
    const Env& env = *host.ready[i]->env;
    CHECK(env.get(keys::REMOTE_ADDR) == "192.0.2.7");
    CHECK(env.get(keys::REMOTE_PORT) == "4711");
    CHECK(env.get(keys::SERVER_PORT) == "8443");
    CHECK(env.get(keys::SERVER_NAME) == "example.com");
    CHECK(env.get(keys::SCRIPT_NAME) == "/app");
    CHECK(env.get(keys::PATH_INFO) == (i == 0 ? "/one" : "/two"));
    CHECK(env.get(keys::url_scheme) == "http");
    CHECK(env.get(keys::SERVER_PROTOCOL) == "HTTP/2");
    CHECK(host.ready[i]->id == (i == 0 ? 1 : 3));
  }
}

TEST_CASE("h2 session: split cookie fields reach the app joined with \"; \" (ENV-9)", "[h2][ENV-9]") {
  Host host;
  H2Session session(host, H2Limits{}, csgi::ConnectionInfo{});
  // GET / with two cookie fields (HPACK literals with a new name, not indexed).
  std::string block = "\x82\x86\x84";
  block += '\x01';
  block += static_cast<char>(std::string_view("example.com").size());
  block += "example.com";
  for (std::string_view value : {"x=a,__Host-sid=evil", "__Host-sid=real"}) {
    block += '\x00';
    block += '\x06';
    block += "cookie";
    block += static_cast<char>(value.size());
    block += value;
  }
  std::string in = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + frame(0x4, 0, 0, "") + frame(0x1, 0x5, 1, block);
  REQUIRE(session.receive(in.data(), in.size()));
  REQUIRE(host.ready.size() == 1);
  CHECK(host.ready[0]->env->get(keys::HTTP_COOKIE) == "x=a,__Host-sid=evil; __Host-sid=real");
}
