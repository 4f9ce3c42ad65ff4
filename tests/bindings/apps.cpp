// App library used by the Python binding tests and bench: `csgi.load_app(lib, [name, ...])`.
//   hello            "Hello, World!"
//   echo             method, paths, query, selected headers and the request body, one per line
//   stream           five chunks through a StreamPtr
//   delayed          a delayed response answered at once
//   writer           a delayed response streamed through a Writer from another thread
//   late_env FILE    a Writer streamed until the host stops reading; then writes PATH_INFO and the body to FILE
//   late_key KEY     a stream of one chunk: the env's KEY, read when the host asks for the chunk
//   file PATH [OFF LEN]  a FileBody
//   shared           SharedBytes body
//   work MS          sleeps MS milliseconds (I/O-like work), then "done"
//   spin MS          burns MS milliseconds of CPU, then "done"
//   error            throws std::runtime_error
//   bad              throws csgi::BadRequest
//   status N         an empty response with status N
//   stack            a Builder stack: a header-adding layer around mounts /hello, /echo, /stream
//   reader FILE      reads the body in 1 KiB pieces; writes "read N" or "error: WHAT" to FILE
//   endless FILE     a 1 KiB-chunk stream of at most 100000 chunks; close() writes "closed after N" to FILE
//   fail_mid         a stream that yields one chunk, then throws
//   dump             every env entry, sorted, "key=value" (booleans <true>/<false>, integers <int N>, objects
//                    <object>), then "lint=ok" or Lint's complaint
//   envops           reads, erases, sets and emplaces keys (HTTP_X_A, HTTP_X_GONE, HTTP_X_SET, HTTP_X_KEEP,
//                    csgi.version), then iterates: one "name=result" line each
//   erase_first      before reading any entry erases SERVER_NAME, REMOTE_ADDR, HTTP_X_GONE and CONTENT_TYPE,
//                    sets SERVER_PORT and HTTP_X_SET, emplaces REQUEST_METHOD; then the erase results and dump
#include <algorithm>
#include <chrono>
#include <fstream>
#include <map>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

#include "csgi/core/app_library.hpp"
#include "csgi/core/builder.hpp"
#include "csgi/core/http_error.hpp"
#include "csgi/core/lint.hpp"
#include "csgi/core/on_response.hpp"

namespace {

csgi::Response hello(csgi::Env&) { return csgi::Response::text(200, "Hello, World!"); }

csgi::Response echo(csgi::Env& env) {
  std::string out;
  for (auto k : {"REQUEST_METHOD", "SCRIPT_NAME", "PATH_INFO", "QUERY_STRING", "REQUEST_URI", "CONTENT_TYPE",
                 "CONTENT_LENGTH", "HTTP_X_TEST", "HTTP_COOKIE", "SERVER_PROTOCOL", "csgi.url_scheme"})
    out.append(k).append("=").append(env.get(k)).append("\n");
  out.append("body=").append(env.input().read_all(1 << 24));
  csgi::Response r = csgi::Response::text(200, std::move(out));
  r.headers.add("X-Echo", "1");
  return r;
}

csgi::Response stream(csgi::Env&) {
  csgi::Response r;
  r.headers.add("Content-Type", "text/plain");
  auto i = std::make_shared<int>(0);
  r.body = csgi::make_stream([i]() -> std::optional<std::string> {
    if (*i >= 5) return std::nullopt;
    return "chunk" + std::to_string((*i)++) + "\n";
  });
  return r;
}

csgi::Response delayed(csgi::Env&) {
  return csgi::Response::delayed([](csgi::Responder r) { r.respond(csgi::Response::text(200, "delayed")); });
}

csgi::Response writer(csgi::Env&) {
  return csgi::Response::delayed([](csgi::Responder r) {
    std::thread([r] {
      auto w = r.start(200, {{"Content-Type", "text/plain"}});
      for (int i = 0; i < 5; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
        if (!w->write("part" + std::to_string(i) + "\n")) break;
      }
      w->close();
    }).detach();
  });
}

}  // namespace

