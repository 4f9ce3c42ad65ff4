#pragma once
/// The bundler's live-reload channel (BundlerOptions::live_reload): the Server-Sent Events streams of
/// one process, fed by that process's inotify watcher. Each subscriber is the Writer of a delayed
/// response; a change is one `event: change` to each. A subscriber whose client has gone (write()
/// false) is dropped at the next write: a change, or the keep-alive comment the watcher's thread
/// sends every BundlerOptions::live_reload_keepalive, so a closed tab does not stay on the list.
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "csgi/core/response.hpp"

namespace csgi::mw::bundler {

class Watcher;

class LiveHub {
public:
  static constexpr std::size_t max_subscribers = 1024;
  /// Sends the stream's opening (retry interval, a comment) and keeps the writer; false (and the
  /// writer closed) past max_subscribers or when the client has already gone.
  bool add(const WriterPtr& w);
  /// One `event: change` with a sequence number to every subscriber; returns how many got it.
  std::size_t broadcast();
  /// One `event: css` whose data is a JSON array of the root-relative stylesheets that changed (the
  /// loader swaps their text in place) to every subscriber; returns how many got it.
  std::size_t broadcast_css(const std::vector<std::string>& paths);
  /// A comment line (ignored by EventSource) to every subscriber, dropping those whose client has
  /// gone; returns how many are left.
  std::size_t keep_alive();
  std::size_t subscribers();

private:
  /// Writes `msg` to every subscriber and keeps those that took it.
  std::size_t send_all(const std::string& msg);

  std::mutex mu_;
  std::vector<WriterPtr> subs_;
  std::uint64_t seq_ = 0;
};

/// Watches every directory under `root` but node_modules/ and dot-directories (at most `max_dirs`), so
/// a process that has built nothing yet (another prefork worker served the page) still sees edits.
void watch_tree(Watcher& w, const std::string& root, std::size_t max_dirs = 4096);

}  // namespace csgi::mw::bundler
