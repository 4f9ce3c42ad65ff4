#include "csgi/middleware/error_document.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <optional>
#include <stdexcept>

#include "csgi/core/on_response.hpp"

namespace csgi::mw {

struct ErrorDocument::State {
  App next;
  ErrorDocumentOptions options;
};

namespace {

std::string content_type_for(const std::string& path) {
  auto dot = path.rfind('.');
  std::string ext = dot == std::string::npos ? std::string() : path.substr(dot + 1);
  for (char& c : ext)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  if (ext == "html" || ext == "htm") return "text/html; charset=utf-8";
  if (ext == "txt") return "text/plain; charset=utf-8";
  if (ext == "json") return "application/json";
  if (ext == "xml") return "application/xml";
  if (ext == "css") return "text/css";
  return "application/octet-stream";
}

void close_body(Body& body) {
  if (auto* s = std::get_if<StreamPtr>(&body); s && *s) std::exchange(*s, nullptr)->close();
}

bool entity_header(std::string_view n) {
  return iequals(n, "Content-Type") || iequals(n, "Content-Length") || iequals(n, "Content-Encoding") ||
         iequals(n, "Content-Range") || iequals(n, "ETag") || iequals(n, "Last-Modified") ||
         iequals(n, "Transfer-Encoding");
}

/// Collects a delayed sub-response that answers at once.
class Collector final : public ResponderImpl {
public:
  void respond(Response r) override { got = std::move(r); }
  WriterPtr start(int status, Headers headers) override {
    Response r;
    r.status = status;
    r.headers = std::move(headers);
    r.body = std::string();
    got = std::move(r);
    streaming = true;
    return std::make_shared<W>(this);
  }
  std::optional<Response> got;
  bool streaming = false;
  bool closed = false;

private:
  class W final : public Writer {
  public:
    explicit W(Collector* c) : c_(c) {}
    bool write(std::string_view chunk) override {
      std::get<std::string>(c_->got->body).append(chunk);
      return true;
    }
    void close() override { c_->closed = true; }

