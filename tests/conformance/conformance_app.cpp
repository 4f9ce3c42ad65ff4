// The conformance suite's app (libconformance_app.so, a CSGI_APP library): one behaviour per test case,
// chosen by the `X-Csgi-Test` request header. Every adapter loads this same library; the client side is
// run_conformance.py. See README.md.
//
// --app-arg DIR: where to keep the suite's files (default: a fresh directory under /tmp). Marker files
// written by stream close() and cleanup handlers live there too, so that a later request (maybe in
// another process: CGI, prefork workers) can check them.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include "csgi/core/app_library.hpp"
#include "csgi/core/extensions.hpp"
#include "csgi/core/http_error.hpp"
#include "csgi/core/lint.hpp"
#include "csgi/core/url_map.hpp"
#include "csgi/middleware/ranges.hpp"

namespace {

using namespace csgi;

// The suite's files hold pattern bytes the client can regenerate: byte i = (i * 7 + 3) mod 256.
constexpr std::size_t small_file_size = 4096;
constexpr std::size_t big_file_size = 1300000;

std::string pattern(std::size_t n) {
  std::string s(n, '\0');
  for (std::size_t i = 0; i < n; ++i) s[i] = static_cast<char>((i * 7 + 3) & 0xff);
  return s;
}

std::uint64_t fnv1a(std::string_view s, std::uint64_t h = 1469598103934665603ull) {
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

std::string hex(std::uint64_t v) {
  char buf[20];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

struct Files {
  std::string dir;
  std::string small, big;
  bool owned = false;  // a directory we created: removed when the app goes
  explicit Files(std::string d) : dir(std::move(d)) {
    if (dir.empty()) {
      char tmpl[] = "/tmp/csgi-conformance-XXXXXX";
      if (!::mkdtemp(tmpl)) throw std::runtime_error("conformance app: mkdtemp failed");
      dir = tmpl;
      owned = true;
    } else {
      ::mkdir(dir.c_str(), 0755);
    }
    small = dir + "/small.bin";
    big = dir + "/big.bin";
    write(small, pattern(small_file_size));
    write(big, pattern(big_file_size));
  }
  ~Files() {
    if (!owned) return;
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
  Files(const Files&) = delete;
  Files& operator=(const Files&) = delete;
  static void write(const std::string& path, const std::string& data) {
    std::string tmp = path + ".tmp" + std::to_string(::getpid());
    std::ofstream(tmp, std::ios::binary) << data;
    std::rename(tmp.c_str(), path.c_str());
  }
  std::string marker(std::string_view kind, std::string_view token) const {
    std::string t;
    for (char c : token)
      if (std::isalnum(static_cast<unsigned char>(c))) t += c;
    return dir + "/" + std::string(kind) + "-" + t;
  }
};

Response text(std::string body) { return Response::text(200, std::move(body)); }

std::string value_of(const Env& env, std::string_view key) {
  const Value* v = env.find(key);
  if (!v) return "<missing>";
  switch (v->type()) {
    case Value::Type::text: return std::string(v->text());
    case Value::Type::integer: return std::to_string(v->integer());
    case Value::Type::boolean: return v->truthy() ? "true" : "false";
    case Value::Type::object: return "<object>";
  }
  return {};
}

// A pull stream over chunks, recording close() in a marker file.
class ChunkStream final : public Stream {
public:
  ChunkStream(std::vector<std::string> chunks, std::string marker) : chunks_(std::move(chunks)), marker_(std::move(marker)) {}
  bool next(std::string& chunk) override {
    if (i_ >= chunks_.size()) return false;
    chunk = chunks_[i_++];
    return true;
  }
  void close() override {
    if (!marker_.empty()) Files::write(marker_, "closed");
  }

private:
  std::vector<std::string> chunks_;
  std::size_t i_ = 0;
  std::string marker_;
};

/// An app mounted at /admin beside one at /, as a site whose front guards /admin mounts them: dot segments
/// in the request must never route to the /admin one.
const UrlMap& admin_map() {
  static const UrlMap map = [] {
    UrlMap m;
    m.map("/admin", [](Env& e) { return text("admin " + std::string(e.get(keys::PATH_INFO))); });
    m.map("/", [](Env& e) { return text("site " + std::string(e.get(keys::PATH_INFO))); });
    return m;
  }();
  return map;
}

Response dispatch(const Files& files, Env& env) {
  std::string_view test = env.get("HTTP_X_CSGI_TEST");
  std::string_view path = env.get(keys::PATH_INFO);
  if (test.empty() && (path == "/canary" || path.ends_with("/canary"))) return text("canary");
  if (test.empty() && path.starts_with("/seq/")) return text(std::string(path.substr(5)));

  // --- Plack::Test::Suite mirrors (ENV-*, RES-*, INPUT-*, ERR-* rules) ---
  if (test == "script_name") return text(std::string(env.get(keys::SCRIPT_NAME)));
  if (test == "query_string") return text(std::string(env.get(keys::QUERY_STRING)));
  if (test == "post_urlencoded") {
    std::string body = env.input().read_all();
    return text(value_of(env, keys::CONTENT_LENGTH) + "|" + value_of(env, keys::CONTENT_TYPE) + "|" + body);
  }
  if (test == "big_post") {
    std::uint64_t h = 1469598103934665603ull;
    std::size_t total = 0;
    char buf[4096];
    for (;;) {
      std::size_t n = env.input().read(buf, sizeof buf);
      if (n == 0) break;
      total += n;
      h = fnv1a({buf, n}, h);
    }
    return text(std::to_string(total) + " " + hex(h));
  }
  if (test == "url_scheme") return text(std::string(env.get(keys::url_scheme)));
  if (test == "stream_body") {
    Response r = text("");
    r.body = StreamPtr(std::make_shared<ChunkStream>(std::vector<std::string>{"foo", "bar", "baz"},
                                                    files.marker("stream-closed", env.get("HTTP_X_TOKEN"))));
    return r;
  }
  if (test == "file_fd") {
    Response r{200, {{"Content-Type", "application/octet-stream"}}, FileBody::open(files.small)};
    return r;
  }
  if (test == "file_big") {
    Response r{200, {{"Content-Type", "application/octet-stream"}}, FileBody::open(files.big)};
    return r;
  }
  if (test == "file_path") {
    FileBody f;
    f.path = files.small;
    return Response{200, {{"Content-Type", "application/octet-stream"}}, f};
  }
  if (test == "header_foo") return text(value_of(env, "HTTP_FOO"));
  if (test == "cookie") return text(value_of(env, keys::HTTP_COOKIE));
  if (test == "env") {
    return text(value_of(env, keys::REQUEST_METHOD) + "|" + value_of(env, keys::SCRIPT_NAME) + "|" +
                value_of(env, keys::PATH_INFO) + "|" + value_of(env, keys::QUERY_STRING) + "|" +
                value_of(env, keys::SERVER_NAME) + "|" + value_of(env, keys::SERVER_PORT));
  }
  if (test == "path_info") return text(std::string(path));
  if (test == "server_protocol") return text(std::string(env.get(keys::SERVER_PROTOCOL)));
  if (test == "script_name_defined") return text(env.contains(keys::SCRIPT_NAME) ? "defined" : "missing");
  if (test == "stream_closed") {
    std::string m = files.marker("stream-closed", env.get("HTTP_X_TOKEN"));
    return text(::access(m.c_str(), F_OK) == 0 ? "closed" : "not closed");
  }
  if (test == "errors") {
    bool present = env.object<ErrorStream>(keys::errors) != nullptr;
    env.errors().write("conformance: a line for csgi.errors");
    return text(present ? "present" : "missing");
  }
  if (test == "status_line") return text("ok");
  if (test == "die") throw std::runtime_error("conformance: the app died on purpose");
  if (test == "http_error") throw HttpError(418, "conformance: teapot");
  if (test == "repeated_header") return text(value_of(env, "HTTP_FOO"));
  if (test == "repeated_response_header") {
    Response r = text("two");
    r.headers.add("X-Foo", "bar");
    r.headers.add("X-Foo", "baz");
    return r;
  }
  if (test == "no_cookie_key") return text(env.contains("COOKIE") ? "bogus" : "ok");
  if (test == "not_modified") return Response{304, {}, std::string()};
  if (test == "request_uri") return text(std::string(env.get(keys::REQUEST_URI)));
  if (test == "long_header") return text(value_of(env, "HTTP_X_LONG"));
  if (test == "delayed") {
    return Response::delayed([](Responder r) { r.respond(Response::text(200, "delayed")); });
  }
  if (test == "delayed_thread") {
    return Response::delayed([](Responder r) {
      std::thread([r] {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        r.respond(Response::text(200, "from another thread"));
      }).detach();
    });
  }
  if (test == "writer") {
    return Response::delayed([](Responder r) {
      auto w = r.start(200, {{"Content-Type", "text/plain"}});
      std::thread([w] {
        for (const char* s : {"one ", "two ", "three"}) w->write(s);
        w->close();
      }).detach();
    });
  }
  if (test == "echo") {
    Response r = text(env.input().read_all());
    return r;
  }
  if (test == "not_found") return Response::error(404);
  if (test == "input_seek") {
    std::string a = env.input().read_all();
    if (env.input().seekable()) {
      env.input().rewind();
      std::string b = env.input().read_all();
      if (a != b) return text("rewind mismatch");
    }
    return text(a);
  }
  if (test == "authorization") return text(value_of(env, keys::HTTP_AUTHORIZATION));

  // --- HTTP/1.1 behaviour ---
  if (test == "noread") return text("did not read the body");
  if (test == "chunked_response") {
    Response r = text("");
    r.body = StreamPtr(std::make_shared<ChunkStream>(std::vector<std::string>{"chunk1 ", "chunk2 ", "chunk3"}, ""));
    return r;
  }
  if (test == "head") return text("a body HEAD must not carry");
  // RES-15/ADP-17: trailers after a stream's or a writer's body ("trailers_big": 256 kB of 'x' first).
  if (test == "trailers_stream" || test == "trailers_big") {
    Response r = text("");
    r.headers.add("Trailer", "grpc-status, Server-Timing");
    std::vector<std::string> chunks{"one ", "two ", "three"};
    if (test == "trailers_big") chunks.assign(64, std::string(4096, 'x'));
    auto i = std::make_shared<std::size_t>(0);
    r.body = make_stream([i, chunks]() -> std::optional<std::string> {
      if (*i == chunks.size()) return std::nullopt;
      return chunks[(*i)++];
    }, {}, [] { return Headers{{"grpc-status", "0"}, {"Server-Timing", "app;dur=1"}}; });
    return r;
  }
  // Trailers-only (gRPC's form of an error): an empty stream or writer body that ends with trailers.
  if (test == "trailers_only") {
    Response r = text("");
    r.headers.add("Trailer", "grpc-status");
    r.body = make_stream([]() -> std::optional<std::string> { return std::nullopt; }, {},
                         [] { return Headers{{"grpc-status", "5"}}; });
    return r;
  }
  if (test == "trailers_only_writer") {
    return Response::delayed([](Responder r) {
      auto w = r.start(200, {{"Content-Type", "text/plain"}, {"Trailer", "grpc-status"}});
      w->set_trailers({{"grpc-status", "5"}});
      w->close();
    });
  }
  if (test == "trailers_writer") {
    return Response::delayed([](Responder r) {
      auto w = r.start(200, {{"Content-Type", "text/plain"}, {"Trailer", "grpc-status, Server-Timing"}});
      std::thread([w] {
        for (const char* s : {"one ", "two ", "three"}) w->write(s);
        w->set_trailers({{"grpc-status", "0"}, {"Server-Timing", "app;dur=1"}});
        w->close();
      }).detach();
    });
  }
  if (test == "cleanup") {
    auto* handlers = env.object<CleanupHandlers>(keys::x::cleanup_handlers);
    if (!handlers) return text("no csgix.cleanup");
    std::string m = files.marker("cleanup", env.get("HTTP_X_TOKEN"));
    handlers->add([m](Env&) { Files::write(m, "ran"); });
    return text("registered");
  }
  if (test == "cleanup_check") {
    std::string m = files.marker("cleanup", env.get("HTTP_X_TOKEN"));
    return text(::access(m.c_str(), F_OK) == 0 ? "ran" : "not run");
  }
  if (test == "sleep") {  // holds its thread: several at once show the app pool serving streams in parallel
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    return text("slept");
  }
  if (test == "informational") {
    auto* info = env.object<Informational>(keys::x::informational);
    bool sent = info && info->send(103, Headers{{"Link", "</style.css>; rel=preload; as=style"}});
    return text(sent ? "sent 103" : "no 103");
  }
  if (test == "hijack") {
    auto* io = env.object<Hijack>(keys::x::io);
    if (!io) return text("no csgix.io");
    std::string pending;
    int fd = io->take(pending);
    if (fd < 0) return text("take failed");
    std::string out = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: echo\r\nConnection: Upgrade\r\n\r\n";
    // Echo one line, then close: a stand-in for a WebSocket session.
    std::string line = pending;
    char c;
    while (line.find('\n') == std::string::npos && ::read(fd, &c, 1) == 1) line += c;
    out += "echo: " + line;
    ::write(fd, out.data(), out.size());
    ::close(fd);
    return text("ignored after take");
  }
  // --- adapter rules (spec §7) ---
  if (test == "delayed_dropped") return Response::delayed([](Responder) {});  // ADP-11
  if (test == "delayed_throws") {
    return Response::delayed([](Responder) { throw std::runtime_error("conformance: delayed callable threw"); });
  }
  if (test == "stream_throws_first") {  // ADP-5: nothing sent yet, so a 500
    Response r = text("");
    r.body = make_stream([]() -> std::optional<std::string> { throw std::runtime_error("conformance: next() threw"); });
    return r;
  }
  if (test == "writer_gone") {  // ADP-4: write() returns false once the client has gone
    std::string m = files.marker("writer-false", env.get("HTTP_X_TOKEN"));
    return Response::delayed([m](Responder r) {
      auto w = r.start(200, {{"Content-Type", "text/plain"}});
      std::thread([w, m] {
        std::string chunk(16384, 'w');
        for (int i = 0; i < 3000; ++i) {  // at most ~15 s
          if (!w->write(chunk)) {
            Files::write(m, "false");
            break;
          }
          std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
        w->close();
      }).detach();
    });
  }
  if (test == "writer_gone_check") {
    std::string m = files.marker("writer-false", env.get("HTTP_X_TOKEN"));
    return text(::access(m.c_str(), F_OK) == 0 ? "false seen" : "not seen");
  }
  if (test == "writer_dropped") {  // ADP-4: dropped without close(): connection closed, no final chunk
    return Response::delayed([](Responder r) {
      auto w = r.start(200, {{"Content-Type", "text/plain"}});
      w->write("partial");
    });
  }
  if (test == "mount") return admin_map()(env);  // canonical paths (ENV-5)
  if (test == "lint_off") return text("lint");
  if (test == "body_limit_key") return text(value_of(env, keys::x::request_body_limit));
  return Response::error(404, "unknown conformance test '" + std::string(test) + "'");
}

// ADP-13: bodies that break the Content-Length they declare. They break RES-13 on purpose, so they are
// answered outside Lint (which would stop them at the first byte past the length). The short ones
// declare more than 1 MiB, as the Python mirror must (csgi pulls a WSGI generator to its end below that).
constexpr std::string_view kForged = "HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nforged";

Response length_breaker(std::string_view test) {
  bool over = test.ends_with("_over");
  std::string declared = over ? "5" : std::to_string(2u << 20);
  std::vector<std::string> chunks{"hel", "lo"};
  if (over) chunks.emplace_back(kForged);
  Headers h{{"Content-Type", "text/plain"}, {"Content-Length", declared}};
  if (test.starts_with("length_writer")) {
    return Response::delayed([h, chunks](Responder r) {
      auto w = r.start(200, h);
      for (const auto& c : chunks)
        if (!w->write(c)) break;
      w->close();
    });
  }
  Response r;
  r.headers = h;
  r.body = StreamPtr(std::make_shared<ChunkStream>(chunks, std::string()));
  return r;
}

// The small file with fixed validators (its bytes never change), for Range and If-Range.
constexpr const char* kRangedEtag = "\"csgi-conformance-small\"";
constexpr const char* kRangedLastModified = "Mon, 02 Jan 2006 15:04:05 GMT";

App make_conformance_app(const AppArgs& args) {
  auto files = std::make_shared<Files>(args.empty() ? std::string() : args.front());
  // Range is the app's (ADP-16): the file_ranged case goes through csgi::mw::Ranges, file_fd does not.
  App ranged = wrap<mw::Ranges>([files](Env&) {
    return Response{200,
                    {{"Content-Type", "application/octet-stream"},
                     {"ETag", kRangedEtag},
                     {"Last-Modified", kRangedLastModified}},
                    FileBody::open(files->small)};
  });
  // Every request runs under Lint, so the adapter's env and the responses are checked too (ADP-7).
  App linted = wrap<Lint>([files, ranged](Env& env) {
    if (env.get("HTTP_X_CSGI_TEST") == "file_ranged") return ranged(env);
    return dispatch(*files, env);
  });
  return [linted](Env& env) {
    std::string_view test = env.get("HTTP_X_CSGI_TEST");
    if (test.starts_with("length_") && (test.ends_with("_over") || test.ends_with("_short")))
      return length_breaker(test);
    return linted(env);
  };
}

}  // namespace

CSGI_APP(make_conformance_app)
