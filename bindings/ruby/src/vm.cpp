// The Rack host module, libcsgi_rack_host.so (rack_host_abi.h): the Ruby VM of a serving process on a
// thread of its own. Ruby is initialised on that thread and only that thread calls it; the app returns a
// delayed response at once and the VM thread answers it, so io threads never wait for Ruby.
#include <ruby.h>
#include <ruby/thread.h>
#include <signal.h>
#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <filesystem>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "csgi/adapters/standalone/server.hpp"
#include "csgi/bindings/ruby/rack_host_abi.h"
#include "csgi/core/app_library.hpp"
#include "csgi/core/log_files.hpp"
#include "request.hpp"

namespace csgi::rack_host {
namespace {

class Vm {
public:
  /// `in_worker`: a failed boot ends the process with kWorkerCannotStart instead of being reported.
  Vm(std::string config_ru, std::vector<std::string> args, bool in_worker)
      : config_(std::move(config_ru)), args_(std::move(args)), in_worker_(in_worker) {}

  /// Starts the VM thread; it boots Ruby and builds the app, then serves the queue.
  void start() {
    pid_ = ::getpid();
    std::thread([this] { main(); }).detach();
  }

  /// Blocks until Ruby has set its signal dispositions and this thread has put the process's back.
  void wait_setup() {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return set_up_; });
  }

  /// Blocks until the app is built; "" or the error that stopped it.
  std::string wait_booted() {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return booted_; });
    return boot_error_;
  }

  bool started_here() const { return pid_ == ::getpid(); }

  /// Has the VM thread run Ruby's at_exit handlers and END blocks once it has loaded the app and served
  /// the requests posted before, and stop serving; waits for that at most `limit`. Only in the process that started the VM (started_here).
  /// False when they did not finish in time (the VM thread is still in a request or a handler).
  bool run_at_exit(std::chrono::seconds limit) {
    std::unique_lock lock(mu_);
    stopping_ = true;  // a VM still loading the app serves nothing more once it has
    cv_.notify_all();
    return cv_.wait_for(lock, limit, [&] { return stopped_ || (booted_ && !boot_error_.empty()); });
  }

  void post(std::unique_ptr<Job> job) {
    {
      std::lock_guard lock(mu_);
      jobs_.push_back(std::move(job));
    }
    cv_.notify_all();
  }

