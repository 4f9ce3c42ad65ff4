#include "csgi/middleware/http_exceptions.hpp"

#include <atomic>
#include <stdexcept>

#include "csgi/core/json.hpp"

namespace csgi::mw {

HttpException HttpException::redirect(std::string location, int status) {
  if (status != 301 && status != 302 && status != 303 && status != 307 && status != 308)
    throw std::invalid_argument("HttpException::redirect: not a redirect status: " + std::to_string(status));
  for (char c : location)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
      throw std::invalid_argument("HttpException::redirect: control character in location");
  return HttpException(status, {}, {{"Location", std::move(location)}});
}

namespace {
bool problem_json(const HttpExceptionsOptions& options, std::string_view accept) noexcept {
  switch (options.format) {
    case ErrorFormat::text: return false;
    case ErrorFormat::problem_json: return true;
    case ErrorFormat::by_accept: break;
  }
  return prefers_problem_json(accept);
}

Response render(const HttpError& e, ErrorStream& errors, const HttpExceptionsOptions& options, bool json) {
  int status = e.status();
  std::string_view message = e.what();
  auto page = [json](int s, std::string_view detail) {
    return json ? problem_response(s, detail) : Response::error(s, detail);
  };
  if (status < 100 || status > 999) {
    errors.write("http_exceptions: HttpError with invalid status " + std::to_string(status) + ": " +
                 std::string(message));
    return page(500, {});
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
    r = page(status, server && !options.show_server_errors ? std::string_view{} : message);
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
}  // namespace

Response HttpExceptions::to_response(const HttpError& e, ErrorStream& errors, const HttpExceptionsOptions& options,
                                     std::string_view accept) {
  return render(e, errors, options, problem_json(options, accept));
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
    return to_response(e, errors, options_, env.get(keys::HTTP_ACCEPT));
  }
  if (auto* d = std::get_if<Delayed>(&res.body)) {
    // Decided while the env is at hand: the callable may run later, on another thread.
    bool json = problem_json(options_, env.get(keys::HTTP_ACCEPT));
    return Response::delayed([inner = std::move(*d), &errors, opts = options_, json](Responder outer) {
      auto tracking = std::make_shared<TrackingResponder>(outer);
      try {
        inner(Responder(tracking));
      } catch (const HttpError& e) {
        if (tracking->answered()) throw;
        outer.respond(render(e, errors, opts, json));
      }
    });
  }
  return res;
}

}  // namespace csgi::mw
