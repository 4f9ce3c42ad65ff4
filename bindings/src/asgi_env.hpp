#pragma once
/// ASGI http scope → csgi env, by the rules of the WSGI bridge (the PEP 3333 environ uvicorn's and
/// Starlette's WSGI adapters build, and what csgi.App makes of an environ), read straight from the scope
/// dict; and the ASGI form of a response head. All need the GIL.
#include <cstdint>
#include <optional>
#include <string>

#include "common.hpp"
#include "csgi/core/env.hpp"
#include "csgi/core/response.hpp"

namespace csgi::python {

/// Fills `env` from `scope` (every key but csgi.input and csgi.errors); REQUEST_URI points into
/// `request_uri`. Throws for a scope that breaks the ASGI types.
void scope_to_env(Env& env, std::string& request_uri, PyObject* scope);
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