private:
  // The signals the server handles (its own threads get them, not Ruby's), and the dispositions Ruby's
  // initialisation would replace, restored after it but for SIGVTALRM, with which Ruby wakes its threads.
  static void block_server_signals() {
    sigset_t set;
    sigemptyset(&set);
    for (int s : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGCHLD, SIGPIPE, SIGWINCH, SIGALRM})
      sigaddset(&set, s);
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
  }

  struct Dispositions {
    struct sigaction saved[NSIG];
    void save() {
      for (int s = 1; s < NSIG; ++s) sigaction(s, nullptr, &saved[s]);
    }
    void restore() {
      for (int s = 1; s < NSIG; ++s)
        if (s != SIGVTALRM && s != SIGKILL && s != SIGSTOP) sigaction(s, &saved[s], nullptr);
    }
  };

  void finish_setup() {
    {
      std::lock_guard lock(mu_);
      set_up_ = true;
    }
    cv_.notify_all();
  }

  void finish_boot(std::string error) {
    if (!error.empty() && in_worker_) {
      std::fprintf(stderr, "csgi: --rack: the app did not load in worker %d:\n%s\n", static_cast<int>(::getpid()),
                   error.c_str());
      std::fflush(stderr);
      ::_exit(standalone::kWorkerCannotStart);
    }
    {
      std::lock_guard lock(mu_);
      booted_ = true;
      boot_error_ = std::move(error);
    }
    cv_.notify_all();
  }

  void main() {
    block_server_signals();
    RUBY_INIT_STACK;
    static Dispositions dispositions;
    dispositions.save();
    static char arg0[] = "csgi", arg1[] = "-e", arg2[] = "";
    static char* argv_storage[] = {arg0, arg1, arg2, nullptr};
    int argc = 3;
    char** argv = argv_storage;
    ruby_sysinit(&argc, &argv);
    int state = ruby_setup();
    block_server_signals();  // ruby_setup unblocks every signal on its thread
    if (state) {
      dispositions.restore();
      finish_setup();
      finish_boot("--rack: the Ruby VM did not start (ruby_setup failed)");
      return;
    }
    void* node = ruby_options(argc, argv);  // the load path and RubyGems, as the ruby program has them
    block_server_signals();
    int status = 0;
    dispositions.restore();
    finish_setup();
    if (!ruby_executable_node(node, &status)) {
      finish_boot("--rack: the Ruby VM did not start (ruby_options failed)");
      return;
    }
    ruby_script("csgi");
    std::string error = load_app();
    if (!error.empty()) {
      finish_boot(std::move(error));
      return;
    }
    finish_boot("");
    serve_forever();
  }

  std::string load_app() {
    int state = 0;
    rb_protect(define_glue, Qnil, &state);
    if (state) return "--rack: cannot define the csgi glue: " + take_error();
    VALUE argv = rb_get_argv();
    rb_ary_clear(argv);
    for (const std::string& a : args_) rb_ary_push(argv, rb_str_new(a.data(), static_cast<long>(a.size())));
    VALUE path = rb_str_new(config_.data(), static_cast<long>(config_.size()));
    app_ = rb_protect(build_app, path, &state);
    if (state) return "--rack: " + config_ + " did not load: " + take_error();
    rb_gc_register_mark_object(app_);
    return {};
  }

  struct Wait {
    Vm* vm;
    std::unique_ptr<Job> job;
    bool interrupted = false;
  };

  static void* wait_without_gvl(void* p) {
    auto* w = static_cast<Wait*>(p);
    std::unique_lock lock(w->vm->mu_);
    w->vm->cv_.wait(lock, [&] { return !w->vm->jobs_.empty() || w->interrupted || w->vm->stopping_; });
    if (!w->vm->jobs_.empty()) {
      w->job = std::move(w->vm->jobs_.front());
      w->vm->jobs_.pop_front();
    }
    return nullptr;
  }

  // A job already queued, taken without giving up the GVL (a busy server serves its queue in a row).
  bool take_queued(Wait& w) {
    std::lock_guard lock(mu_);
    if (jobs_.empty()) return false;
    w.job = std::move(jobs_.front());
    jobs_.pop_front();
    return true;
  }

  static void unblock(void* p) {
    auto* w = static_cast<Wait*>(p);
    {
      std::lock_guard lock(w->vm->mu_);
      w->interrupted = true;
    }
    w->vm->cv_.notify_all();
  }

  // Waits for a job without the GVL (other Ruby threads of the app run meanwhile) and serves it, until
  // run_at_exit(); then runs the at_exit handlers.
  void serve_forever() {
    for (;;) {
      Wait w{this, nullptr};
      if (!take_queued(w)) rb_thread_call_without_gvl(wait_without_gvl, &w, unblock, &w);
      if (w.job) {
        serve(*w.job, app_);
        continue;
      }
      {
        std::lock_guard lock(mu_);
        if (stopping_) break;
      }
      rb_thread_check_ints_protected();
    }
    int state = 0;
    rb_protect([](VALUE) { ruby_finalize(); return Qnil; }, Qnil, &state);  // Ruby reports a handler's error
    if (state) rb_set_errinfo(Qnil);
    {
      std::lock_guard lock(mu_);
      stopped_ = true;
    }
    cv_.notify_all();
  }

  static void rb_thread_check_ints_protected() {
    int state = 0;
    rb_protect([](VALUE) { rb_thread_check_ints(); return Qnil; }, Qnil, &state);
    if (state) rb_set_errinfo(Qnil);
  }

  std::string config_;
  std::vector<std::string> args_;
  bool in_worker_;
  VALUE app_ = Qnil;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::unique_ptr<Job>> jobs_;
  pid_t pid_ = 0;
  bool set_up_ = false;
  bool booted_ = false;
  bool stopping_ = false;
  bool stopped_ = false;
  std::string boot_error_;
};

// The VM of this process (never destroyed: the thread serves until the process ends), and what a worker
// forked from the master starts its own from.
Vm* g_vm = nullptr;
pid_t g_master = 0;
std::string g_config;
std::vector<std::string> g_args;