std::string entry_line(const csgi::Env::Entry& e) {
  std::string line(e.key);
  line += '=';
  switch (e.value.type()) {
    case csgi::Value::Type::text: line += e.value.text(); break;
    case csgi::Value::Type::boolean: line += e.value.truthy() ? "<true>" : "<false>"; break;
    case csgi::Value::Type::integer: line += "<int " + std::to_string(e.value.integer()) + ">"; break;
    case csgi::Value::Type::object: line += "<object>"; break;
  }
  return line;
}

csgi::Response dump(csgi::Env& env) {
  std::vector<std::string> lines;
  for (const auto& e : env) lines.push_back(entry_line(e));
  std::sort(lines.begin(), lines.end());
  std::string lint = "ok";
  try {
    csgi::Lint::check_env(env);
  } catch (const std::exception& e) {
    lint = e.what();
  }
  std::string out;
  for (const std::string& l : lines) out.append(l).append("\n");
  return csgi::Response::text(200, out + "lint=" + lint);
}

csgi::Response envops(csgi::Env& env) {
  std::string out;
  auto line = [&](std::string_view name, std::string_view result) { out.append(name).append("=").append(result).append("\n"); };
  auto yes = [](bool b) { return b ? "1" : "0"; };
  line("a", env.get("HTTP_X_A"));
  line("none", yes(env.contains("HTTP_X_NONE")));
  line("erased", yes(env.erase("HTTP_X_GONE")));
  line("gone", yes(env.contains("HTTP_X_GONE")));
  line("erased_again", yes(env.erase("HTTP_X_GONE")));
  env.set("HTTP_X_SET", "new");
  line("set", env.get("HTTP_X_SET"));
  auto [keep, keep_inserted] = env.emplace("HTTP_X_KEEP", csgi::Value::of_text("mine"));
  line("keep", std::string(keep->text()) + (keep_inserted ? " inserted" : " kept"));
  auto [fresh, fresh_inserted] = env.emplace("X_NEW", csgi::Value::of_text("mine"));
  line("new", std::string(fresh->text()) + (fresh_inserted ? " inserted" : " kept"));
  line("version_erased", yes(env.erase(csgi::keys::version)));
  line("version", yes(env.contains(csgi::keys::version)));
  line("input", yes(env.object<csgi::Input>(csgi::keys::input) != nullptr));
  line("errors", yes(env.object<csgi::ErrorStream>(csgi::keys::errors) != nullptr));
  line("multithread", yes(env.flag(csgi::keys::multithread)));
  line("streaming", yes(env.flag(csgi::keys::streaming)));
  std::map<std::string, std::string> seen;
  bool dup = false;
  for (const auto& e : env) dup |= !seen.emplace(std::string(e.key), entry_line(e)).second;
  line("size", std::to_string(env.size()));
  line("dup", yes(dup));
  for (auto k : {"HTTP_X_A", "HTTP_X_B", "HTTP_X_GONE", "HTTP_X_SET", "HTTP_X_KEEP", "X_NEW", "csgi.version"})
    line(std::string("iter ") + k, seen.count(k) ? seen[k] : "-");
  line("b", env.get("HTTP_X_B"));
  return csgi::Response::text(200, out);
}

