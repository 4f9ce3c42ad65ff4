// The WebSocket code of csgi's own (core/websocket.hpp): valid_utf8 agrees with Beast's UTF-8 checker
// (which the standalone adapter applies to incoming text); accept() on any handshake fields answers only
// 101 (the handler taken, handshake_problem() empty), 426 (with Upgrade) or 400 (a body), never takes the
// handler otherwise, and its responses pass Lint. Input: "upgrade\nconnection\nkey\nversion\nmethod\n…".
#include <boost/beast/websocket/detail/utf8_checker.hpp>
#include <string>
#include <string_view>

#include "csgi/core/keys.hpp"
#include "csgi/core/lint.hpp"
#include "csgi/core/test_client.hpp"
#include "csgi/core/text.hpp"
#include "csgi/core/websocket.hpp"
#include "fuzz_support.hpp"

namespace {

struct Taker final : csgi::websocket::Handshake {
  int taken = 0;
  bool take(csgi::websocket::Handler) override { return ++taken == 1; }
};

/// A header value an adapter passes to the app: no control character but tab (an HTTP parser refuses
/// the others with a 400 before any app runs), no surrounding blanks.
std::string field(std::string_view v) {
  std::string out;
  for (char c : v) out.push_back(csgi::is_ctl(c) && c != '\t' ? ' ' : c);
  while (!out.empty() && (out.back() == ' ' || out.back() == '\t')) out.pop_back();
  while (!out.empty() && (out.front() == ' ' || out.front() == '\t')) out.erase(0, 1);
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  csgi::fuzz::check(csgi::websocket::valid_utf8(in) == boost::beast::websocket::detail::check_utf8(in.data(), in.size()),
                    "valid_utf8 disagrees with Beast's checker");

  std::string_view rest = in;
  std::vector<std::pair<std::string, std::string>> fields;
  for (const char* name : {"Upgrade", "Connection", "Sec-WebSocket-Key", "Sec-WebSocket-Version"}) {
    std::string v = field(csgi::fuzz::take(rest, '\n'));
    if (!v.empty()) fields.emplace_back(name, v);
  }
  std::string method = size % 3 == 0 ? "POST" : "GET";
  Taker taker;
  csgi::testing::Options o;
  o.setup = [&](csgi::Env& env) { env.set_object<csgi::websocket::Handshake>(csgi::keys::x::websocket, &taker); };
  std::string problem;
  o.inspect = [&](const csgi::Env& env) { problem = csgi::websocket::handshake_problem(env); };
  csgi::App app = [](csgi::Env& env) { return csgi::websocket::accept(env, {}); };
  auto r = csgi::testing::call(csgi::wrap<csgi::Lint>(app), method + " /ws HTTP/1.1", fields, "", o);
  csgi::fuzz::check(r.status == 101 || r.status == 426, "accept answers 101 or 426 to a bodiless request");
  csgi::fuzz::check((r.status == 101) == (taker.taken == 1), "the handler is taken exactly when the answer is 101");
  csgi::fuzz::check((r.status == 101) == problem.empty(), "101 exactly when handshake_problem() finds none");
  csgi::fuzz::check(r.header("Upgrade") == "websocket", "101 and 426 carry Upgrade: websocket");
  return 0;
}
