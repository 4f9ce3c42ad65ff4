#pragma once
// Helpers for the file/caching/compression/logging middleware tests: temp dirs, Lint wrapping, apps that
// answer with each body kind.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "csgi/core/app.hpp"
#include "csgi/core/lint.hpp"
#include "csgi/core/test_client.hpp"

namespace mwtest {

namespace fs = std::filesystem;

/// A fresh directory under $TMPDIR, removed with everything in it at the end of the scope.
struct TempDir {
  fs::path path;
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "csgi-mw-XXXXXX").string();
    if (!::mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
    path = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string str() const { return path.string(); }
  fs::path write(const std::string& rel, const std::string& content) const {
    fs::path p = path / rel;
    fs::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << content;
    return p;
  }
};

inline csgi::App lint(csgi::App app) { return csgi::wrap<csgi::Lint>(std::move(app)); }

/// Lint on both sides of a middleware built by `make` around `app`.
template <class Make>
csgi::App linted(csgi::App app, Make make) {
  return lint(make(lint(std::move(app))));
}

enum class Kind { string, shared, file, stream, writer, delayed_complete };
inline const char* kind_name(Kind k) {
  switch (k) {
    case Kind::string: return "string";
    case Kind::shared: return "shared";
    case Kind::file: return "file";
    case Kind::stream: return "stream";
    case Kind::writer: return "writer";
    default: return "delayed_complete";
  }
}
inline std::vector<Kind> all_kinds() {
  return {Kind::string, Kind::shared, Kind::file, Kind::stream, Kind::writer, Kind::delayed_complete};
}

/// An app answering `status`, `headers` and `body` with the body kind `kind`, split into `chunks`
/// pieces for streams and writers. `file_path` must hold a file with `body` for Kind::file.
inline csgi::App body_app(Kind kind, int status, csgi::Headers headers, std::string body, std::string file_path = {},
                          std::size_t chunks = 3) {
  return [=](csgi::Env&) -> csgi::Response {
    auto pieces = [body, chunks] {
      std::vector<std::string> v;
      std::size_t step = body.size() / chunks + 1;
      for (std::size_t i = 0; i < body.size(); i += step) v.push_back(body.substr(i, step));
      return v;
    };
    csgi::Response r;
    r.status = status;
    r.headers = headers;
    switch (kind) {
      case Kind::string: r.body = body; break;
      case Kind::shared: r.body = std::make_shared<const std::string>(body); break;
      case Kind::file: r.body = csgi::FileBody::open(file_path); break;
      case Kind::stream: {
        auto v = std::make_shared<std::vector<std::string>>(pieces());
        auto i = std::make_shared<std::size_t>(0);
        r.body = csgi::make_stream([v, i]() -> std::optional<std::string> {
          if (*i == v->size()) return std::nullopt;
          return (*v)[(*i)++];
        });
        break;
      }
      case Kind::writer: {
        auto v = pieces();
        r.body = csgi::Delayed([status, headers, v](csgi::Responder res) {
          auto w = res.start(status, headers);
          for (const std::string& s : v) w->write(s);
          w->close();
        });
        break;
      }
      case Kind::delayed_complete: {
        r.body = csgi::Delayed([status, headers, body](csgi::Responder res) {
          csgi::Response inner;
          inner.status = status;
          inner.headers = headers;
          inner.body = body;
          res.respond(std::move(inner));
        });
        break;
      }
    }
    return r;
  };
}

}  // namespace mwtest
