#pragma once
/// Composes middleware around an app (Plack::Builder). The first use() is the OUTERMOST layer: for
///   Builder().use<A>().use<B>().run(app)
/// a request passes A, then B, then app; the response passes B, then A (tests/core/builder_test.cpp
/// pins this). A layer can also be a function of the env and the next app:
///   Builder().use([](csgi::Env& env, const csgi::App& next) {
///     return csgi::on_headers(next(env), [](csgi::Response& r) { r.headers.add("X-Powered-By", "csgi"); });
///   })
///
/// mount() routes by location to several apps (UrlMap semantics); run() and mount() are exclusive.
/// build() throws std::logic_error on misuse (no app; both run() and mount()).
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "csgi/core/app.hpp"

namespace csgi {

/// A middleware written as one function: the env and the next app in, the response out.
using LayerFunction = std::function<Response(Env&, const App& next)>;

class Builder {
public:
  /// Adds middleware M, built with copies of `options` each time build() runs.
  template <class M, class... Options>
  Builder& use(Options&&... options) {
    layers_.push_back(layer<M>(std::forward<Options>(options)...));
    return *this;
  }
  Builder& use(Layer l);
  /// Adds a layer written as a function `Response(Env&, const App& next)`; it is shared by every request
  /// and thread (APP-2).
  Builder& use(LayerFunction fn);
  /// Adds middleware M that runs only for requests where `cond(env)` is true (Plack's enable_if).
  template <class M, class... Options>
  Builder& enable_if(Condition cond, Options&&... options) {
    return enable_if(std::move(cond), layer<M>(std::forward<Options>(options)...));
  }
  Builder& enable_if(Condition cond, Layer l);
  /// Routes requests under `location` ("/path" or "http://host/path") to `app`.
  Builder& mount(std::string location, App app);
  /// Sets the innermost app.
  Builder& run(App app);

  /// The composed app.
  App build() const;
  /// The layers applied around `inner` (ignores run()/mount()).
  App wrap(App inner) const;

private:
  std::vector<Layer> layers_;
  std::vector<std::pair<std::string, App>> mounts_;
  App app_;
};

}  // namespace csgi
