#include "csgi/core/request.hpp"

#include <charconv>
#include <cstring>
#include <memory>
#include <stdexcept>

#include "csgi/core/cookie.hpp"
#include "csgi/core/http_error.hpp"
#include "csgi/core/percent.hpp"
#include "csgi/core/text.hpp"

namespace csgi {

namespace {

constexpr std::string_view streamed_key = "csgi.request.body_streamed";

const RequestLimits& default_limits() noexcept {
  static const RequestLimits limits;
  return limits;
}

// A cached ParsedQuery for `key`, (re)built from `source` with `parse` when missing or stale.
template <class Parse>
const Params& cached_params(Env& env, std::string_view key, std::string_view source, const void* from, Parse&& parse) {
  if (auto* c = env.object<ParsedQuery>(key); c && c->source.data() == source.data() &&
                                               c->source.size() == source.size() && c->from == from)
    return c->params;
  auto c = std::make_shared<ParsedQuery>();
  parse(c->params);
  c->source = source;
  c->from = from;
  const Params& out = c->params;
  env.set_object(key, std::move(c));
  return out;
}

}  // namespace

Request::Request(Env& env) noexcept : env_(env), limits_(&default_limits()) {}

std::string_view Request::path() const noexcept {
  std::string_view p = path_info();
  return p.empty() ? std::string_view("/") : p;
}

std::string Request::host() const {
  std::string_view h = env_.get(keys::HTTP_HOST);
  if (!h.empty()) return std::string(h);
  std::string out(server_name());
  std::string_view p = port();
  bool default_port = p.empty() || (p == "80" && !secure()) || (p == "443" && secure());
  if (!default_port) out.append(":").append(p);
  return out;
}

std::string_view Request::media_type() const noexcept {
  std::string_view ct = content_type();
  return trim_ows(ct.substr(0, ct.find(';')));
}

std::optional<std::uint64_t> Request::content_length() const noexcept {
  std::string_view v = env_.get(keys::CONTENT_LENGTH);
  if (v.empty()) return std::nullopt;
  std::uint64_t n = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (ec != std::errc() || p != v.data() + v.size()) return std::nullopt;
  return n;
}

std::optional<std::string_view> Request::header(std::string_view name) const noexcept {
  if (name.empty() || name.size() > 256) return std::nullopt;
  std::string_view key;
  char buf[5 + 256];
  if (iequals(name, "content-type")) {
    key = keys::CONTENT_TYPE;
  } else if (iequals(name, "content-length")) {
    key = keys::CONTENT_LENGTH;
  } else {
    std::memcpy(buf, "HTTP_", 5);
    for (std::size_t i = 0; i < name.size(); ++i) {
      char c = name[i];
      if (c == '-') c = '_';
      else if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
      buf[5 + i] = c;
    }
    key = {buf, 5 + name.size()};
  }
  const Value* v = env_.find(key);
  if (!v || !v->is_text()) return std::nullopt;
  return v->text();
}

Headers Request::headers() const {
  Headers out;
  for (const Env::Entry& e : env_) {
    if (!e.value.is_text()) continue;
    std::string name;
    if (e.key == keys::CONTENT_TYPE) {
      name = "Content-Type";
    } else if (e.key == keys::CONTENT_LENGTH) {
      name = "Content-Length";
    } else if (e.key.size() > 5 && e.key.substr(0, 5) == "HTTP_") {
      bool upper = true;
      for (char c : e.key.substr(5)) {
        if (c == '_') {
          name.push_back('-');
          upper = true;
        } else {
          name.push_back(upper || c < 'A' || c > 'Z' ? c : static_cast<char>(c - 'A' + 'a'));
          upper = false;
        }
      }
    } else {
      continue;
    }
    out.add(std::move(name), std::string(e.value.text()));
  }
  return out;
}

std::string Request::base() const {
  std::string out(scheme());
  out.append("://").append(host());
  std::string_view script = script_name();
  if (script.empty()) out.push_back('/');
  else percent_encode_to(out, script, uri::path);
  return out;
}

std::string Request::uri() const {
  std::string out(scheme());
  out.append("://").append(host());
  percent_encode_to(out, script_name(), uri::path);
  std::string_view p = path_info();
  if (p.empty() && script_name().empty()) p = "/";
  percent_encode_to(out, p, uri::path);
  std::string_view q = query_string();
  if (!q.empty()) out.append("?").append(q);
  return out;
}

const Params& Request::query_parameters() const {
  std::string_view qs = env_.get(keys::QUERY_STRING);
  return cached_params(env_, request_keys::query, qs, nullptr,
                       [&](Params& p) { parse_query_into(qs, p, limits_->query); });
}

const Params& Request::cookies() const {
  std::string_view h = env_.get(keys::HTTP_COOKIE);
  return cached_params(env_, request_keys::cookies, h, nullptr, [&](Params& p) { parse_cookies_into(h, p); });
}

std::size_t Request::body_limit(std::size_t own) const noexcept {
  if (const Value* v = env_.find(keys::x::request_body_limit); v && !v->is_text() && v->integer() >= 0)
    return std::min<std::size_t>(own, static_cast<std::size_t>(v->integer()));
  return own;
}

std::string_view Request::content() const {
  if (auto* s = env_.object<std::string>(request_keys::content)) return *s;
  Input& in = env_.input();
  if (in.seekable()) {
    in.rewind();
  } else if (env_.flag(streamed_key)) {
    throw std::logic_error("Request::content: the multipart body was already streamed from csgi.input");
  }
  std::size_t limit = body_limit(limits_->max_content_size);
  if (auto len = content_length(); len && *len > limit)
    throw PayloadTooLarge("request body is larger than " + std::to_string(limit) + " bytes");
  auto s = std::make_shared<std::string>(in.read_all(limit));
  if (in.seekable()) in.rewind();
  std::string_view out = *s;
  env_.set_object(request_keys::content, std::move(s));
  return out;
}

const FormData& Request::form() const {
  if (auto* f = env_.object<FormData>(request_keys::body)) return *f;
  auto form = std::make_shared<FormData>();
  std::string_view media = media_type();
  if (iequals(media, "application/x-www-form-urlencoded")) {
    std::string_view body;
    if (auto* cached = env_.object<std::string>(request_keys::content)) {
      body = *cached;
      if (body.size() > body_limit(limits_->max_form_size))
        throw PayloadTooLarge("form body is larger than " + std::to_string(body_limit(limits_->max_form_size)) +
                              " bytes");
    } else {
      Input& in = env_.input();
      if (in.seekable()) in.rewind();
      std::size_t limit = body_limit(limits_->max_form_size);
      if (auto len = content_length(); len && *len > limit)
        throw PayloadTooLarge("form body is larger than " + std::to_string(limit) + " bytes");
      auto s = std::make_shared<std::string>(in.read_all(limit));
      if (in.seekable()) in.rewind();
      body = *s;
      env_.set_object(request_keys::content, std::move(s));
    }
    parse_query_into(body, form->fields, limits_->query);
  } else if (iequals(media, "multipart/form-data")) {
    std::string boundary = multipart_boundary(content_type());
    MultipartLimits ml = limits_->multipart;
    ml.max_body_size = std::min<std::uint64_t>(ml.max_body_size, body_limit(static_cast<std::size_t>(-1)));
    if (auto len = content_length(); len && *len > ml.max_body_size)
      throw PayloadTooLarge("multipart body is larger than " + std::to_string(ml.max_body_size) + " bytes");
    if (auto* cached = env_.object<std::string>(request_keys::content)) {
      MultipartParser parser(boundary, std::move(ml));
      parser.feed(*cached);
      *form = parser.finish();
    } else {
      Input& in = env_.input();
      if (in.seekable()) in.rewind();
      else env_.set_bool(streamed_key, true);
      *form = parse_multipart(in, boundary, ml);
      if (in.seekable()) in.rewind();
    }
  }
  const FormData& out = *form;
  env_.set_object(request_keys::body, std::move(form));
  return out;
}

const Params& Request::body_parameters() const { return form().fields; }

const Uploads& Request::uploads() const { return form().uploads; }

const Params& Request::parameters() const {
  const Params& query = query_parameters();
  const Params& body = body_parameters();
  std::string_view qs = env_.get(keys::QUERY_STRING);
  // Keyed on the query cache object (rebuilt when QUERY_STRING changes) and the query text.
  return cached_params(env_, request_keys::params, qs, &query, [&](Params& p) {
    p.reserve(query.size() + body.size(), 0);
    p.append(query);
    p.append(body);
  });
}

}  // namespace csgi
