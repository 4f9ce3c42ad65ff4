// The standalone server's public members and its start: the shared state of a process, the listening
// sockets and the choice between serving here (serve.cpp) and a prefork master (master.cpp).
#include "csgi/adapters/standalone/server.hpp"

#include <malloc.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <set>
#include <stdexcept>

#include "csgi/adapters/standalone/detail/exchange/request_body.hpp"
#include "csgi/adapters/standalone/detail/http3/quic_sockets.hpp"
#include "csgi/adapters/standalone/detail/process/binary_upgrade.hpp"
#include "csgi/adapters/standalone/detail/process/server_impl.hpp"
#include "csgi/adapters/standalone/detail/tls/tls.hpp"
#include "csgi/adapters/standalone/detail/websocket/websocket_session.hpp"

namespace csgi::standalone {

using namespace detail;

Server::Server(App app, ServerOptions options) : impl_(std::make_unique<Impl>()) {
  impl_->app = std::move(app);
  impl_->opt = std::move(options);
  if (!impl_->app) throw std::invalid_argument("csgi::standalone::Server: no app");
  if (impl_->opt.threads == 0) impl_->opt.threads = 1;
  if (impl_->opt.reload.load && impl_->opt.workers == 0) impl_->opt.workers = 1;
  if (!impl_->opt.handle_signals) impl_->sd.disable();
  if (!impl_->opt.script_name.empty() &&
      (impl_->opt.script_name.front() != '/' || impl_->opt.script_name.back() == '/'))
    throw std::invalid_argument("script name must start with '/' and not end with '/': " + impl_->opt.script_name);
  (void)ProxyTrust(impl_->opt.proxy_protocol, impl_->opt.trusted_proxies);  // throws for a bad block
}

Server::~Server() = default;

int Server::run() { return impl_->run(); }

void Server::stop() {
  std::lock_guard lock(impl_->mu);
  impl_->stop_requested = true;
  for (auto& t : impl_->threads) t->stop();
}

ServerStats& Server::stats() noexcept { return impl_->stats; }

std::vector<std::string> Server::addresses() const {
  std::lock_guard lock(impl_->mu);
  return impl_->addresses;
}

bool Server::wait_listening(std::chrono::milliseconds timeout) const {
  std::unique_lock lock(impl_->mu);
  impl_->cv.wait_for(lock, timeout, [&] { return impl_->listening || impl_->failed; });
  return impl_->listening;
}

void Server::Impl::announce(const std::vector<ListenSocket>& socks) {
  {
    std::lock_guard lock(mu);
    for (const auto& s : socks) addresses.push_back(s.display);
    listening = true;
  }
  cv.notify_all();
  for (const auto& s : socks) {
    std::string url = s.tcp ? (s.tls ? "https://" : "http://") + s.display + "/" : s.display;
    if (opt.on_listening) {
      opt.on_listening(url);
    } else {
      std::printf("csgi: listening on %s\n", url.c_str());
      std::fflush(stdout);
    }
  }
}

void Server::Impl::notify_master(WorkerBoard::Cause cause) noexcept {
  if (notify_fd < 0) return;
  Notice n{::getpid(), cause};
  ssize_t w = ::write(notify_fd, &n, sizeof n);
  (void)w;
  ::kill(master_pid, SIGCHLD);
}

// A worker past --max-requests or --max-worker-memory: the master forks its replacement now, and this
// worker stops accepting and finishes its requests (as on SIGTERM).
void Server::Impl::retire(Shared& sh, WorkerBoard::Cause cause, const std::string& why) {
  notify_master(cause);
  sh.errors.write("csgi: worker " + std::to_string(::getpid()) + " " + why +
                  ": it stops accepting, finishes its requests and exits (a new worker replaces it)");
  std::lock_guard lock(mu);
  for (auto& t : threads) t->stop();
}

// "serving, N requests served" (the process's own count; a master's is its workers' sum).
std::string Server::Impl::served_status() const {
  std::uint64_t n = reports ? reports->served() : stats.snapshot().requests_total;
  return "serving, " + std::to_string(n) + " requests served";
}

namespace {
// With certificates and no listener marked https://, every listener serves TLS (as gunicorn and uvicorn
// do when given a certificate); an https:// listener without certificates is an error.
void choose_tls_listeners(Shared& sh) {
  bool marked = false;
  for (const auto& s : sh.listeners) marked = marked || s.tls;
  if (marked && !sh.tls) throw std::runtime_error("--listen https://…: no certificate; give --tls-cert FILE --tls-key FILE");
  if (sh.tls && !marked)
    for (auto& s : sh.listeners) s.tls = true;
}
}  // namespace

namespace {
// glibc returns the top of its heap to the kernel once 128 KiB of it is free, and serves blocks of
// 128 KiB or more from mmap: a request body's buffers, freed after each request, went back to the
// kernel and were faulted in again, zeroed, for the next (35 page faults per 100 KB upload). The server
// keeps them: blocks up to 4 MiB from the heap, its top returned past 32 MiB free — within the range
// glibc's own adaptive thresholds reach. Malloc tunables given in GLIBC_TUNABLES are left as given.
void keep_freed_memory() noexcept {
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  if (tunables && std::strstr(tunables, "glibc.malloc.")) return;
  ::mallopt(M_MMAP_THRESHOLD, 4 << 20);
  ::mallopt(M_TRIM_THRESHOLD, 32 << 20);
}
}  // namespace

int Server::Impl::run() {
  ::signal(SIGPIPE, SIG_IGN);
  keep_freed_memory();
  Shared sh;
  sh.configure(app, opt, stats);
  stats.attach_adapter("standalone");
  stats.set_workers(opt.workers > 0 ? opt.workers : 1);
  upgrade_fd = take_upgrade_fd();
  std::optional<QuicSockets> quic;
  try {
    sh.error_log.open(opt.error_log);
    if (!opt.tls_client_ca.empty() && opt.tls_certificates.empty())
      throw std::runtime_error("--tls-client-ca: give --tls-cert FILE --tls-key FILE too");
    if (!opt.tls_certificates.empty()) {
      sh.tls = make_tls_context(opt.tls_certificates, opt.tls_client_ca, opt.h2_max_streams > 0);
      if (std::string notes = sh.tls->notes(); !notes.empty()) sh.errors.write("csgi: " + notes);
    }
    sh.listeners = systemd_sockets();
    if (sh.listeners.empty()) {
      std::vector<std::string> specs = opt.listen;
      if (specs.empty()) specs.push_back("127.0.0.1:5000");
      for (const auto& spec : specs) sh.listeners.push_back(open_listen(parse_listen(spec), opt.reuseport));
    }
    choose_tls_listeners(sh);
    // --http3: a UDP socket per io thread of each worker on each TLS listener's port, made here so that
    // their numbering in the kernel's SO_REUSEPORT group is the server's (quic_sockets.hpp).
    if (opt.http3) {
      quic.emplace(sh.listeners, opt.workers > 0 ? opt.workers : 1, opt.threads);
      sh.quic = &*quic;
      if (!quic->route(opt.workers == 0 ? std::set<unsigned>{0} : std::set<unsigned>{}))
        throw std::runtime_error(std::string("HTTP/3: cannot attach the routing program to the UDP sockets: ") +
                                 std::strerror(errno));
    }
  } catch (...) {
    {
      std::lock_guard lock(mu);
      failed = true;
    }
    cv.notify_all();
    for (auto& s : sh.listeners) ::close(s.fd);
    throw;
  }
  shared = &sh;
  board = WorkerBoard::create();
  for (const auto& s : sh.listeners) board->add_listener(s.fd, s.display);
  stats.set_board(board.get());
  if (opt.workers == 0) {
    sh.slot = board->claim();
    WorkerBoard::set_pid(sh.slot, ::getpid());
  }
  int rc = opt.workers > 0 ? master(sh) : serve(sh, false);
  stats.set_board(nullptr);
  for (auto& s : sh.listeners) {
    ::close(s.fd);
    if (!s.tcp && !s.systemd && s.display.rfind("unix:", 0) == 0 && opt.workers == 0) ::unlink(s.display.c_str() + 5);
  }
  return rc;
}

}  // namespace csgi::standalone
