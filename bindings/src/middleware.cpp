// csgi.static() and csgi.mw.*: the C++ middleware and apps of middleware/ as Python objects
// (csgi.App for apps, csgi.Layer for middleware, for Builder.use()).
#include <pybind11/stl.h>

#include "common.hpp"
#include "csgi/middleware/access_log.hpp"
#include "csgi/middleware/conditional_get.hpp"
#include "csgi/middleware/content_length.hpp"
#include "csgi/middleware/deflate.hpp"
#include "csgi/middleware/head.hpp"
#include "csgi/middleware/ranges.hpp"
#include "csgi/middleware/runtime.hpp"
#include "csgi/middleware/server_status.hpp"
#include "csgi/middleware/static.hpp"
#include "csgi/middleware/static_prefix.hpp"
#include "gil.hpp"

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

}  // namespace

void bind_middleware(py::module_& m) {
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
}

}  // namespace csgi::python
