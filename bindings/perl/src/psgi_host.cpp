// The PSGI side of csgi (psgi_host.hpp): the perl thread and its queue, the PSGI env, and the XSUBs
// through which lib/CSGI.pm answers a request. No C++ exception leaves an XSUB: each does its work in a
// helper that catches and leaves a message in `failure`, and croaks only after the helper has returned,
// when no C++ object with a destructor is alive in its frame (croak unwinds with longjmp).
#include "csgi/bindings/perl/src/psgi_host.hpp"

#include <unistd.h>

#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>

#include "csgi/core/app_failure.hpp"
#include "csgi/core/extensions.hpp"
#include "csgi/core/keys.hpp"
#include "csgi/core/process.hpp"

#define PERL_NO_GET_CONTEXT
#include <EXTERN.h>
#include <perl.h>
#include <XSUB.h>

namespace csgi::perl {
namespace {

// One request: its env until the response is complete (then null, APP-3), and the way to answer it.
struct Job {
  Env* env;
  Responder responder;
  WriterPtr writer;
  bool answered = false;
  bool taken = false;  // the app took the connection (psgix.io): the server ignores any answer

  Job(Env& e, Responder r) : env(&e), responder(std::move(r)) {}
  Job(const Job&) = delete;
  ~Job() {
    if (!answered && !taken) fail("the PSGI app dropped its responder without answering");
  }
  // The app failed: logged as every adapter logs a failed app (core/app_failure.hpp); 500 (or the problem
  // response app_failure_response() makes) when nothing was sent yet, else the body ends there.
  void fail(std::string_view what) noexcept {
    try {
      std::string message(what);
      while (!message.empty() && message.back() == '\n') message.pop_back();
      if (!env) {
        std::fprintf(stderr, "csgi: the PSGI app failed after its response: %s\n", message.c_str());
      } else if (!answered) {
        answered = true;
        responder.respond(app_failure_response(*env, std::make_exception_ptr(std::runtime_error(message))));
      } else {
        env->errors().write(app_failure_line(*env, 0, "the PSGI app raised: " + message));
        if (writer) writer->close();
      }
    } catch (...) {
    }
    complete();
  }
  ErrorStream* errors() const noexcept { return env ? &env->errors() : nullptr; }
  void complete() noexcept {
    env = nullptr;
    writer.reset();
  }
};
using JobPtr = std::shared_ptr<Job>;

class Host {
public:
  Host(PerlInterpreter* interp, SV* app, bool multiprocess) : interp_(interp), app_(app), multiprocess_(multiprocess) {}
  Host(const Host&) = delete;
  ~Host() { stop(); }

  void submit(Env& env, Responder r) {
    auto job = std::make_shared<Job>(env, std::move(r));
    std::lock_guard lock(mu_);
    if (unsigned g = fork_generation(); g != generation_) {
      // The first request of this process: its perl thread (a forked worker inherits none).
      generation_ = g;
      stopping_ = false;
      running_ = true;
      std::thread([this] { run(); }).detach();
    }
    queue_.push_back(std::move(job));
    cv_.notify_one();
  }

  void stop() {
    std::unique_lock lock(mu_);
    if (generation_ != fork_generation()) return;
    stopping_ = true;
    cv_.notify_all();
    cv_.wait(lock, [this] { return !running_; });
    generation_ = ~0u;
  }

private:
  void run() {
    PERL_SET_CONTEXT(interp_);
    for (;;) {
      JobPtr job;
      {
        std::unique_lock lock(mu_);
        cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
        if (queue_.empty()) break;
        job = std::move(queue_.front());
        queue_.pop_front();
      }
      try {
        handle(std::move(job));
      } catch (const std::exception& e) {  // nothing leaves the thread
        std::fprintf(stderr, "csgi: the PSGI host: %s\n", e.what());
      }
    }
    std::lock_guard lock(mu_);
    running_ = false;
    cv_.notify_all();
  }

  void handle(JobPtr job);

