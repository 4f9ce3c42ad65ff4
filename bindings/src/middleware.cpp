// csgi.static() and csgi.mw.*: the C++ middleware and apps of middleware/ as Python objects
// (csgi.App for apps, csgi.Layer for middleware, for Builder.use()).
#include <pybind11/stl.h>

#include "common.hpp"
#include "csgi/middleware/access_log.hpp"
#include "csgi/middleware/conditional_get.hpp"
#include "csgi/middleware/content_length.hpp"
#include "csgi/middleware/cors.hpp"
#include "csgi/middleware/csrf.hpp"
#include "csgi/middleware/deflate.hpp"
#include "csgi/middleware/head.hpp"
#include "csgi/middleware/ranges.hpp"
#include "csgi/middleware/rate_limit.hpp"
#include "csgi/middleware/runtime.hpp"
#include "csgi/middleware/server_status.hpp"
#include "csgi/middleware/session_store.hpp"
#include "csgi/middleware/sessions.hpp"
#include "csgi/middleware/static.hpp"
#include "csgi/middleware/static_prefix.hpp"
#include "gil.hpp"
#include "session_view.hpp"
#ifdef CSGI_PYTHON_REDIS
#include "csgi/middleware/redis/rate_limit_redis.hpp"
#include "csgi/middleware/redis/session_store_redis.hpp"
#endif

namespace csgi::python {

py::object make_layer_object(Layer layer);

namespace {

mw::StaticOptions static_options(std::string root, std::vector<std::string> index_files, std::string cache_control,
                                 bool precompressed, bool allow_dotfiles, bool cache = true) {
  mw::StaticOptions o;
  o.cache = cache;
  o.root = std::move(root);
  o.index_files = std::move(index_files);
  o.cache_control = std::move(cache_control);
  o.precompressed = precompressed;
  o.allow_dotfiles = allow_dotfiles;
  return o;
}

/// A layer of M with `options`, built once here so that bad options raise ValueError at the call.
template <class M, class Options>
py::object checked_layer(Options options) {
  M probe([](Env&) { return Response(); }, options);
  return make_layer_object(layer<M>(std::move(options)));
}

#ifdef CSGI_PYTHON_REDIS
std::shared_ptr<mw::RedisClient> redis_client(const std::string& url) {
  return std::make_shared<mw::RedisClient>(mw::RedisOptions::from_url(url));
}
#else
[[noreturn]] void redis_client(const std::string&) {
  throw py::value_error("this csgi was built without Redis (Debian: libhiredis-dev)");
}
#endif

std::shared_ptr<mw::RateLimitBackend> rate_limit_backend(const std::string& redis, std::size_t max_keys) {
  if (redis.empty()) return std::make_shared<mw::MemoryRateLimit>(max_keys);
#ifdef CSGI_PYTHON_REDIS
  return std::make_shared<mw::RedisRateLimit>(redis_client(redis));
#else
  redis_client(redis);
#endif
}

/// "cookie" (signed, or encrypted with `encrypt`), "memory", or a redis:// URL.
std::shared_ptr<mw::SessionStore> session_store(const std::string& store, std::vector<std::string> secrets,
                                                bool encrypt) {
  if (store == "cookie") {
    mw::CookieSessionStoreOptions o;
    o.secrets = std::move(secrets);
    o.encrypt = encrypt;
    return std::make_shared<mw::CookieSessionStore>(std::move(o));
  }
  if (store == "memory") return std::make_shared<mw::MemorySessionStore>();
  if (!store.starts_with("redis://")) throw py::value_error("store must be \"cookie\", \"memory\" or a redis:// URL");
#ifdef CSGI_PYTHON_REDIS
  return std::make_shared<mw::RedisSessionStore>(redis_client(store));
#else
  redis_client(store);
#endif
}

SameSite same_site(const std::string& v) {
  if (v == "lax") return SameSite::lax;
  if (v == "strict") return SameSite::strict;
  if (v == "none") return SameSite::none;
  if (v.empty()) return SameSite::unset;
  throw py::value_error("same_site must be \"lax\", \"strict\", \"none\" or \"\"");
}

/// The view behind session_view(): the env of a request until its session is saved, nullptr after.
class SessionView {
 public:
  explicit SessionView(Env& env) : env_(&env) {}
  void end() noexcept { env_ = nullptr; }
  Env& env() const {
    if (!env_)
      throw std::runtime_error(
          "csgix.session used after its request's session was saved (a WSGI app's when it returned, an ASGI "
          "app's at http.response.start): change the session before the response starts");
    return *env_;
  }
  std::map<std::string, std::string, std::less<>>& data() const {
    Session* s = mw::Sessions::of(env());
    if (!s) throw std::runtime_error("csgix.session: no session in this request");
    return s->data;
  }

