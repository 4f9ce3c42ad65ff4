#pragma once
/// Cascade (Plack::App::Cascade): tries apps in order and answers with the first response whose status
/// is not in `catch_statuses` (default 404 and 405); the last app's response is returned as it is. A
/// skipped response's body is closed, never sent. A delayed response is followed into: when it answers
/// with a caught status, the next app is tried from inside the responder (the env must still be valid
/// then, as it is until a response completes). Apps are tried with the env as they left it; a request
/// body read by a skipped app is rewound when the input is seekable.
/// Reads:  csgi.input (rewinds it between apps when seekable). Writes: nothing.
/// Order:  an app; put middleware around it or inside the cascaded apps.
#include <initializer_list>
#include <memory>
#include <set>
#include <vector>

#include "csgi/core/app.hpp"

namespace csgi::mw {

struct CascadeOptions {
  std::set<int> catch_statuses = {404, 405};
};

class Cascade {
public:
  /// Throws std::invalid_argument when `apps` is empty or holds an empty app.
  explicit Cascade(std::vector<App> apps, CascadeOptions options = {});
  Cascade(std::initializer_list<App> apps) : Cascade(std::vector<App>(apps)) {}
  Response operator()(Env& env) const;

  struct State {
    std::vector<App> apps;
    CascadeOptions options;
  };

private:
  std::shared_ptr<const State> state_;  // shared with delayed responses still in flight
};

}  // namespace csgi::mw
