#pragma once
/// ASGI http scope → csgi env, by the rules of the WSGI bridge (the PEP 3333 environ uvicorn's and
/// Starlette's WSGI adapters build, and what csgi.App makes of an environ), read straight from the scope
/// dict; and the ASGI form of a response head. All need the GIL but AsgiScope's lookups.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common.hpp"
#include "csgi/core/env.hpp"
#include "csgi/core/response.hpp"

namespace csgi::python {

/// The env of an ASGI http scope, made when the app first uses an entry (EnvSource). start() checks the
/// scope's types (and throws as the ASGI types are broken) and keeps views of its values and a reference to
/// each object they point into; lookups then need no GIL, so the app may read its env on any thread. The
/// CGI keys are made one by one as they are read; the first header key read (HTTP_*, CONTENT_*, or
/// SERVER_NAME / SERVER_PORT from Host when the scope has no "server") makes the whole env. Every key but
/// csgi.input and csgi.errors (the adapter's).
class AsgiScope final : public EnvSource {
public:
  /// Starts a request on `scope` and attaches to `env`. Needs the GIL; throws for a scope that breaks the
  /// ASGI types.
  void start(Env& env, PyObject* scope);
  /// Drops the request (after the env was cleared); needs the GIL.
  void reset() noexcept;

  bool fetch(Env& env, std::string_view key) noexcept override;
  void fetch_all(Env& env) noexcept override;
  bool forget(std::string_view key) noexcept override;

private:
  struct Address {
    bool given = false;
    std::string_view host;
    std::string_view port;  // a view into port_text when the port was an int
    char port_text[24];
  };
  bool lookup(Env& env, int fixed, Value& out) noexcept;
  bool forgotten(std::string_view key) const noexcept;
  PyObject* hold(PyObject* o);
  bool held_bytes(PyObject* b, std::string_view& out);
  std::string_view utf8(PyObject* s, const char* what);
  void address(PyObject* pair, Address& out);
  void add_headers(Env& env);
  void server_from_host(Env& env);

  std::vector<PyObject*> held_;  // owned: the objects the views point into
  std::string_view method_, path_, root_, query_, raw_, version_, scheme_;
  Address server_, client_;
  std::vector<std::pair<std::string_view, std::string_view>> headers_;
  std::uint32_t fixed_forgotten_ = 0;
  std::vector<std::string> forgotten_;  // erased keys outside the fixed ones (headers)
  std::unique_ptr<Env> scratch_;         // header keys named for forget(), which has no env
};

/// True for a GET or HEAD whose framing says it has no body (HTTP/1 without Content-Length or
/// Transfer-Encoding, RFC 9112 6.3, or with Content-Length 0): the bridge need not receive() first.
bool scope_has_no_body(PyObject* scope);
/// ASGI response headers: (lower-case name, value) pairs of bytes, Content-Length replaced by `length`.
PyObject* asgi_headers(const Headers& headers, std::optional<std::uint64_t> length);
/// ASGI trailer fields: (lower-case name, value) pairs of bytes, without the fields RES-15 forbids or
/// that break RES-2/RES-4 (dropped, ADP-17).
PyObject* asgi_trailers(const Headers& trailers);
/// A new bytes object (throws on failure).
PyObject* bytes_object(std::string_view s);
/// bytes or bytearray contents; false for anything else.
bool bytes_of(PyObject* b, std::string_view& out) noexcept;

}  // namespace csgi::python
