#include "csgi/core/extensions.hpp"

#include <exception>
#include <utility>

#include "csgi/core/env.hpp"

namespace csgi {

namespace {
void report(Env& env, std::string_view what) noexcept {
  try {
    env.errors().write(std::string("csgix.cleanup handler failed: ").append(what));
  } catch (...) {
  }
}
}  // namespace

void CleanupHandlers::add(Handler h) {
  if (!h) return;
  std::lock_guard lock(mu_);
  handlers_.push_back(std::move(h));
}

std::size_t CleanupHandlers::size() const {
  std::lock_guard lock(mu_);
  return handlers_.size();
}

void CleanupHandlers::move_to(CleanupHandlers& to) {
  if (&to == this) return;
  std::scoped_lock lock(mu_, to.mu_);
  for (auto& h : handlers_) to.handlers_.push_back(std::move(h));
  handlers_.clear();
}

void CleanupHandlers::report_sent(Sent sent) const noexcept {
  std::lock_guard lock(mu_);
  if (!handlers_.empty()) sent_ = sent;
}

std::optional<CleanupHandlers::Sent> CleanupHandlers::sent() const noexcept {
  std::lock_guard lock(mu_);
  return sent_;
}

void CleanupHandlers::run(Env& env) noexcept {
  for (std::size_t i = 0;; ++i) {
    Handler h;
    {
      std::lock_guard lock(mu_);
      if (i >= handlers_.size()) {
        handlers_.clear();
        sent_.reset();
        return;
      }
      h = std::move(handlers_[i]);
    }
    try {
      h(env);
    } catch (const std::exception& e) {
      report(env, e.what());
    } catch (...) {
      report(env, "a non-standard exception");
    }
  }
}

}  // namespace csgi