  PerlInterpreter* interp_;
  SV* app_;
  bool multiprocess_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<JobPtr> queue_;
  unsigned generation_ = ~0u;
  bool stopping_ = false;
  bool running_ = false;
};

// ---- Perl objects: a blessed reference to an IV holding a heap JobPtr*.

SV* make_object(pTHX_ JobPtr job, const char* cls) {
  auto* h = new JobPtr(std::move(job));
  SV* ref = newRV_noinc(newSViv(PTR2IV(h)));
  sv_bless(ref, gv_stashpv(cls, GV_ADD));
  return ref;
}

JobPtr* handle_of(pTHX_ SV* self) {
  if (!SvROK(self)) return nullptr;
  return INT2PTR(JobPtr*, SvIV(SvRV(self)));
}

thread_local std::string failure;  // the message of the helper that failed, for its XSUB's croak

void store(pTHX_ HV* hv, std::string_view key, SV* value) {
  (void)hv_store(hv, key.data(), static_cast<I32>(key.size()), value, 0);
}

// Never undef: newSVpvn(nullptr, 0), which an empty view may give, makes an undefined value.
SV* text_sv(pTHX_ std::string_view t) { return t.empty() ? newSVpvs("") : newSVpvn(t.data(), t.size()); }

HV* psgi_env(pTHX_ const JobPtr& job, bool multiprocess) {
  HV* hv = newHV();
  Env& env = *job->env;
  std::string_view scheme = "http";
  for (const Env::Entry& e : env) {
    if (e.key == keys::url_scheme) scheme = e.value.text();
    if (e.key.starts_with("csgi.") || e.key.starts_with("csgix.")) continue;
    switch (e.value.type()) {
      case Value::Type::text: store(aTHX_ hv, e.key, text_sv(aTHX_ e.value.text())); break;
      case Value::Type::integer:
      case Value::Type::boolean: store(aTHX_ hv, e.key, newSViv(e.value.integer())); break;
      case Value::Type::object: break;
    }
  }
  // PSGI requires these (possibly empty); SCRIPT_NAME is never "/".
  for (std::string_view key : {keys::SCRIPT_NAME, keys::PATH_INFO, keys::QUERY_STRING, keys::REQUEST_URI})
    if (!hv_exists(hv, key.data(), static_cast<I32>(key.size()))) store(aTHX_ hv, key, newSVpvs(""));
  if (env[keys::SCRIPT_NAME] == "/") store(aTHX_ hv, keys::SCRIPT_NAME, newSVpvs(""));
  AV* version = newAV();
  av_push(version, newSViv(1));
  av_push(version, newSViv(1));
  store(aTHX_ hv, "psgi.version", newRV_noinc(reinterpret_cast<SV*>(version)));
  store(aTHX_ hv, "psgi.url_scheme", text_sv(aTHX_ scheme));
  store(aTHX_ hv, "psgi.input", make_object(aTHX_ job, "CSGI::Input"));
  store(aTHX_ hv, "psgi.errors", make_object(aTHX_ job, "CSGI::Errors"));
  store(aTHX_ hv, "psgi.multithread", newSViv(0));
  store(aTHX_ hv, "psgi.multiprocess", newSViv(multiprocess));
  store(aTHX_ hv, "psgi.run_once", newSViv(0));
  store(aTHX_ hv, "psgi.nonblocking", newSViv(0));
  store(aTHX_ hv, "psgi.streaming", newSViv(1));
  store(aTHX_ hv, "psgix.input.buffered", newSViv(env.input().seekable()));
  store(aTHX_ hv, "psgix.harakiri", newSViv(env.flag(keys::x::harakiri)));
  return hv;
}

void Host::handle(JobPtr job) {
  dTHXa(interp_);
  dSP;
  ENTER;
  SAVETMPS;
  PUSHMARK(SP);
  EXTEND(SP, 3);
  PUSHs(app_);
  mPUSHs(newRV_noinc(reinterpret_cast<SV*>(psgi_env(aTHX_ job, multiprocess_))));
  mPUSHs(make_object(aTHX_ job, "CSGI::Request"));
  PUTBACK;
  job.reset();  // the Perl objects hold it now
  call_pv("CSGI::_handle", G_DISCARD | G_EVAL);
  if (SvTRUE(ERRSV)) std::fprintf(stderr, "csgi: CSGI::_handle: %s\n", SvPV_nolen(ERRSV));
  FREETMPS;
  LEAVE;
}

// ---- helpers the XSUBs call; each returns false with `failure` set.

bool to_headers(pTHX_ SV* sv, Headers& out) {
  if (!SvROK(sv) || SvTYPE(SvRV(sv)) != SVt_PVAV) {
    failure = "headers must be an array reference";
    return false;
  }
  AV* av = reinterpret_cast<AV*>(SvRV(sv));
  SSize_t n = av_count(av);
  if (n % 2) {
    failure = "headers must hold name/value pairs (an odd number of items)";
    return false;
  }
  for (SSize_t i = 0; i < n; i += 2) {
    SV** name = av_fetch(av, i, 0);
    SV** value = av_fetch(av, i + 1, 0);
    STRLEN nl = 0, vl = 0;
    const char* np = name ? SvPV(*name, nl) : "";
    const char* vp = value ? SvPV(*value, vl) : "";
    out.add(std::string(np, nl), std::string(vp, vl));
  }
  return true;
}

bool to_status(pTHX_ SV* sv, int& status) {
  IV s = SvIV(sv);
  if (!looks_like_number(sv) || s < 100 || s > 999) {
    failure = "the status must be a number from 100 to 999";
    return false;
  }
  status = static_cast<int>(s);
  return true;
}

Job* open_job(pTHX_ SV* self) {
  JobPtr* h = handle_of(aTHX_ self);
  if (!h || !*h) {
    failure = "not a CSGI::Request";
    return nullptr;
  }
  if ((*h)->answered) {
    failure = "this request has been answered already";
    return nullptr;
  }
  return h->get();
}

bool respond(pTHX_ SV* self, SV* status_sv, SV* headers_sv, Body body) {
  try {
    Job* job = open_job(aTHX_ self);
    Response r;
    if (!job || !to_status(aTHX_ status_sv, r.status) || !to_headers(aTHX_ headers_sv, r.headers)) return false;
    r.body = std::move(body);
    job->answered = true;
    job->responder.respond(std::move(r));
    job->complete();
    return true;
  } catch (const std::exception& e) {
    failure = e.what();
    return false;
  }
}

SV* start(pTHX_ SV* self, SV* status_sv, SV* headers_sv) {
  try {
    Job* job = open_job(aTHX_ self);
    int status = 0;
    Headers headers;
    if (!job || !to_status(aTHX_ status_sv, status) || !to_headers(aTHX_ headers_sv, headers)) return nullptr;
    job->answered = true;
    job->writer = job->responder.start(status, std::move(headers));
    return make_object(aTHX_ *handle_of(aTHX_ self), "CSGI::Writer");
  } catch (const std::exception& e) {
    failure = e.what();
    return nullptr;
  }
}

void fail(pTHX_ SV* self, SV* message) {
  JobPtr* h = handle_of(aTHX_ self);
  if (!h || !*h) return;
  STRLEN len = 0;
  const char* m = SvPV(message, len);
  (*h)->fail(std::string_view(m, len));
}

bool inform(pTHX_ SV* self, SV* status_sv, SV* headers_sv) {
  try {
    Job* job = open_job(aTHX_ self);
    int status = 0;
    Headers headers;
    if (!job || !to_status(aTHX_ status_sv, status) || !to_headers(aTHX_ headers_sv, headers)) return false;
    auto* info = job->env->object<Informational>(keys::x::informational);
    return info && status < 200 && status != 101 && info->send(status, headers);
  } catch (const std::exception& e) {
    return false;
  }
}

bool informational_offered(pTHX_ SV* self) {
  JobPtr* h = handle_of(aTHX_ self);
  return h && *h && (*h)->env && (*h)->env->object<Informational>(keys::x::informational);
}

void harakiri(pTHX_ SV* self) {
  JobPtr* h = handle_of(aTHX_ self);
  if (h && *h && (*h)->env && (*h)->env->flag(keys::x::harakiri))
    (*h)->env->set_bool(keys::x::harakiri_commit, true);
}

bool write_chunk(pTHX_ SV* self, SV* chunk) {
  JobPtr* h = handle_of(aTHX_ self);
  if (!h || !*h || !(*h)->writer) {
    failure = "the writer is closed";
    return false;
  }
  STRLEN len = 0;
  const char* p = SvPV(chunk, len);
  try {
    return (*h)->writer->write(std::string_view(p, len));
  } catch (const std::exception& e) {
    failure = e.what();
    return false;
  }
}

void close_writer(pTHX_ SV* self) {
  JobPtr* h = handle_of(aTHX_ self);
  if (!h || !*h || !(*h)->writer) return;
  try {
    (*h)->writer->close();
  } catch (...) {
  }
  (*h)->complete();
}

// IO::Handle::read: read($buf, $len, $offset); the bytes read, 0 at the end; -1 with `failure` on error.
IV read_input(pTHX_ SV* self, SV* buf, IV len, IV offset) {
  JobPtr* h = handle_of(aTHX_ self);
  if (len < 0) {
    failure = "negative length";
    return -1;
  }
  if (!SvOK(buf)) sv_setpvs(buf, "");
  STRLEN have = 0;
  (void)SvPV_force(buf, have);
  if (offset < 0) offset += static_cast<IV>(have);
  if (offset < 0) {
    failure = "offset outside string";
    return -1;
  }
  std::size_t at = static_cast<std::size_t>(offset);
  char* p = SvGROW(buf, at + static_cast<std::size_t>(len) + 1);
  if (at > have) std::memset(p + have, 0, at - have);
  std::size_t got = 0;
  if (h && *h && (*h)->env) {
    try {
      got = (*h)->env->input().read(p + at, static_cast<std::size_t>(len));
    } catch (const std::exception& e) {
      failure = std::string("psgi.input: ") + e.what();
      return -1;
    }
  }
  SvCUR_set(buf, at + got);
  *SvEND(buf) = '\0';
  SvSETMAGIC(buf);
  return static_cast<IV>(got);
}

bool seek_input(pTHX_ SV* self, IV pos, IV whence) {
  JobPtr* h = handle_of(aTHX_ self);
  if (!h || !*h || !(*h)->env || pos != 0 || whence != 0 || !(*h)->env->input().seekable()) return false;
  try {
    (*h)->env->input().rewind();
    return true;
  } catch (...) {
    return false;
  }
}

void print_errors(pTHX_ SV* self, SV** items, I32 n) {
  std::string text;
  for (I32 i = 0; i < n; ++i) {
    STRLEN len = 0;
    const char* p = SvPV(items[i], len);
    text.append(p, len);
  }
  JobPtr* h = handle_of(aTHX_ self);
  ErrorStream* errors = h && *h ? (*h)->errors() : nullptr;
  try {
    if (errors)
      errors->write(text);
    else
      std::fwrite(text.data(), 1, text.size(), stderr);
  } catch (...) {
  }
}

// psgix.io (lib/CSGI/IO.pm): the connection, from csgix.io; -1 when the adapter cannot hand it over.
int take_io(pTHX_ SV* self, std::string& pending) {
  JobPtr* h = handle_of(aTHX_ self);
  if (!h || !*h || !(*h)->env || (*h)->answered || (*h)->taken) return -1;
  try {
    auto* io = (*h)->env->object<Hijack>(keys::x::io);
    int fd = io ? io->take(pending) : -1;
    (*h)->taken = fd >= 0;
    return fd;
  } catch (...) {
    return -1;
  }
}

bool io_offered(pTHX_ SV* self) {
  JobPtr* h = handle_of(aTHX_ self);
  return h && *h && (*h)->env && (*h)->env->object<Hijack>(keys::x::io);
}

// psgix.logger: to csgix.logger when a layer in front offers one, else a line on csgi.errors.
bool log_message(pTHX_ SV* self, SV* level_sv, SV* message_sv) {
  static constexpr std::string_view names[] = {"debug", "info", "warn", "error", "fatal"};
  STRLEN ll = 0, ml = 0;
  const char* lp = SvOK(level_sv) ? SvPV(level_sv, ll) : "";
  const char* mp = SvOK(message_sv) ? SvPV(message_sv, ml) : "";
  std::string_view level(lp, ll), message(mp, ml);
  int at = 0;
  while (at < 5 && names[at] != level) ++at;
  if (at == 5) {
    failure = "psgix.logger: the level must be debug, info, warn, error or fatal";
    return false;
  }
  JobPtr* h = handle_of(aTHX_ self);
  try {
    Env* env = h && *h ? (*h)->env : nullptr;
    if (Logger* logger = env ? env->object<Logger>(keys::x::logger) : nullptr) {
      logger->log(static_cast<Logger::Level>(at), message);
      return true;
    }
    std::string line = "[" + std::string(level) + "] " + std::string(message);
    if (line.back() != '\n') line += '\n';
    if (ErrorStream* errors = h && *h ? (*h)->errors() : nullptr)
      errors->write(line);
    else
      std::fwrite(line.data(), 1, line.size(), stderr);
  } catch (...) {
  }
  return true;
}

// ---- the XSUBs

#define CSGI_SELF_ARGS(min, usage) \
  dXSARGS;                         \
  if (items < (min)) croak_xs_usage(cv, usage)

void release(pTHX_ SV* self) {
  if (!SvROK(self)) return;
  SV* obj = SvRV(self);
  delete INT2PTR(JobPtr*, SvIV(obj));
  sv_setiv(obj, 0);
}

XS_INTERNAL(xs_destroy) {
  dXSARGS;
  if (items >= 1) release(aTHX_ ST(0));
  XSRETURN_EMPTY;
}

XS_INTERNAL(xs_request_respond) {
  CSGI_SELF_ARGS(4, "self, status, headers, body");
  STRLEN len = 0;
  const char* p = SvPV(ST(3), len);
  if (!respond(aTHX_ ST(0), ST(1), ST(2), std::string(p, len))) croak("%s", failure.c_str());
  XSRETURN_EMPTY;
}

XS_INTERNAL(xs_request_respond_file) {
  CSGI_SELF_ARGS(5, "self, status, headers, fd, offset");
  int fd = ::dup(static_cast<int>(SvIV(ST(3))));
  if (fd < 0) croak("cannot dup the body's file descriptor");
  bool ok = respond(aTHX_ ST(0), ST(1), ST(2),
                    FileBody{{}, std::make_shared<FileHandle>(fd), static_cast<std::uint64_t>(SvUV(ST(4))), FileBody::npos});
  if (!ok) croak("%s", failure.c_str());
  XSRETURN_EMPTY;
}

XS_INTERNAL(xs_request_start) {
  CSGI_SELF_ARGS(3, "self, status, headers");
  SV* writer = start(aTHX_ ST(0), ST(1), ST(2));
  if (!writer) croak("%s", failure.c_str());
  ST(0) = sv_2mortal(writer);
  XSRETURN(1);
}

XS_INTERNAL(xs_request_fail) {
  CSGI_SELF_ARGS(2, "self, message");
  fail(aTHX_ ST(0), ST(1));
  XSRETURN_EMPTY;
}

XS_INTERNAL(xs_request_informational) {
  CSGI_SELF_ARGS(3, "self, status, headers");
  ST(0) = boolSV(inform(aTHX_ ST(0), ST(1), ST(2)));
  XSRETURN(1);
}

XS_INTERNAL(xs_request_informational_offered) {
  CSGI_SELF_ARGS(1, "self");
  ST(0) = boolSV(informational_offered(aTHX_ ST(0)));
  XSRETURN(1);
}

XS_INTERNAL(xs_request_harakiri) {
  CSGI_SELF_ARGS(1, "self");
  harakiri(aTHX_ ST(0));
  XSRETURN_EMPTY;
}

XS_INTERNAL(xs_request_take_io) {
  CSGI_SELF_ARGS(1, "self");
  std::string pending;
  int fd = take_io(aTHX_ ST(0), pending);
  if (fd < 0) XSRETURN_EMPTY;
  SP -= items;
  EXTEND(SP, 2);
  mPUSHi(fd);
  mPUSHs(text_sv(aTHX_ pending));
  PUTBACK;
}

XS_INTERNAL(xs_request_io_offered) {
  CSGI_SELF_ARGS(1, "self");
  ST(0) = boolSV(io_offered(aTHX_ ST(0)));
  XSRETURN(1);
}

XS_INTERNAL(xs_request_log) {
  CSGI_SELF_ARGS(3, "self, level, message");
  if (!log_message(aTHX_ ST(0), ST(1), ST(2))) croak("%s", failure.c_str());
  XSRETURN_EMPTY;
}

XS_INTERNAL(xs_writer_write) {
  CSGI_SELF_ARGS(2, "self, chunk");
  bool ok = write_chunk(aTHX_ ST(0), ST(1));
  ST(0) = boolSV(ok);
  XSRETURN(1);
}

XS_INTERNAL(xs_writer_close) {
  CSGI_SELF_ARGS(1, "self");
  close_writer(aTHX_ ST(0));
  XSRETURN_EMPTY;
}

XS_INTERNAL(xs_writer_destroy) {
  dXSARGS;
  if (items >= 1 && SvROK(ST(0)) && SvIV(SvRV(ST(0)))) {
    close_writer(aTHX_ ST(0));
    release(aTHX_ ST(0));
  }
  XSRETURN_EMPTY;
}

XS_INTERNAL(xs_input_read) {
  CSGI_SELF_ARGS(3, "self, buf, len, offset = 0");
  IV got = read_input(aTHX_ ST(0), ST(1), SvIV(ST(2)), items > 3 ? SvIV(ST(3)) : 0);
  if (got < 0) croak("%s", failure.c_str());
  ST(0) = sv_2mortal(newSViv(got));
  XSRETURN(1);
}

XS_INTERNAL(xs_input_seek) {
  CSGI_SELF_ARGS(3, "self, pos, whence");
  ST(0) = boolSV(seek_input(aTHX_ ST(0), SvIV(ST(1)), SvIV(ST(2))));
  XSRETURN(1);
}

XS_INTERNAL(xs_true) {
  dXSARGS;
  (void)items;
  ST(0) = &PL_sv_yes;
  XSRETURN(1);
}

XS_INTERNAL(xs_errors_print) {
  CSGI_SELF_ARGS(1, "self, list...");
  print_errors(aTHX_ ST(0), &ST(1), items - 1);
  ST(0) = &PL_sv_yes;
  XSRETURN(1);
}

}  // namespace

App psgi_app(PerlInterpreter* interp, SV* app, bool multiprocess) {
  dTHXa(interp);
  auto host = std::make_shared<Host>(interp, newSVsv(app), multiprocess);
  return [host](Env& env) {
    return Response::delayed([host, &env](Responder r) { host->submit(env, std::move(r)); });
  };
}

void define_request_classes(PerlInterpreter* interp) {
  dTHXa(interp);
  const char* file = __FILE__;
  newXS("CSGI::Request::respond", xs_request_respond, file);
  newXS("CSGI::Request::respond_file", xs_request_respond_file, file);
  newXS("CSGI::Request::start", xs_request_start, file);
  newXS("CSGI::Request::fail", xs_request_fail, file);
  newXS("CSGI::Request::informational", xs_request_informational, file);
  newXS("CSGI::Request::informational_offered", xs_request_informational_offered, file);
  newXS("CSGI::Request::harakiri", xs_request_harakiri, file);
  newXS("CSGI::Request::take_io", xs_request_take_io, file);
  newXS("CSGI::Request::io_offered", xs_request_io_offered, file);
  newXS("CSGI::Request::log", xs_request_log, file);
  newXS("CSGI::Request::DESTROY", xs_destroy, file);
  newXS("CSGI::Writer::write", xs_writer_write, file);
  newXS("CSGI::Writer::close", xs_writer_close, file);
  newXS("CSGI::Writer::DESTROY", xs_writer_destroy, file);
  newXS("CSGI::Input::read", xs_input_read, file);
  newXS("CSGI::Input::seek", xs_input_seek, file);
  newXS("CSGI::Input::close", xs_true, file);
  newXS("CSGI::Input::DESTROY", xs_destroy, file);
  newXS("CSGI::Errors::print", xs_errors_print, file);
  newXS("CSGI::Errors::flush", xs_true, file);
  newXS("CSGI::Errors::DESTROY", xs_destroy, file);
}

}  // namespace csgi::perl
