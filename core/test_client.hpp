#pragma once
/// An in-memory client for unit tests (Rack's MockRequest): builds the env an adapter would build, calls
/// the app, and drains whatever body kind it returns (delayed and streaming included), calling close().
/// A delayed response may be answered later from another thread (RES-8): the call waits until respond()
/// has returned or start()'s writer is closed or dropped, at most `Options::delayed_timeout`, then
/// throws std::runtime_error saying what it waited for. When every Responder copy is dropped unanswered
/// it throws std::logic_error at once.
///
///   auto res = csgi::testing::call(app, "GET /x?y=1", {{"Cookie", "a=1"}}, "");
///   CHECK(res.status == 200);
///
/// An exception from the app is rethrown by default; with `Options::rethrow = false` the client answers
/// it as an adapter does (see Options::rethrow), so a test sees the 400 a client would get.
#include <chrono>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "csgi/core/app.hpp"

namespace csgi::testing {

struct TestResponse {
  int status = 0;
  Headers headers;
  std::string body;
  Headers trailers;          // a stream's trailers() after its end, or what a Writer's set_trailers() gave
  bool streamed = false;     // delivered through a Writer or a Stream
  bool closed = false;       // the stream or writer was closed
  bool file = false;         // the body was a FileBody
  std::string errors;        // what was written to csgi.errors
  std::string header(std::string_view name) const { return std::string(headers.get(name).value_or("")); }
};

struct Options {
  std::string script_name;                 // mount prefix the "server" strips
  std::string remote_addr = "127.0.0.1";
  std::string server_name = "localhost";
  std::string server_port = "80";
  std::string url_scheme = "http";
  std::function<void(Env&)> setup;         // runs after the env is built, before the app
  std::function<void(const Env&)> inspect; // runs after the app returned (env still intact)
  std::chrono::milliseconds delayed_timeout{30000};  // longest wait for a delayed response to complete
  /// false: an exception thrown by the app, or by a delayed response's callable before it answers,
  /// becomes the response an adapter sends for it (ADP-5, ADP-6) instead of being rethrown: an
  /// HttpError's status with Response::error()'s text page ("404 Not Found: <message>"; 5xx show the
  /// status only and log the message to `errors`), anything else 500 with its message logged. One
  /// thrown after a response has started (a Writer, a stream's next()) is still rethrown: an adapter
  /// would cut the connection there.
  bool rethrow = true;
};

/// `request` is "METHOD /target" (optionally followed by " HTTP/1.x"). Throws what the app throws
/// (unless `options.rethrow` is false).
TestResponse call(const App& app, std::string_view request, std::vector<std::pair<std::string, std::string>> headers = {},
                  std::string body = {}, const Options& options = {});

/// Drains a response as an adapter would (for middleware tests that already have a Response).
TestResponse drain(Response res, std::chrono::milliseconds delayed_timeout = std::chrono::seconds(30));

}  // namespace csgi::testing