// Ruby's at_exit handlers when the serving process ends: this module's log registry (linked to the
// program's, rack_host.cpp) flushes its files at exit() and before a prefork worker's _exit(), after the
// server stopped serving.
class AtProcessEnd final : public log_files::File {
public:
  static constexpr std::chrono::seconds limit{10};
  AtProcessEnd() { log_files::add(*this); }
  void reopen() override {}
  void flush() noexcept override {
    Vm* vm = g_vm;
    if (!vm || !vm->started_here()) return;  // none, or a process the app forked
    if (!vm->run_at_exit(limit)) {
      std::fprintf(stderr, "csgi: --rack: the at_exit handlers of process %d did not finish within %d s\n",
                   static_cast<int>(::getpid()), static_cast<int>(limit.count()));
      std::fflush(stderr);
    }
  }
};

void start_in_worker() {
  if (::getppid() != g_master) return;  // a process forked by a worker (or by the app) has no VM
  g_vm = new Vm(g_config, g_args, true);
  g_vm->start();
  // The worker sets its signal handling after this returns: not while Ruby sets and this host restores.
  g_vm->wait_setup();
}

// A thread that hands requests to the VM thread runs as SCHED_BATCH: woken by the VM thread's answer, it
// waits for the VM thread to block (or for the scheduler's tick) instead of preempting it, so the VM
// thread finishes its request and goes to sleep in one switch, not two. Set once per thread.
void hand_over_without_preemption() {
  static thread_local const bool set = [] {
    sched_param param{};
    return ::sched_setscheduler(0, SCHED_BATCH, &param) == 0;
  }();
  (void)set;
}

App rack_app() {
  return [](Env& env) {
    Vm* vm = g_vm;
    if (!vm) return Response::error(503, "the Rack app runs in the worker processes");
    hand_over_without_preemption();
    return Response::delayed([vm, &env](Responder r) {
      auto job = std::make_unique<Job>();
      job->env = &env;
      job->responder = std::move(r);
      vm->post(std::move(job));
    });
  };
}

App load(const std::string& config_ru, unsigned workers, std::vector<std::string> args) {
  if (g_vm || g_master) throw std::runtime_error("--rack: Ruby is already running in this process");
  static AtProcessEnd at_process_end;
  std::error_code ec;
  std::string path = std::filesystem::absolute(config_ru, ec).string();
  if (ec || !std::filesystem::is_regular_file(path, ec))
    throw std::runtime_error("--rack: " + config_ru + ": no such file");
  if (workers > 0) {
    g_master = ::getpid();
    g_config = path;
    g_args = std::move(args);
    ::pthread_atfork(nullptr, nullptr, start_in_worker);
    return rack_app();
  }
  auto* vm = new Vm(path, std::move(args), false);
  vm->start();
  std::string error = vm->wait_booted();
  if (!error.empty()) throw std::runtime_error(error);
  g_vm = vm;
  return rack_app();
}

int load_rack_app(const char* config_ru, unsigned workers, const char* const* argv, int argc, void* app_out,
                  char* err, size_t err_size) noexcept {
  try {
    *static_cast<App*>(app_out) = load(config_ru, workers, std::vector<std::string>(argv, argv + argc));
    return 0;
  } catch (const std::exception& e) {
    if (err_size) {
      std::strncpy(err, e.what(), err_size - 1);
      err[err_size - 1] = '\0';
    }
    return -1;
  }
}

}  // namespace
}  // namespace csgi::rack_host

extern "C" __attribute__((visibility("default"))) const csgi_rack_host* csgi_rack_host_v1() {
  static const csgi_rack_host host{CSGI_RACK_HOST_ABI_VERSION, csgi::detail::cxx_abi_tag(),
                                   csgi::detail::core_layout_tag(), sizeof(csgi::App),
                                   &csgi::rack_host::load_rack_app};
  return &host;
}

// This module's copy of csgi::log_files, linked to the program's by rack_host.cpp.
extern "C" __attribute__((visibility("default"))) const csgi::log_files::Peer* csgi_log_files_v1() {
  return csgi::log_files::self();
}
