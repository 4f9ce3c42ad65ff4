#include "csgi/adapters/standalone/detail/process/handover.hpp"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "csgi/adapters/standalone/detail/process/shared.hpp"
#include "csgi/adapters/standalone/detail/process/systemd_notify.hpp"
#include "csgi/adapters/standalone/detail/process/worker_reports.hpp"

namespace csgi::standalone::detail {

namespace {
constexpr unsigned retiring = ~0u;
constexpr std::chrono::seconds upgrade_deadline{60};

std::string describe_exit(int s) {
  return WIFSIGNALED(s) ? "signal " + std::to_string(WTERMSIG(s)) : "exit " + std::to_string(WEXITSTATUS(s));
}
}  // namespace

Handover::Handover(const ServerOptions& opt, Shared& sh, SystemdNotify& sd, WorkerReports& reports, int& upgrade_fd,
                   Workers& workers, unsigned& generation, std::function<pid_t()> spawn)
    : opt_(opt), sh_(sh), sd_(sd), reports_(reports), upgrade_fd_(upgrade_fd), workers_(workers),
      generation_(generation), spawn_(std::move(spawn)) {
  reload_ = static_cast<bool>(opt.reload.load);
  if (!reload_ || (opt.reload.files.empty() && opt.reload.trees.empty())) return;
  try {
    watch_.emplace(opt.reload.files, opt.reload.trees, opt.reload.tree_suffix);
  } catch (const std::exception& e) {
    log(std::string("csgi: --reload: ") + e.what() + "; changes are not watched");
  }
}

void Handover::log(const std::string& line) { sh_.errors.write(line); }

std::string Handover::status() const {
  return "serving, " + std::to_string(reports_.served()) + " requests served";
}

std::size_t Handover::ready_in(unsigned generation) const {
  std::size_t n = 0;
  for (const auto& [pid, g] : workers_) n += g == generation && ready_.count(pid);
  return n;
}

std::size_t Handover::alive_in(unsigned generation) const {
  std::size_t n = 0;
  for (const auto& [pid, g] : workers_) n += g == generation;
  return n;
}

void Handover::start_generation() {
  cancel_pending();
  pending_ = generation_ + 1;
  for (unsigned i = 0; i < opt_.workers; ++i)
    if (pid_t p = spawn_(); p > 0) workers_[p] = pending_;
}

void Handover::cancel_pending() {
  if (!pending_) return;
  for (auto& [pid, g] : workers_)
    if (g == pending_) {
      g = retiring;
      ::kill(pid, SIGTERM);
    }
  pending_ = 0;
}

void Handover::commit_pending() {
  bool replacing = alive_in(generation_) > 0;
  for (auto& [pid, g] : workers_)
    if (g == generation_) ::kill(pid, SIGTERM);
  generation_ = pending_;
  pending_ = 0;
  if (replacing) log("csgi: reload: the new workers listen; the old ones finish their requests and exit");
  else log("csgi: the workers listen");
}

void Handover::poll(bool stopping) {
  auto now = Clock::now();
  for (pid_t p : reports_.take_ready()) ready_.insert(p);
  if (pending_ && !stopping && ready_in(pending_) >= opt_.workers) commit_pending();
  if (!announced_ && !pending_ && !stopping && opt_.workers > 0 && ready_in(generation_) >= opt_.workers) {
    announced_ = true;
    // A master started by a binary upgrade tells the old one, which hands systemd this pid as MAINPID.
    if (upgrade_fd_ >= 0)
      tell_upgrade_ready(upgrade_fd_);
    else
      sd_.ready(status());
  }
  pid_t new_master = upgrade_.pid();
  std::string why;
  switch (upgrade_.poll(now, why)) {
    case BinaryUpgrade::State::ready:
      log("csgi: binary upgrade: the new master " + std::to_string(new_master) +
          " is ready; this one stops its workers gracefully and exits");
      sd_.ready("handed over to the new master " + std::to_string(new_master), new_master);
      handed_over_ = true;
      break;
    case BinaryUpgrade::State::failed:
      log("csgi: binary upgrade failed: " + why + "; this master keeps serving");
      sd_.ready(status());
      break;
    default: break;
  }
  if (watch_ && !stopping && !handed_over_) {
    if (std::string changed = watch_->poll(now); !changed.empty()) {
      log("csgi: reload: " + changed + " changed; starting new workers");
      start_generation();
    }
  }
  // The watchdog hears from a master that supervises: workers serve (or, with --reload, wait for a fix),
  // or it is stopping; not from one that handed over (the new master is systemd's main process now).
  std::size_t alive = alive_in(generation_);
  if ((alive > 0 || reload_ || stopping) && !handed_over_)
    sd_.tick(now, reports_.served(), std::to_string(alive) + " workers, ");
}

void Handover::exited(pid_t pid, int wait_status) {
  if (pid == upgrade_.pid()) upgrade_.exited(wait_status);
  bool was_ready = ready_.erase(pid) > 0;
  auto it = workers_.find(pid);
  if (it == workers_.end() || !pending_ || it->second != pending_ || was_ready) return;
  cancel_pending();
  log("csgi: reload failed: a new worker could not start (" + describe_exit(wait_status) + "; its reason is above); " +
      (alive_in(generation_) > 0 ? "the old workers keep serving" : "no worker serves until the next change"));
}

void Handover::restarting() {
  cancel_pending();
  announced_ = false;
  sd_.reloading("restarting the workers");
}

void Handover::upgrade() {
  if (handed_over_) return;
  std::string why;
  sd_.reloading("binary upgrade: starting the new master");
  if (!upgrade_.start(sh_.listeners, upgrade_deadline, why)) {
    log("csgi: binary upgrade failed: " + why + "; this master keeps serving");
    sd_.ready(status());
    return;
  }
  log("csgi: binary upgrade: started the new master " + std::to_string(upgrade_.pid()));
}

}  // namespace csgi::standalone::detail
