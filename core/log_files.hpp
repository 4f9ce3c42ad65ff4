#pragma once
/// The log files a process owns, in one registry: reopened together after logrotate renamed them, flushed
/// before a process ends without destructors, and kept consistent across fork().
///
/// Every owner of a log file registers it for as long as it lives: the standalone server's --access-log
/// and --error-log, each mw::LogWriter (so each access_log middleware). An adapter that handles SIGUSR1
/// calls reopen_all() from its handler (outside signal context: it takes locks); a prefork worker calls
/// flush_all() before _exit(). flush_all() also runs at exit().
///
/// fork(): the registry's pthread_atfork handlers lock the registry and call before_fork() on every file
/// (which should take the file's own locks), then after_fork_parent() or after_fork_child(): a file with
/// a thread of its own must forget it in the child, where it does not exist, and start one there when it
/// needs it.
#include <memory>
#include <string>
#include <vector>

namespace csgi::log_files {

class File {
public:
  /// Reopens the file by name (at once, or before the next write). Throws std::exception on failure;
  /// the file then keeps writing where it wrote before.
  virtual void reopen() = 0;
  /// Returns when what was written before the call is in the file.
  virtual void flush() noexcept {}
  virtual void before_fork() noexcept {}
  virtual void after_fork_parent() noexcept {}
  virtual void after_fork_child() noexcept {}

protected:
  ~File() = default;
};

/// Registers / unregisters a file (thread-safe). A file must be removed before it is destroyed.
void add(File& f);
void remove(File& f);

/// Reopens every registered file; returns one message per file that could not be reopened.
std::vector<std::string> reopen_all();
/// Flushes every registered file.
void flush_all() noexcept;

/// Another copy of the registry in the same process: an app library links csgi's core statically and so
/// has its own. CSGI_APP exports the library's copy (`csgi_log_files_v1`) and load_app() links it to the
/// loader's while the library is loaded, so that the server's reopen_all() and flush_all() reach the
/// app's log files too. A peer is called outside this registry's lock.
struct Peer {
  std::vector<std::string> (*reopen_all)();
  void (*flush_all)() noexcept;
};
/// This copy of the registry, as a peer of others.
const Peer* self() noexcept;
/// Makes `peer` part of this registry until the returned token is destroyed; `keep` is held while the
/// peer is called (the library that holds its code). Nothing is linked when `peer` is this registry.
std::shared_ptr<void> link(const Peer& peer, std::shared_ptr<void> keep);

}  // namespace csgi::log_files