  private:
    Collector* c_;
  };
};

/// Saves and restores what the sub-request changes.
class SubrequestEnv {
public:
  SubrequestEnv(Env& env, int status, const std::string& path) : env_(env) {
    for (std::string_view k : names) {
      const Value* v = env.find(k);
      saved_.push_back(v ? std::optional<std::string>(std::string(v->text())) : std::nullopt);
    }
    env.set("error_document.status", std::to_string(status));
    env.set("error_document.PATH_INFO", env.get(keys::PATH_INFO));
    env.set("error_document.REQUEST_METHOD", env.get(keys::REQUEST_METHOD));
    env.set("error_document.QUERY_STRING", env.get(keys::QUERY_STRING));
    if (env.get(keys::REQUEST_METHOD) != "HEAD") env.set(keys::REQUEST_METHOD, "GET");
    env.set(keys::PATH_INFO, path);
    env.set(keys::QUERY_STRING, "");
    std::string uri(env.get(keys::SCRIPT_NAME));
    uri += path;
    env.set(keys::REQUEST_URI, uri);
    env.erase(keys::CONTENT_LENGTH);
    env.erase(keys::CONTENT_TYPE);
  }
  ~SubrequestEnv() {
    for (std::size_t i = 0; i < names.size(); ++i) {
      if (saved_[i])
        env_.set(names[i], *saved_[i]);
      else
        env_.erase(names[i]);
    }
  }
  static constexpr std::array<std::string_view, 6> names{keys::PATH_INFO, keys::QUERY_STRING, keys::REQUEST_METHOD,
                                                         keys::REQUEST_URI, keys::CONTENT_LENGTH, keys::CONTENT_TYPE};

private:
  Env& env_;
  std::vector<std::optional<std::string>> saved_;
};

/// The page for `status`, as a complete (non-delayed) response; nullopt to leave the original alone.
std::optional<Response> page_for(const ErrorDocument::State& st, int status, Env& env) {
  const auto& o = st.options;
  if (auto f = o.files.find(status); f != o.files.end()) {
    try {
      Response r;
      r.status = status;
      r.headers.add("Content-Type", content_type_for(f->second));
      r.body = FileBody::open(f->second);
      return r;
    } catch (const std::exception& e) {
      env.errors().write(std::string("error_document: ") + e.what());
      return std::nullopt;
    }
  }
  auto s = o.subrequests.find(status);
  if (s == o.subrequests.end()) return std::nullopt;
  Response sub;
  {
    SubrequestEnv guard(env, status, s->second);
    sub = st.next(env);
  }
  if (auto* d = std::get_if<Delayed>(&sub.body)) {
    auto c = std::make_shared<Collector>();
    (*d)(Responder(c));
    if (!c->got || (c->streaming && !c->closed)) {
      env.errors().write("error_document: sub-request " + s->second + " did not answer at once");
      return std::nullopt;
    }
    sub = std::move(*c->got);
  }
  if (sub.status < 200 || sub.status > 299) {
    env.errors().write("error_document: sub-request " + s->second + " answered " + std::to_string(sub.status));
    close_body(sub.body);
    return std::nullopt;
  }
  return sub;
}

std::string read_all(Body body, std::size_t limit) {
  if (auto* s = std::get_if<std::string>(&body)) return std::move(*s);
  StreamPtr st = body_stream(std::move(body));
  std::string out, chunk;
  if (!st) return out;
  try {
    while (out.size() < limit && st->next(chunk)) out += chunk;
  } catch (...) {
    st->close();
    throw;
  }
  st->close();
  if (out.size() > limit) out.resize(limit);
  return out;
}

}  // namespace

ErrorDocument::ErrorDocument(App next, ErrorDocumentOptions options) {
  if (!next) throw std::invalid_argument("ErrorDocument: no next app");
  for (const auto& [status, file] : options.files) {
    if (status < 400 || status > 599) throw std::invalid_argument("ErrorDocument: not an error status: " + std::to_string(status));
    if (options.subrequests.count(status))
      throw std::invalid_argument("ErrorDocument: status given twice: " + std::to_string(status));
    int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw std::invalid_argument("ErrorDocument: cannot read " + file);
    ::close(fd);
  }
  for (const auto& [status, path] : options.subrequests) {
    if (status < 400 || status > 599) throw std::invalid_argument("ErrorDocument: not an error status: " + std::to_string(status));
    if (path.empty() || path.front() != '/') throw std::invalid_argument("ErrorDocument: path must start with '/': " + path);
  }
  state_ = std::make_shared<const State>(State{std::move(next), std::move(options)});
}

Response ErrorDocument::operator()(Env& env) {
  Response res = state_->next(env);
  const auto& o = state_->options;
  if (!res.is_delayed() && !o.files.count(res.status) && !o.subrequests.count(res.status)) return res;  // fast path
  Env* e = &env;
  return on_response(std::move(res), [st = state_, e](Response& r) -> BodyFilter {
    if (!st->options.files.count(r.status) && !st->options.subrequests.count(r.status)) return {};
    std::optional<Response> page = page_for(*st, r.status, *e);
    if (!page) return {};
    bool writer = std::holds_alternative<StreamPtr>(r.body) && !std::get<StreamPtr>(r.body);
    Headers kept;
    for (const auto& h : r.headers)
      if (!entity_header(h.name)) kept.add(h.name, h.value);
    for (const auto& h : page->headers)
      if (iequals(h.name, "Content-Type")) kept.add(h.name, h.value);
    r.headers = std::move(kept);
    if (!writer) {
      close_body(r.body);
      r.body = std::move(page->body);
      return {};
    }
    std::string content = read_all(std::move(page->body), st->options.max_page_bytes);
    auto sent = std::make_shared<bool>(false);
    return [content = std::move(content), sent](std::string_view, bool eof) -> std::string {
      if (!eof || *sent) return {};
      *sent = true;
      return content;
    };
  });
}

}  // namespace csgi::mw
