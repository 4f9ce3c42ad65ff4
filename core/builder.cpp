#include "csgi/core/builder.hpp"

#include <memory>
#include <stdexcept>

#include "csgi/core/url_map.hpp"

namespace csgi {

Builder& Builder::use(Layer l) {
  if (!l) throw std::invalid_argument("Builder::use: empty layer");
  layers_.push_back(std::move(l));
  return *this;
}

Builder& Builder::use(LayerFunction fn) {
  if (!fn) throw std::invalid_argument("Builder::use: empty function");
  auto shared = std::make_shared<const LayerFunction>(std::move(fn));
  layers_.push_back([shared](App next) -> App {
    return [shared, next = std::move(next)](Env& env) { return (*shared)(env, next); };
  });
  return *this;
}

Builder& Builder::enable_if(Condition cond, Layer l) {
  if (!cond || !l) throw std::invalid_argument("Builder::enable_if: empty condition or layer");
  layers_.push_back([cond = std::move(cond), l = std::move(l)](App next) -> App {
    App wrapped = l(next);
    return [cond, wrapped = std::move(wrapped), next = std::move(next)](Env& env) {
      return cond(env) ? wrapped(env) : next(env);
    };
  });
  return *this;
}

Builder& Builder::mount(std::string location, App app) {
  if (!app) throw std::invalid_argument("Builder::mount: empty app for " + location);
  mounts_.emplace_back(std::move(location), std::move(app));
  return *this;
}

Builder& Builder::run(App app) {
  if (!app) throw std::invalid_argument("Builder::run: empty app");
  app_ = std::move(app);
  return *this;
}

App Builder::wrap(App inner) const {
  if (!inner) throw std::logic_error("Builder::wrap: empty app");
  for (auto it = layers_.rbegin(); it != layers_.rend(); ++it) inner = (*it)(std::move(inner));
  return inner;
}

App Builder::build() const {
  if (app_ && !mounts_.empty())
    throw std::logic_error("Builder: both run() and mount() used; mount the app at \"/\" instead");
  if (!app_ && mounts_.empty()) throw std::logic_error("Builder: no app: call run() or mount()");
  App inner = app_;
  if (!inner) {
    auto map = std::make_shared<UrlMap>();
    for (const auto& [location, app] : mounts_) map->map(location, app);
    inner = [map](Env& env) { return (*map)(env); };
  }
  return wrap(std::move(inner));
}

}  // namespace csgi
