#pragma once
// Test apps producing each body kind, shared by the tests of access, auth_basic, cascade, cgi_bin,
// error_document, http_exceptions, request_id, reverse_proxy, runtime, server_status and url_map.
#include <string>
#include <utility>

#include "csgi/core/app.hpp"
#include "csgi/core/lint.hpp"
#include "csgi/core/test_client.hpp"

namespace csgi::mwtest {

enum class Kind { complete, stream, delayed_complete, delayed_writer };
inline constexpr Kind all_kinds[] = {Kind::complete, Kind::stream, Kind::delayed_complete, Kind::delayed_writer};

inline const char* name(Kind k) {
  switch (k) {
    case Kind::complete: return "complete";
    case Kind::stream: return "stream";
    case Kind::delayed_complete: return "delayed complete";
    default: return "delayed writer";
  }
}

/// Lint around an app.
inline App lint(App a) { return wrap<Lint>(std::move(a)); }

/// An app answering `status` with `body` as the given body kind.
inline App answer_raw(Kind kind, int status, std::string body, Headers extra = {}) {
  return [=](Env&) -> Response {
    Headers h = extra;
    if (!status_has_no_body(status) && !h.has("Content-Type")) h.add("Content-Type", "text/plain");
    std::string b = status_has_no_body(status) ? std::string() : body;
    switch (kind) {
      case Kind::complete: return Response{status, h, b};
      case Kind::stream: {
        auto parts = std::make_shared<std::vector<std::string>>();
        for (std::size_t i = 0; i < b.size(); i += 3) parts->push_back(b.substr(i, 3));
        auto at = std::make_shared<std::size_t>(0);
        return Response{status, h,
                        make_stream([parts, at]() -> std::optional<std::string> {
                          if (*at >= parts->size()) return std::nullopt;
                          return (*parts)[(*at)++];
                        })};
      }
      case Kind::delayed_complete:
        return Response::delayed([=](Responder r) { r.respond(Response{status, h, b}); });
      default:
        return Response::delayed([=](Responder r) {
          auto w = r.start(status, h);
          for (std::size_t i = 0; i < b.size(); i += 4) w->write(std::string_view(b).substr(i, 4));
          w->close();
        });
    }
  };
}

/// The same, wrapped in Lint.
inline App answer(Kind kind, int status, std::string body, Headers extra = {}) {
  return lint(answer_raw(kind, status, std::move(body), std::move(extra)));
}

}  // namespace csgi::mwtest
