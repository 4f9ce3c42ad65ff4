#pragma once
// environ["csgix.session"] of a WSGI app, scope["csgix.session"] of an ASGI one, behind csgi.mw.sessions:
// the request's csgi::Session as a Python mapping of str to str (values kept as UTF-8), with the session's
// id, rotate(), expire() and csrf_token(). It reads and writes the C++ session in place, so the middleware
// saves what the app left when the response head goes out; the bridge ends the view before that (WSGI:
// when the app returns; ASGI: at http.response.start) and any later use raises RuntimeError.
#include "common.hpp"
#include "csgi/core/env.hpp"

namespace csgi::python {

/// A view of the session of `env` (which holds csgix.session).
py::object session_view(Env& env);
/// Ends a view made by session_view(); GIL held.
void end_session_view(py::handle view) noexcept;

/// Puts a session view in a WSGI environ for the call of the app and ends it when the call is over.
class SessionScope {
public:
  SessionScope(bool has_session, Env& env, PyObject* environ);
  ~SessionScope();
  SessionScope(const SessionScope&) = delete;
  SessionScope& operator=(const SessionScope&) = delete;

private:
  py::object view_;
};

}  // namespace csgi::python
