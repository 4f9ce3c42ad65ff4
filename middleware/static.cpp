#include "csgi/middleware/static.hpp"

#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <system_error>

#include "csgi/core/http_date.hpp"
#include "csgi/core/percent.hpp"
#include "csgi/core/text.hpp"
#include "csgi/middleware/accept_encoding.hpp"
#include "csgi/middleware/conditional_get.hpp"
#include "csgi/middleware/ranges.hpp"

namespace csgi::mw {

struct Static::State {
  StaticOptions o;
  std::unique_ptr<Root> root;
  std::shared_ptr<const MimeTypes> mime;
  FileCache::Prepare prepare;        // fills an entry's content_type and head (prepare_entry)
  std::unique_ptr<FileCache> cache;  // null: every request opens its file
};

namespace {

std::string hex(std::uint64_t v) {
  char buf[17];
  int n = std::snprintf(buf, sizeof buf, "%llx", static_cast<unsigned long long>(v));
  return std::string(buf, static_cast<std::size_t>(n));
}

/// "/dir" → 301 "/dir/". The Location is rebuilt from SCRIPT_NAME and the sanitized path, with runs
/// of '/' collapsed: a request for "//dir" must not be sent to "//dir/", which a browser reads as
/// another host.
Response directory_redirect(const Env& env, std::string_view relative) {
  std::string path;
  for (char c : env.get(keys::SCRIPT_NAME))
    if (c != '/' || path.empty() || path.back() != '/') path += c;
  if (path.empty() || path.back() != '/') path += '/';
  if (path.front() != '/') path.insert(path.begin(), '/');
  if (!relative.empty()) path.append(relative).append("/");
  std::string location = percent_encode(path, uri::unreserved_slash);
  std::string_view q = env.get(keys::QUERY_STRING);
  // The query as RFC 3986 allows it in a Location, the escapes it holds kept.
  if (!q.empty()) percent_encode_to(location.append("?"), q, uri::query, true);
  Response r = Response::html(301, "<a href=\"" + html_escape(location) + "\">Moved Permanently</a>\n");
  r.headers.add("Location", std::move(location));
  return r;
}

/// What a response for the whole file needs, derived once per opened file: the media type (with the
/// charset for text/*) and the headers of a 200, sealed (Headers::seal). Content-Length comes first:
/// adapters look it up in every complete response.
void prepare_entry(const StaticOptions& o, const MimeTypes& mime, FileCache::Entry& e, std::string_view relative) {
  e.content_type = mime.lookup(relative, o.default_type);
  if (!o.charset.empty() && e.content_type.starts_with("text/")) e.content_type.append("; charset=").append(o.charset);
  Headers& h = e.head;
  h.reserve(7);
  h.add("Content-Length", std::to_string(static_cast<std::uint64_t>(e.opened.st.st_size)));
  h.add("Content-Type", e.content_type);
  h.add("Accept-Ranges", "bytes");
  if (o.last_modified) h.add("Last-Modified", e.last_modified);
  if (o.etag) h.add("ETag", e.etag);
  if (!o.cache_control.empty()) h.add("Cache-Control", o.cache_control);
  if (o.precompressed && is_compressible_type(e.content_type)) h.add("Vary", "Accept-Encoding");
  h.seal();  // every 200 for this version shares it: no copy, and its HTTP/1 form is written once
}

}  // namespace

std::string file_etag(const struct stat& st) {
  return "\"" + hex(static_cast<std::uint64_t>(st.st_size)) + "-" + hex(static_cast<std::uint64_t>(st.st_mtim.tv_sec)) +
         "-" + hex(static_cast<std::uint64_t>(st.st_mtim.tv_nsec)) + "\"";
}

Static::Static(StaticOptions options) {
  if (options.root.empty()) throw std::invalid_argument("Static: root is empty");
  auto s = std::make_shared<State>();
  s->root = std::make_unique<Root>(options.root, options.symlinks);
  s->mime = options.mime ? options.mime : MimeTypes::system();
  s->o = std::move(options);
  const State* state = s.get();  // the cache is a member of the State: it never outlives it
  s->prepare = [state](FileCache::Entry& e, std::string_view relative) {
    prepare_entry(state->o, *state->mime, e, relative);
  };
  if (s->o.cache) s->cache = std::make_unique<FileCache>(*s->root, s->o.cache_options, s->prepare);
  s_ = std::move(s);
}

const StaticOptions& Static::options() const noexcept { return s_->o; }
const Root& Static::root() const noexcept { return *s_->root; }

FileCache::Stats Static::cache_stats() const { return s_->cache ? s_->cache->stats() : FileCache::Stats{}; }

std::shared_ptr<const FileCache::Entry> Static::open(std::string_view relative) const {
  if (s_->cache) return s_->cache->open(relative);
  return FileCache::open_uncached(*s_->root, relative, s_->prepare);
}

Response Static::operator()(Env& env) const {
  const StaticOptions& o = s_->o;
  std::string_view method = env.get(keys::REQUEST_METHOD);
  if (method != "GET" && method != "HEAD") {
    Response r = Response::error(405);
    r.headers.add("Allow", "GET, HEAD");
    return r;
  }
  SafePath sp = sanitize_path(env.get(keys::PATH_INFO), o.allow_dotfiles);
  if (!sp) return Response::error(sp.status);
  auto entry = open(sp.relative);
  const Opened& target = entry->opened;
  if (!target) {
    if (target.status == 500) env.errors().write("static: cannot open '" + sp.relative + "': " + std::strerror(errno));
    return Response::error(target.status);
  }
  if (target.is_file()) {
    if (sp.trailing_slash) return Response::error(404);  // "/file.txt/" names no file
    return serve(env, sp.relative, *entry, method == "HEAD");
  }
  // A directory.
  if (!sp.trailing_slash && o.redirect_directories) return directory_redirect(env, sp.relative);
  for (const std::string& index : o.index_files) {
    std::string rel = sp.relative.empty() ? index : sp.relative + "/" + index;
    auto f = open(rel);
    if (f->opened && f->opened.is_file()) return serve(env, rel, *f, method == "HEAD");
  }
  if (o.on_directory) return o.on_directory(env, *s_->root, target, sp.relative);
  return Response::error(403, "directory listing is not enabled");
}

Response Static::serve_file(Env& env, std::string_view relative, Opened file) const {
  FileCache::Entry e;
  e.opened = std::move(file);
  e.etag = file_etag(e.opened.st);
  e.last_modified = http_date(e.opened.st.st_mtim.tv_sec);
  s_->prepare(e, relative);
  return serve(env, relative, e, env.get(keys::REQUEST_METHOD) == "HEAD");
}

Response Static::serve(Env& env, std::string_view relative, const FileCache::Entry& entry, bool head) const {
  const StaticOptions& o = s_->o;
  std::string_view range = env.get(keys::HTTP_RANGE);
  Coding coding;
  if (o.precompressed && range.empty() && is_compressible_type(entry.content_type)) coding = choose_coding(env, relative);
  const FileCache::Entry& chosen = coding.sibling ? *coding.sibling : entry;
  std::string_view etag = o.etag ? std::string_view(entry.etag) : std::string_view();
  std::string_view lm = o.last_modified ? std::string_view(entry.last_modified) : std::string_view();
  std::string coded_etag;  // the ETag of a precompressed sibling
  if (coding.sibling && o.etag) {
    coded_etag.append(etag.substr(0, etag.size() - 1)).append("-").append(coding.name).append(etag.substr(etag.size() - 1));
    etag = coded_etag;
  }

  Response res;
  if (not_modified(env, etag, lm)) {
    res.status = 304;
    for (const Header& h : entry.head)  // the validators and caching headers of a 200, no entity headers
      if (h.name == "Last-Modified" || h.name == "Cache-Control" || h.name == "Vary") res.headers.add(h.name, h.value);
      else if (h.name == "ETag") res.headers.add(h.name, std::string(etag));
    res.body = std::string();
    return res;
  }

  res.status = 200;
  if (!coding.sibling) {
    res.headers = entry.head;
  } else {
    res.headers.reserve(8);
    for (const Header& h : entry.head) {
      if (h.name == "Content-Length") res.headers.add(h.name, std::to_string(chosen.opened.st.st_size));
      else if (h.name == "ETag") res.headers.add(h.name, std::string(etag));
      else res.headers.add(h.name, h.value);
      if (h.name == "Content-Type") res.headers.add("Content-Encoding", std::string(coding.name));
    }
  }
  if (head) {
    res.body = std::string();
    return res;
  }
  if (chosen.bytes) {
    res.body = chosen.bytes;
  } else {
    FileBody body;
    body.path = s_->root->path() + "/" + std::string(relative) + std::string(coding.ext);
    body.file = chosen.opened.file;
    body.offset = 0;
    body.length = static_cast<std::uint64_t>(chosen.opened.st.st_size);
    res.body = std::move(body);
  }
  // Without a Range there is nothing for apply_ranges to do: Accept-Ranges is in the head already.
  if (!range.empty()) apply_ranges(RangeRequest::from(env), res, o.max_ranges);
  return res;
}

Static::Coding Static::choose_coding(const Env& env, std::string_view relative) const {
  std::string_view ae = env.get(keys::HTTP_ACCEPT_ENCODING);
  if (ae.empty()) return {};
  // The coding the client prefers (higher q); brotli first when it likes both alike.
  std::array<std::pair<std::string_view, std::string_view>, 2> codings{{{"br", ".br"}, {"gzip", ".gz"}}};
  if (accepted_q(ae, "gzip") > accepted_q(ae, "br")) std::swap(codings[0], codings[1]);
  for (auto [name, ext] : codings) {
    if (accepted_q(ae, name) <= 0) continue;
    auto sib = open(std::string(relative) + std::string(ext));
    if (!sib->opened || !sib->opened.is_file()) continue;
    return Coding{std::move(sib), name, ext};
  }
  return {};
}

}  // namespace csgi::mw
