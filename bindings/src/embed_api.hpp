#pragma once
/// The C entry points the extension module csgi._csgi offers to a program that embeds Python and serves
/// a WSGI app on a csgi adapter (`csgi serve --wsgi`, `csgi-fcgi --wsgi`; embed.cpp). Published as the
/// capsule `csgi._csgi._embed_api`, so the GIL bookkeeping (gil.cpp's thread-locals) and the WSGI bridge
/// stay in one copy: the extension's.
#include "csgi/core/app.hpp"

#define CSGI_PY_EMBED_API_VERSION 2
#define CSGI_PY_EMBED_CAPSULE "csgi._csgi._embed_api"

extern "C" {
struct csgi_python_embed_api {
  int version;                  // CSGI_PY_EMBED_API_VERSION
  unsigned long core_layout;    // csgi::detail::core_layout_tag() of the extension
  unsigned long app_size;       // sizeof(csgi::App)
  /// Imports "module:attr" (as gunicorn; the current directory first on sys.path) and stores it in *out
  /// as a csgi::App: a csgi.App as it is, any other WSGI callable through the WSGI bridge. Needs the GIL.
  /// Returns false with a Python error set.
  bool (*load)(const char* spec, csgi::App* out);
  /// Releases the GIL held by the calling (main) thread for the time it serves; the adapter's fork()s
  /// from this thread (prefork masters) are made safe for the interpreter (PyOS_BeforeFork/AfterFork).
  void (*release_for_serving)();
  /// Takes the GIL back on the thread that released it (before Py_FinalizeEx). No-op when not released.
  void (*reacquire)();
  /// As load, for an ASGI app (`csgi serve --asgi`): its event loop thread and lifespan startup start
  /// now when `workers` is 0, else in each forked worker (a failing startup ends the worker with status 3).
  bool (*load_asgi)(const char* spec, unsigned workers, csgi::App* out);
};
}
