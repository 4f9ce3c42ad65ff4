#pragma once
/// A PSGI app as a csgi app. The Perl interpreter is driven from one thread of its process (the perl
/// thread, started on the first request in each process, so a master that loaded the app before forking
/// its workers never starts one); the app csgi calls answers with a delayed response and hands the request
/// to that thread through a queue, so no io thread waits on Perl. On the perl thread the env becomes a
/// PSGI env hash and CSGI::_handle (lib/CSGI.pm) calls the app and drives its response through the
/// CSGI::Request, CSGI::Writer, CSGI::Input and CSGI::Errors objects defined here (spec/psgi.md).
#include <memory>

#include "csgi/core/app.hpp"

typedef struct interpreter PerlInterpreter;
struct sv;

namespace csgi::perl {

/// `interp` runs `app` (a PSGI app: a CODE reference, or anything callable as one). `multiprocess`:
/// the app is served by several worker processes (psgi.multiprocess). The host keeps its own reference to
/// `app`; the interpreter must outlive every copy of the returned app. When the last copy goes, the perl
/// thread of this process finishes the requests handed to it and ends before the destructor returns, so
/// the thread that made the interpreter may use it again (CSGI::serve).
App psgi_app(PerlInterpreter* interp, struct sv* app, bool multiprocess);

/// Defines CSGI::_load_app and the XSUBs of the CSGI::App and CSGI::Body classes in `interp`: a csgi app
/// library as a PSGI app (from_csgi.cpp; CSGI->load_app in lib/CSGI.pm).
void define_app_classes(PerlInterpreter* interp);

/// Defines the XSUBs of the CSGI::Request, CSGI::Writer, CSGI::Input and CSGI::Errors classes in `interp`.
void define_request_classes(PerlInterpreter* interp);

}  // namespace csgi::perl
