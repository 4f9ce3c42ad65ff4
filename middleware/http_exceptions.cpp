#include "csgi/middleware/http_exceptions.hpp"

#include <atomic>
#include <stdexcept>

namespace csgi::mw {

HttpException HttpException::redirect(std::string location, int status) {
  if (status != 301 && status != 302 && status != 303 && status != 307 && status != 308)
    throw std::invalid_argument("HttpException::redirect: not a redirect status: " + std::to_string(status));
  for (char c : location)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
      throw std::invalid_argument("HttpException::redirect: control character in location");
  return HttpException(status, {}, {{"Location", std::move(location)}});
}

Response HttpExceptions::to_response(const HttpError& e, ErrorStream& errors, const HttpExceptionsOptions& options) {
  int status = e.status();
  std::string_view message = e.what();
  if (status < 100 || status > 999) {
    errors.write("http_exceptions: HttpError with invalid status " + std::to_string(status) + ": " +
                 std::string(message));
    return Response::error(500);
  }
  bool server = status >= 500;
  if (server && !message.empty()) errors.write("http_exceptions: " + std::to_string(status) + ": " + std::string(message));
  const auto* rich = dynamic_cast<const HttpException*>(&e);
  Response r;
  if (rich && rich->body() && !status_has_no_body(status)) {
    r.status = status;
    r.body = *rich->body();
    if (!rich->headers().has("Content-Type")) r.headers.add("Content-Type", "text/plain; charset=utf-8");
  } else {
    r = Response::error(status, server && !options.show_server_errors ? std::string_view{} : message);
  }
  if (rich) {
    for (const auto& h : rich->headers()) {
      if (status_has_no_body(status) && (iequals(h.name, "Content-Type") || iequals(h.name, "Content-Length")))
        continue;
      if (iequals(h.name, "Content-Type")) r.headers.remove("Content-Type");
      r.headers.add(h.name, h.value);
    }
  }
  return r;
}

namespace {
/// Forwards to the real responder and remembers whether it has been used.
class TrackingResponder final : public ResponderImpl {
public:
  explicit TrackingResponder(Responder outer) : outer_(std::move(outer)) {}
  void respond(Response r) override {
    answered_ = true;
    outer_.respond(std::move(r));
  }
  WriterPtr start(int status, Headers headers) override {
    answered_ = true;
    return outer_.start(status, std::move(headers));
  }
  bool answered() const noexcept { return answered_; }

private:
  Responder outer_;
  std::atomic<bool> answered_{false};
};
}  // namespace

HttpExceptions::HttpExceptions(App next, HttpExceptionsOptions options)
    : next_(std::move(next)), options_(options) {
  if (!next_) throw std::invalid_argument("HttpExceptions: no next app");
}

Response HttpExceptions::operator()(Env& env) {
  ErrorStream& errors = env.errors();
  Response res;
  try {
    res = next_(env);
  } catch (const HttpError& e) {
    return to_response(e, errors, options_);
  }
  if (auto* d = std::get_if<Delayed>(&res.body)) {
    return Response::delayed([inner = std::move(*d), &errors, opts = options_](Responder outer) {
      auto tracking = std::make_shared<TrackingResponder>(outer);
      try {
        inner(Responder(tracking));
      } catch (const HttpError& e) {
        if (tracking->answered()) throw;
        outer.respond(to_response(e, errors, opts));
      }
    });
  }
  return res;
}

}  // namespace csgi::mw
