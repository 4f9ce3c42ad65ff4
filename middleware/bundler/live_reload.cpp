#include "csgi/middleware/bundler/detail/live_reload.hpp"

#include <unistd.h>

#include <filesystem>

#include "csgi/middleware/bundler/detail/module_graph.hpp"

#include <nlohmann/json.hpp>

namespace csgi::mw::bundler {

bool LiveHub::add(const WriterPtr& w) {
  std::lock_guard lock(mu_);
  // The comment names the process: under prefork, whose watcher feeds this stream.
  std::string hello = "retry: 1000\n: csgi bundler live reload, process " + std::to_string(::getpid()) + "\n\n";
  if (subs_.size() >= max_subscribers || !w->write(hello)) {
    w->close();
    return false;
  }
  subs_.push_back(w);
  return true;
}

std::size_t LiveHub::broadcast() {
  std::lock_guard lock(mu_);
  return send_all("event: change\ndata: " + std::to_string(++seq_) + "\n\n");
}

std::size_t LiveHub::broadcast_css(const std::vector<std::string>& paths) {
  std::string msg = "event: css\ndata: " + nlohmann::json(paths).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n\n";
  std::lock_guard lock(mu_);
  ++seq_;
  return send_all(msg);
}

std::size_t LiveHub::keep_alive() {
  std::lock_guard lock(mu_);
  return send_all(": keep-alive\n\n");
}

std::size_t LiveHub::send_all(const std::string& msg) {
  std::vector<WriterPtr> kept;
  kept.reserve(subs_.size());
  for (auto& w : subs_)
    if (w->write(msg)) kept.push_back(std::move(w));
  subs_.swap(kept);
  return subs_.size();
}

std::size_t LiveHub::subscribers() {
  std::lock_guard lock(mu_);
  return subs_.size();
}

void watch_tree(Watcher& w, const std::string& root, std::size_t max_dirs) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path top = fs::absolute(root, ec);
  if (ec) return;
  w.watch(top.lexically_normal().string());
  std::size_t n = 1;
  fs::recursive_directory_iterator it(top, fs::directory_options::skip_permission_denied, ec), end;
  for (; !ec && it != end && n < max_dirs; it.increment(ec)) {
    const auto& e = *it;
    std::string name = e.path().filename().string();
    if (!e.is_directory(ec) || e.is_symlink(ec)) continue;
    if (name == "node_modules" || name.starts_with(".")) {
      it.disable_recursion_pending();
      continue;
    }
    w.watch(e.path().lexically_normal().string());
    ++n;
  }
}

}  // namespace csgi::mw::bundler
