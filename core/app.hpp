#pragma once
/// Apps and middleware (spec/csgi.md §App). An app is any callable `Response(Env&)`; a middleware is a
/// class constructed with the next app as its first argument that is itself an app.
#include <concepts>
#include <functional>
#include <memory>
#include <utility>

#include "csgi/core/env.hpp"
#include "csgi/core/response.hpp"

namespace csgi {

/// Apps may be called concurrently from several threads with different envs (APP-2).
using App = std::function<Response(Env&)>;
/// A layer turns the next app into a wrapped app.
using Layer = std::function<App(App)>;
using Condition = std::function<bool(const Env&)>;

template <class M, class... Options>
concept Middleware = std::constructible_from<M, App, Options...> && requires(M& m, Env& env) {
  { m(env) } -> std::same_as<Response>;
};

/// Builds middleware M around `next`; the instance is shared by every copy of the returned app.
template <class M, class... Options>
  requires Middleware<M, Options...>
App wrap(App next, Options&&... options) {
  auto m = std::make_shared<M>(std::move(next), std::forward<Options>(options)...);
  return [m](Env& env) { return (*m)(env); };
}

/// A layer that builds middleware M (with copies of `options`) around whatever app it is given.
template <class M, class... Options>
  requires Middleware<M, std::decay_t<Options>...>
Layer layer(Options&&... options) {
  return [... opts = std::forward<Options>(options)](App next) { return wrap<M>(std::move(next), opts...); };
}

}  // namespace csgi