 private:
  Env* env_;
};

}  // namespace

py::object session_view(Env& env) {
  return py::cast(new SessionView(env), py::return_value_policy::take_ownership);
}

void end_session_view(py::handle view) noexcept {
  if (auto* v = py::isinstance<SessionView>(view) ? view.cast<SessionView*>() : nullptr) v->end();
}

SessionScope::SessionScope(bool has_session, Env& env, PyObject* environ) {
  if (!has_session) return;
  view_ = session_view(env);
  if (PyDict_SetItemString(environ, "csgix.session", view_.ptr()) != 0) throw py::error_already_set();
}

SessionScope::~SessionScope() {
  if (view_) end_session_view(view_);
}

namespace {

std::vector<std::string> keys_of(const SessionView& v) {
  std::vector<std::string> out;
  for (const auto& [k, value] : v.data()) out.push_back(k);
  return out;
}

void bind_session_view(py::module_& m) {
  py::class_<SessionView>(m, "Session",
                          "environ['csgix.session'] (WSGI) or scope['csgix.session'] (ASGI) behind "
                          "csgi.mw.sessions: the request's session, str keys and values, usable until the app "
                          "returns (WSGI) or sends http.response.start (ASGI).")
      .def("__getitem__",
           [](const SessionView& v, const std::string& k) {
             auto it = v.data().find(k);
             if (it == v.data().end()) throw py::key_error(k);
             return py::str(it->second);
           })
      .def("__setitem__",
           [](const SessionView& v, const std::string& k, const std::string& value) { v.data()[k] = value; })
      .def("__delitem__",
           [](const SessionView& v, const std::string& k) {
             if (v.data().erase(k) == 0) throw py::key_error(k);
           })
      .def("__contains__", [](const SessionView& v, const std::string& k) { return v.data().contains(k); })
      .def("__len__", [](const SessionView& v) { return v.data().size(); })
      .def("__iter__", [](const SessionView& v) { return py::iter(py::cast(keys_of(v))); })
      .def("keys", &keys_of)
      .def(
          "get",
          [](const SessionView& v, const std::string& k, py::object dflt) -> py::object {
            auto it = v.data().find(k);
            return it == v.data().end() ? dflt : py::str(it->second);
          },
          py::arg("key"), py::arg("default") = py::none())
      .def("clear", [](const SessionView& v) { v.data().clear(); })
      .def_property_readonly("id",
                             [](const SessionView& v) {
                               auto* o = v.env().object<SessionOptions>(keys::x::session_options);
                               return o ? o->id : std::string();
                             })
      .def(
          "rotate", [](const SessionView& v) { mw::Sessions::rotate(v.env()); },
          "A new id, the data kept, the old id forgotten: call after login.")
      .def(
          "expire", [](const SessionView& v) { mw::Sessions::expire(v.env()); },
          "Drops the session and removes its cookie: logout.")
      .def(
          "csrf_token", [](const SessionView& v) { return mw::Csrf::token(v.env()); },
          "This session's CSRF token for a page or script, masked anew each call (csgi.mw.csrf checks it).");
  py::module_::import("collections.abc").attr("MutableMapping").attr("register")(m.attr("Session"));
}

}  // namespace

void bind_middleware(py::module_& m) {
  bind_session_view(m);
  m.def(
      "static",
      [](std::string root, std::vector<std::string> index_files, std::string cache_control, bool precompressed,
         bool allow_dotfiles, bool cache) {
        App app = mw::Static(static_options(std::move(root), std::move(index_files), std::move(cache_control),
                                            precompressed, allow_dotfiles, cache));
        return py::cast(new AppHandle(std::move(app)), py::return_value_policy::take_ownership);
      },
      py::arg("root"), py::arg("index_files") = std::vector<std::string>{"index.html"},
      py::arg("cache_control") = std::string(), py::arg("precompressed") = false, py::arg("allow_dotfiles") = false,
      py::arg("cache") = true,
      "The files under `root` (csgi::mw::Static: sendfile, ETag/Last-Modified/304, ranges; with `cache`, files "
      "kept open and small ones in memory, each change seen by the next request) as a csgi.App.");

  py::module_ mwm = m.def_submodule("mw", "C++ middleware as csgi.Layer objects for Builder.use().");
  mwm.def("runtime", [](std::string header) {
    return make_layer_object(layer<mw::Runtime>(mw::RuntimeOptions{std::move(header)}));
  }, py::arg("header") = std::string("X-Runtime"), "Adds X-Runtime: seconds spent inside this layer.");
  mwm.def("content_length", [] { return make_layer_object(layer<mw::ContentLength>()); },
          "Adds Content-Length when the body size is known.");
  mwm.def("head", [] { return make_layer_object(layer<mw::Head>()); }, "Drops the body of HEAD responses.");
  mwm.def("conditional_get", [] { return make_layer_object(layer<mw::ConditionalGet>()); },
          "Answers 304 to matching If-None-Match / If-Modified-Since.");
  mwm.def("ranges", [](std::size_t max_ranges) {
    if (max_ranges == 0) throw py::value_error("max_ranges must be at least 1");
    return make_layer_object(layer<mw::Ranges>(mw::RangesOptions{max_ranges}));
  }, py::arg("max_ranges") = 16,
     "Range, If-Range and 416 on 200 file and complete bodies; adds Accept-Ranges (csgi::mw::Ranges).");
  mwm.def("deflate", [](int level, std::size_t min_length) {
    mw::DeflateOptions o;
    o.level = level;
    o.min_length = min_length;
    return make_layer_object(layer<mw::Deflate>(o));
  }, py::arg("level") = 6, py::arg("min_length") = 256, "gzip/deflate responses the client accepts.");
  mwm.def("access_log", [](std::string path, std::string format, std::size_t queue_lines) {
    mw::AccessLogOptions o;
    o.format = std::move(format);
    o.writer = std::make_shared<mw::LogWriter>(std::move(path), queue_lines);
    return make_layer_object(layer<mw::AccessLog>(std::move(o)));
  }, py::arg("path") = std::string(), py::arg("format") = std::string("combined"), py::arg("queue_lines") = 8192,
     "One line per request in an Apache log format, appended to `path` (stderr when empty) by a background "
     "writer started in the process that serves (fork-safe: fine under gunicorn --preload).");
  mwm.def("static_prefix", [](std::vector<std::string> prefixes, std::string root, bool pass_through,
                              bool strip_prefix) {
    mw::StaticPrefixOptions o;
    o.prefixes = std::move(prefixes);
    o.files = static_options(std::move(root), {"index.html"}, {}, false, false);
    o.pass_through = pass_through;
    o.strip_prefix = strip_prefix;
    return make_layer_object(layer<mw::StaticPrefix>(o));
  }, py::arg("prefixes"), py::arg("root"), py::arg("pass_through") = false, py::arg("strip_prefix") = false,
     "Serves requests under `prefixes` from `root`; the rest goes to the next app.");
  mwm.def("server_status", [](std::string path, std::string title) {
    mw::ServerStatusOptions o;
    o.path = std::move(path);
    o.title = std::move(title);
    return make_layer_object(layer<mw::ServerStatus>(std::move(o)));
  }, py::arg("path") = std::string("/server-status"), py::arg("title") = std::string("csgi server status"),
     "A status page at `path` (HTML, ?json, ?auto) over the serving adapter's counters (csgix.server_stats): "
     "csgi.serve() and `csgi serve --wsgi` have them; a host without them (gunicorn, uWSGI) gets 501.");
  mwm.def(
      "cors",
      [](std::vector<std::string> origins, std::vector<std::string> methods, std::vector<std::string> headers,
         std::vector<std::string> expose_headers, bool credentials, std::int64_t max_age) {
        mw::CorsOptions o;
        o.origins = std::move(origins);
        o.methods = std::move(methods);
        o.headers = std::move(headers);
        o.expose_headers = std::move(expose_headers);
        o.credentials = credentials;
        o.max_age = max_age;
        return checked_layer<mw::Cors>(std::move(o));
      },
      py::arg("origins"), py::arg("methods") = std::vector<std::string>{"GET", "HEAD", "POST"},
      py::arg("headers") = std::vector<std::string>{}, py::arg("expose_headers") = std::vector<std::string>{},
      py::arg("credentials") = false, py::arg("max_age") = 600,
      "CORS (csgi::mw::Cors): preflights of allowed `origins` (exact, \"*\", or \"https://*.example.com\") "
      "answered, others 400; Access-Control-* and Vary: Origin on the app's answers.");
  mwm.def(
      "rate_limit",
      [](std::uint32_t limit, double window, std::string key_by, std::string header, std::string name,
         std::string redis, bool fail_open, std::size_t max_keys) {
        mw::RateLimitOptions o;
        o.policy.limit = limit;
        o.policy.window = std::chrono::seconds(static_cast<std::int64_t>(window));
        if (key_by == "address")
          o.key_by = mw::RateLimitOptions::KeyBy::client_address;
        else if (key_by == "header")
          o.key_by = mw::RateLimitOptions::KeyBy::header;
        else if (key_by == "session")
          o.key_by = mw::RateLimitOptions::KeyBy::session;
        else
          throw py::value_error("key_by must be \"address\", \"header\" or \"session\"");
        o.header = std::move(header);
        o.name = std::move(name);
        o.fail_open = fail_open;
        o.backend = rate_limit_backend(redis, max_keys);
        return checked_layer<mw::RateLimit>(std::move(o));
      },
      py::arg("limit") = 60, py::arg("window") = 60, py::arg("key_by") = std::string("address"),
      py::arg("header") = std::string(), py::arg("name") = std::string("default"), py::arg("redis") = std::string(),
      py::arg("fail_open") = false, py::arg("max_keys") = 100000,
      "A token bucket per client address, header value or session (key_by \"session\": inside csgi.mw.sessions, "
      "a session with data; the others by address) (csgi::mw::RateLimit): `limit` requests, refilled over "
      "`window` seconds; 429 with Retry-After and RateLimit headers. `redis` (redis://host:port/db): buckets "
      "shared by every process and host on that Redis (503 with the reason while it is down, or let through "
      "with `fail_open`); otherwise per process (at most `max_keys` buckets).");
  mwm.def(
      "sessions",
      [](std::vector<std::string> secrets, std::string store, bool encrypt, std::string cookie_name, double ttl,
         std::string path, std::string domain, std::optional<bool> secure, bool http_only, std::string same) {
        mw::SessionsOptions o;
        o.store = session_store(store, std::move(secrets), encrypt);
        o.cookie_name = std::move(cookie_name);
        o.ttl = std::chrono::seconds(static_cast<std::int64_t>(ttl));
        o.path = std::move(path);
        o.domain = std::move(domain);
        o.secure = secure;
        o.http_only = http_only;
        o.same_site = same_site(same);
        return checked_layer<mw::Sessions>(std::move(o));
      },
      py::arg("secrets") = std::vector<std::string>{}, py::arg("store") = std::string("cookie"),
      py::arg("encrypt") = false, py::arg("cookie_name") = std::string("csgi_session"),
      py::arg("ttl") = 14 * 24 * 3600.0, py::arg("path") = std::string("/"), py::arg("domain") = std::string(),
      py::arg("secure") = py::none(), py::arg("http_only") = true, py::arg("same_site") = std::string("lax"),
      "A session per client (csgi::mw::Sessions): environ['csgix.session'] or, for an ASGI app, "
      "scope['csgix.session'] (a csgi.Session: str keys and values, rotate(), expire(), csrf_token()). "
      "`store`: \"cookie\" (signed with the first of `secrets`, 32+ bytes each, every one verifies; "
      "`encrypt`: AES-256-GCM), \"memory\" (this process), or a redis:// URL (every worker and host). "
      "`secure` None: Secure over https.");
  mwm.def(
      "csrf",
      [](std::string header, std::string form_field, std::vector<std::string> trusted_origins) {
        mw::CsrfOptions o;
        o.header = std::move(header);
        o.form_field = std::move(form_field);
        o.trusted_origins = std::move(trusted_origins);
        return checked_layer<mw::Csrf>(std::move(o));
      },
      py::arg("header") = std::string("X-CSRF-Token"), py::arg("form_field") = std::string("csrf_token"),
      py::arg("trusted_origins") = std::vector<std::string>{},
      "CSRF protection of unsafe methods (csgi::mw::Csrf), inside csgi.mw.sessions: Sec-Fetch-Site/Origin "
      "must be this site's, and the header or form field must carry environ['csgix.session'].csrf_token(); "
      "else 403 with the reason.");
}

}  // namespace csgi::python
