#include "csgi/middleware/cascade.hpp"

#include <stdexcept>

namespace csgi::mw {

namespace {

void discard(Body& body) {
  if (auto* s = std::get_if<StreamPtr>(&body); s && *s) (*s)->close();
}

void rewind_input(Env& env) {
  Input& in = env.input();
  if (in.seekable()) in.rewind();
}

/// A writer that swallows a skipped streaming response.
class NullWriter final : public Writer {
public:
  bool write(std::string_view) override { return false; }
  void close() override {}
};

Response run_from(const std::shared_ptr<const Cascade::State>& state, std::size_t index, Env& env);

/// Passes an answer on unless its status is caught; then runs the rest of the cascade instead.
class CascadeResponder final : public ResponderImpl {
public:
  CascadeResponder(Responder outer, std::shared_ptr<const Cascade::State> state, std::size_t next, Env* env)
      : outer_(std::move(outer)), state_(std::move(state)), next_(next), env_(env) {}
  void respond(Response r) override {
    if (!state_->options.catch_statuses.count(r.status)) return outer_.respond(std::move(r));
    discard(r.body);
    forward();
  }
  WriterPtr start(int status, Headers headers) override {
    if (!state_->options.catch_statuses.count(status)) return outer_.start(status, std::move(headers));
    forward();
    return std::make_shared<NullWriter>();
  }

private:
  void forward() {
    rewind_input(*env_);
    Response r = run_from(state_, next_, *env_);
    if (auto* d = std::get_if<Delayed>(&r.body)) {
      (*d)(outer_);
    } else {
      outer_.respond(std::move(r));
    }
  }
  Responder outer_;
  std::shared_ptr<const Cascade::State> state_;
  std::size_t next_;
  Env* env_;
};

}  // namespace

Cascade::Cascade(std::vector<App> apps, CascadeOptions options)
    : state_(std::make_shared<const State>(State{std::move(apps), std::move(options)})) {
  if (state_->apps.empty()) throw std::invalid_argument("Cascade: no apps");
  for (const auto& a : state_->apps)
    if (!a) throw std::invalid_argument("Cascade: empty app");
}

Response Cascade::operator()(Env& env) const { return run_from(state_, 0, env); }

namespace {
Response run_from(const std::shared_ptr<const Cascade::State>& state, std::size_t index, Env& env) {
  const auto& apps = state->apps;
  for (std::size_t i = index; i < apps.size(); ++i) {
    if (i > index) rewind_input(env);
    Response r = apps[i](env);
    if (i + 1 == apps.size()) return r;
    if (auto* d = std::get_if<Delayed>(&r.body)) {
      Env* e = &env;
      return Response::delayed([inner = std::move(*d), state, i, e](Responder outer) {
        inner(Responder(std::make_shared<CascadeResponder>(std::move(outer), state, i + 1, e)));
      });
    }
    if (!state->options.catch_statuses.count(r.status)) return r;
    discard(r.body);
  }
  return Response::error(404);  // not reached: the last app's response is returned above
}
}  // namespace

}  // namespace csgi::mw
