#include "csgi/core/log_files.hpp"

#include <pthread.h>

#include <algorithm>
#include <cstdlib>
#include <exception>
#include <mutex>

namespace csgi::log_files {

namespace {

struct Link {
  Peer peer;
  std::shared_ptr<void> keep;
};

struct Registry {
  std::mutex mu;
  std::vector<File*> files;
  std::vector<std::shared_ptr<Link>> peers;
};

// Never destroyed: files may be registered and flushed until the very end of the process.
Registry& registry() {
  static Registry* r = new Registry;
  return *r;
}

std::vector<std::shared_ptr<Link>> peers_now() {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  return r.peers;
}

void before_fork() noexcept {
  Registry& r = registry();
  r.mu.lock();
  for (File* f : r.files) f->before_fork();
}

void after_fork_parent() noexcept {
  Registry& r = registry();
  for (File* f : r.files) f->after_fork_parent();
  r.mu.unlock();
}

void after_fork_child() noexcept {
  Registry& r = registry();
  for (File* f : r.files) f->after_fork_child();
  r.mu.unlock();
}

void flush_at_exit() { flush_all(); }

void install_hooks() {
  static std::once_flag once;
  std::call_once(once, [] {
    registry();
    ::pthread_atfork(before_fork, after_fork_parent, after_fork_child);
    std::atexit(flush_at_exit);
  });
}

}  // namespace

void add(File& f) {
  install_hooks();
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  r.files.push_back(&f);
}

void remove(File& f) {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  std::erase(r.files, &f);
}

std::vector<std::string> reopen_all() {
  std::vector<std::string> errors;
  {
    Registry& r = registry();
    std::lock_guard lock(r.mu);
    for (File* f : r.files) {
      try {
        f->reopen();
      } catch (const std::exception& e) {
        errors.emplace_back(e.what());
      }
    }
  }
  for (const auto& l : peers_now()) {
    try {
      for (std::string& e : l->peer.reopen_all()) errors.push_back(std::move(e));
    } catch (const std::exception& e) {
      errors.emplace_back(e.what());
    }
  }
  return errors;
}

void flush_all() noexcept {
  {
    Registry& r = registry();
    std::lock_guard lock(r.mu);
    for (File* f : r.files) f->flush();
  }
  try {
    for (const auto& l : peers_now()) l->peer.flush_all();
  } catch (...) {  // copying the list failed (no memory): the peers flush at their own exit()
  }
}

const Peer* self() noexcept {
  static const Peer me{&reopen_all, &flush_all};
  return &me;
}

std::shared_ptr<void> link(const Peer& peer, std::shared_ptr<void> keep) {
  if (peer.reopen_all == self()->reopen_all) return nullptr;
  install_hooks();
  auto l = std::make_shared<Link>(Link{peer, std::move(keep)});
  {
    Registry& r = registry();
    std::lock_guard lock(r.mu);
    r.peers.push_back(l);
  }
  Link* raw = l.get();
  return std::shared_ptr<void>(raw, [](Link* x) {
    Registry& r = registry();
    std::lock_guard lock(r.mu);
    std::erase_if(r.peers, [x](const std::shared_ptr<Link>& p) { return p.get() == x; });
  });
}

}  // namespace csgi::log_files
