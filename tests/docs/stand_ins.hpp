#pragma once
// Names the documentation's examples use without defining them: the app being wrapped, the Builder
// being filled, handlers and options written elsewhere on the page. Declared only: the examples are
// compiled with -fsyntax-only, never linked. An example that needs a name not listed here defines it.
#include <string>

namespace mw = csgi::mw;  // docs/middleware.md abbreviates csgi::mw in its long stack

extern csgi::Builder builder;
extern csgi::App app, site, api, admin, a, b, static_files, dynamic_app, fallback;
extern csgi::Env env;

csgi::App make_app();
csgi::Response list_users(csgi::Env&);
csgi::Response create_user(csgi::Env&);
csgi::Response show_user(csgi::Env&);
csgi::Response update_user(csgi::Env&);
csgi::Response delete_user(csgi::Env&);
csgi::Response serve_file(csgi::Env&);

extern csgi::mw::ReverseProxyOptions proxy_opts;
extern csgi::mw::AccessLogOptions log_opts;
extern csgi::mw::StaticPrefixOptions static_opts;