csgi::App make_app(const csgi::AppArgs& args) {
  std::string name = args.empty() ? "hello" : args[0];
  auto arg = [&](std::size_t i, std::string fallback = "") { return args.size() > i ? args[i] : fallback; };
  if (name == "hello") return hello;
  if (name == "echo") return echo;
  if (name == "dump") return dump;
  if (name == "envops") return envops;
  if (name == "stream") return stream;
  if (name == "delayed") return delayed;
  if (name == "writer") return writer;
  if (name == "late_env") {  // writes until the host stops reading, then reads the env into file arg(1)
    std::string path = arg(1);
    return [path](csgi::Env& env) {
      return csgi::Response::delayed([path, &env](csgi::Responder r) {
        std::thread([r, path, &env] {
          auto w = r.start(200, {{"Content-Type", "text/plain"}});
          for (int i = 0; i < 1000 && w->write("part\n"); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
          std::this_thread::sleep_for(std::chrono::milliseconds(50));
          std::ofstream(path) << env.get("PATH_INFO") << ' ' << env.input().read_all();
          w->close();
        }).detach();
      });
    };
  }
  if (name == "erase_first") {
    return [](csgi::Env& env) {
      std::string erased;
      for (auto k : {"SERVER_NAME", "REMOTE_ADDR", "HTTP_X_GONE", "CONTENT_TYPE", "HTTP_X_NONE"})
        erased.append(k).append(env.erase(k) ? "=erased\n" : "=absent\n");
      env.set("SERVER_PORT", "1");
      env.set("HTTP_X_SET", "mine");
      env.emplace("REQUEST_METHOD", csgi::Value::of_text("X"));
      csgi::Response r = dump(env);
      r.body = erased + std::get<std::string>(r.body);
      return r;
    };
  }
  if (name == "late_key") {
    return [key = arg(1)](csgi::Env& env) {
      csgi::Response r;
      auto done = std::make_shared<bool>(false);
      r.body = csgi::make_stream([&env, key, done]() -> std::optional<std::string> {
        if (std::exchange(*done, true)) return std::nullopt;
        return std::string(env.get(key, "<absent>"));
      });
      return r;
    };
  }
  if (name == "later") {  // a delayed response answered from a thread of its own after arg(1) ms
    int ms = std::stoi(arg(1, "100"));
    return [ms](csgi::Env&) {
      return csgi::Response::delayed([ms](csgi::Responder r) {
        std::thread([r, ms] {
          std::this_thread::sleep_for(std::chrono::milliseconds(ms));
          r.respond(csgi::Response::text(200, "later"));
        }).detach();
      });
    };
  }
  if (name == "shared") {
    auto bytes = std::make_shared<const std::string>("shared bytes");
    return [bytes](csgi::Env&) {
      csgi::Response r;
      r.headers.add("Content-Type", "text/plain");
      r.body = csgi::SharedBytes(bytes);
      return r;
    };
  }
  if (name == "file") {
    std::string path = arg(1);
    std::uint64_t off = std::stoull(arg(2, "0"));
    std::uint64_t len = args.size() > 3 ? std::stoull(args[3]) : csgi::FileBody::npos;
    return [path, off, len](csgi::Env&) {
      csgi::Response r;
      r.headers.add("Content-Type", "application/octet-stream");
      r.body = csgi::FileBody::open(path, off, len);
      return r;
    };
  }
  if (name == "work" || name == "spin") {
    int ms = std::stoi(arg(1, "10"));
    bool spin = name == "spin";
    return [ms, spin](csgi::Env&) {
      auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
      if (spin) {
        volatile unsigned x = 0;
        while (std::chrono::steady_clock::now() < until) x = x + 1;
      } else {
        std::this_thread::sleep_until(until);
      }
      return csgi::Response::text(200, "done");
    };
  }
  if (name == "trailers") {
    // trailers <stream|writer>: "one two three" then grpc-status 0 and a Content-Type (forbidden, dropped)
    std::string kind = arg(1, "stream");
    csgi::Headers t{{"grpc-status", "0"}, {"Content-Type", "text/html"}};
    return [kind, t](csgi::Env&) {
      csgi::Headers h{{"Content-Type", "text/plain"}, {"Trailer", "grpc-status"}};
      if (kind == "writer") {
        return csgi::Response::delayed([h, t](csgi::Responder r) {
          auto w = r.start(200, h);
          for (const char* p : {"one ", "two ", "three"})
            if (!w->write(p)) break;
          w->set_trailers(t);
          w->close();
        });
      }
      auto i = std::make_shared<int>(0);
      csgi::Response r;
      r.headers = h;
      r.body = csgi::make_stream([i]() -> std::optional<std::string> {
        static const char* pieces[] = {"one ", "two ", "three"};
        if (*i == 3) return std::nullopt;
        return pieces[(*i)++];
      }, {}, [t] { return t; });
      return r;
    };
  }
  if (name == "framed") {
    // framed <stream|writer|text> <declared Content-Length> <pieces...> (ADP-13)
    std::string kind = arg(1, "stream"), declared = arg(2, "5");
    auto first = args.size() > 3 ? args.begin() + 3 : args.end();
    auto pieces = std::make_shared<std::vector<std::string>>(first, args.end());
    return [kind, declared, pieces](csgi::Env&) {
      csgi::Headers h{{"Content-Type", "text/plain"}, {"Content-Length", declared}};
      if (kind == "writer") {
        return csgi::Response::delayed([h, pieces](csgi::Responder r) {
          auto w = r.start(200, h);
          for (const auto& p : *pieces)
            if (!w->write(p)) break;
          w->close();
        });
      }
      csgi::Response r;
      r.headers = h;
      if (kind == "text") {
        std::string all;
        for (const auto& p : *pieces) all += p;
        r.body = all;
        return r;
      }
      auto i = std::make_shared<std::size_t>(0);
      r.body = csgi::make_stream([i, pieces]() -> std::optional<std::string> {
        if (*i == pieces->size()) return std::nullopt;
        return (*pieces)[(*i)++];
      });
      return r;
    };
  }
  if (name == "error") return [](csgi::Env&) -> csgi::Response { throw std::runtime_error("boom from C++"); };
  if (name == "bad") return [](csgi::Env&) -> csgi::Response { throw csgi::BadRequest("bad input"); };
  if (name == "status") {
    int status = std::stoi(arg(1, "204"));
    return [status](csgi::Env&) {
      csgi::Response r;
      r.status = status;
      return r;
    };
  }
  if (name == "stack") {
    csgi::Layer tag = [](csgi::App next) -> csgi::App {
      return [next](csgi::Env& env) {
        return csgi::on_response(next(env), [](csgi::Response& r) -> csgi::BodyFilter {
          r.headers.add("X-Stack", "1");
          return {};
        });
      };
    };
    return csgi::Builder().use(tag).mount("/hello", hello).mount("/echo", echo).mount("/stream", stream).build();
  }
  if (name == "reader") {
    std::string path = arg(1);
    return [path](csgi::Env& env) {
      std::size_t total = 0;
      char buf[1024];
      try {
        for (std::size_t n; (n = env.input().read(buf, sizeof buf)) > 0;) total += n;
      } catch (const std::exception& e) {
        std::ofstream(path) << "error: " << e.what();
        throw;
      }
      std::ofstream(path) << "read " << total;
      return csgi::Response::text(200, "read " + std::to_string(total));
    };
  }
  if (name == "endless") {
    std::string path = arg(1);
    return [path](csgi::Env&) {
      csgi::Response r;
      r.headers.add("Content-Type", "application/octet-stream");
      auto n = std::make_shared<int>(0);
      r.body = csgi::make_stream(
          [n]() -> std::optional<std::string> {
            if (*n >= 100000) return std::nullopt;
            ++*n;
            return std::string(1024, 'e');
          },
          [n, path] { std::ofstream(path) << "closed after " << *n; });
      return r;
    };
  }
  if (name == "fail_mid") {
    return [](csgi::Env&) {
      csgi::Response r;
      r.headers.add("Content-Type", "text/plain");
      auto n = std::make_shared<int>(0);
      r.body = csgi::make_stream([n]() -> std::optional<std::string> {
        if ((*n)++ == 0) return std::string("first chunk\n");
        throw std::runtime_error("stream failed mid-body");
      });
      return r;
    };
  }
  throw std::invalid_argument("unknown test app " + name);
}

CSGI_APP(make_app)
