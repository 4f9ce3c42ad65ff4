// CSGI->load_app(LIB.so, @args) (lib/CSGI.pm): a csgi app library as a PSGI app, for a Plack::Builder
// under plackup or Starman. CSGI::App::call builds a csgi Env from the PSGI env, calls the app on the
// calling thread and hands its response back as a PSGI response: complete bodies as an array, files,
// streams and delayed answers as a CSGI::Body whose getline() pulls the next chunk (waiting, for a
// delayed answer, until the app's thread has written it). As in psgi_host.cpp no C++ exception leaves an
// XSUB, and croak happens only after the helper that failed has returned.
#include "csgi/bindings/perl/src/psgi_host.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <variant>

#include "csgi/core/app_failure.hpp"
#include "csgi/core/app_library.hpp"
#include "csgi/core/keys.hpp"
#include "csgi/core/request_env.hpp"

#define PERL_NO_GET_CONTEXT
#include <EXTERN.h>
#include <perl.h>
#include <XSUB.h>

namespace csgi::perl {
namespace {

thread_local std::string failure;

// psgi.input and psgi.errors as csgi.input and csgi.errors. Perl is called only from the thread that
// called the app (the interpreter's): a read from another thread of the app's is an error, a message
// from one goes to stderr.
class PerlHandle {
public:
  PerlHandle(PerlInterpreter* interp, SV* sv) : interp_(interp), owner_(std::this_thread::get_id()) {
    dTHXa(interp_);
    sv_ = SvREFCNT_inc_simple_NN(sv);
  }
  PerlHandle(const PerlHandle&) = delete;
  ~PerlHandle() {
    if (!here()) return;  // kept rather than touching the interpreter from another thread
    dTHXa(interp_);
    SvREFCNT_dec(sv_);
  }
  bool here() const noexcept { return std::this_thread::get_id() == owner_; }
  PerlInterpreter* interp() const noexcept { return interp_; }
  SV* sv() const noexcept { return sv_; }

private:
  PerlInterpreter* interp_;
  std::thread::id owner_;
  SV* sv_;
};

class PsgiInput final : public Input {
public:
  PsgiInput(PerlInterpreter* interp, SV* in, bool buffered) : in_(interp, in), buffered_(buffered) {}
  std::size_t read(char* buf, std::size_t n) override {
    if (!in_.here()) throw std::runtime_error("psgi.input can be read only on the thread that called the app");
    std::string error;
    std::size_t got = 0;
    {
      dTHXa(in_.interp());
      dSP;
      ENTER;
      SAVETMPS;
      SV* chunk = sv_2mortal(newSVpvs(""));
      PUSHMARK(SP);
      EXTEND(SP, 3);
      PUSHs(in_.sv());
      PUSHs(chunk);
      mPUSHu(n);
      PUTBACK;
      int count = call_method("read", G_SCALAR | G_EVAL);
      SPAGAIN;
      SV* result = count ? POPs : &PL_sv_undef;
      PUTBACK;
      if (SvTRUE(ERRSV)) {
        error = SvPV_nolen(ERRSV);
      } else if (!SvOK(result)) {
        error = "psgi.input->read failed";
      } else if (SvIV(result) > 0) {
        STRLEN len = 0;
        const char* p = SvPV(chunk, len);
        got = std::min<std::size_t>(len, n);
        std::memcpy(buf, p, got);
      }
      FREETMPS;
      LEAVE;
    }
    if (!error.empty()) throw std::runtime_error("psgi.input: " + error);
    return got;
  }
  bool seekable() const override { return buffered_; }
  void rewind() override {
    if (!buffered_ || !in_.here()) throw std::logic_error("psgi.input cannot be rewound here");
    dTHXa(in_.interp());
    dSP;
    ENTER;
    SAVETMPS;
    PUSHMARK(SP);
    EXTEND(SP, 3);
    PUSHs(in_.sv());
    mPUSHi(0);
    mPUSHi(0);
    PUTBACK;
    call_method("seek", G_DISCARD | G_EVAL);
    FREETMPS;
    LEAVE;
  }

private:
  PerlHandle in_;
  bool buffered_;
};

class PsgiErrors final : public ErrorStream {
public:
  PsgiErrors(PerlInterpreter* interp, SV* errors) : errors_(interp, errors) {}
  void write(std::string_view message) override {
    std::string line(message);
    if (line.empty() || line.back() != '\n') line += '\n';
    if (!errors_.here()) {
      std::fwrite(line.data(), 1, line.size(), stderr);
      return;
    }
    dTHXa(errors_.interp());
    dSP;
    ENTER;
    SAVETMPS;
    PUSHMARK(SP);
    EXTEND(SP, 2);
    PUSHs(errors_.sv());
    mPUSHp(line.data(), line.size());
    PUTBACK;
    call_method("print", G_DISCARD | G_EVAL);
    FREETMPS;
    LEAVE;
  }

private:
  PerlHandle errors_;
};

// A delayed answer: the response, or the status and headers of a writer whose chunks wait in `chunks`.
class Answer {
public:
  void respond(Response r) {
    std::lock_guard lock(mu_);
    if (state_ != State::waiting) return;
    response_ = std::move(r);
    state_ = State::responded;
    cv_.notify_all();
  }
  void start(int status, Headers headers) {
    std::lock_guard lock(mu_);
    response_ = Response{status, std::move(headers), std::string()};
    state_ = State::started;
    cv_.notify_all();
  }
  bool write(std::string_view chunk) {
    std::lock_guard lock(mu_);
    if (gone_ || closed_) return false;
    chunks_.emplace_back(chunk);
    cv_.notify_all();
    return true;
  }
  void close() {
    std::lock_guard lock(mu_);
    closed_ = true;
    cv_.notify_all();
  }
  void responder_dropped() {  // unanswered, or answered already
    std::lock_guard lock(mu_);
    if (state_ != State::waiting) return;
    state_ = State::dropped;
    cv_.notify_all();
  }
  void abandon() {  // the PSGI server stopped reading
    std::lock_guard lock(mu_);
    gone_ = true;
    chunks_.clear();
  }
  // Waits for the answer: the response (its body "" for a writer), or nullopt when dropped.
  std::optional<Response> wait(bool& streaming) {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [this] { return state_ != State::waiting; });
    streaming = state_ == State::started;
    if (state_ == State::dropped) return std::nullopt;
    return std::move(response_);
  }
  bool next(std::string& chunk) {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [this] { return !chunks_.empty() || closed_; });
    if (chunks_.empty()) return false;
    chunk = std::move(chunks_.front());
    chunks_.pop_front();
    return true;
  }

private:
  enum class State { waiting, responded, started, dropped };
  std::mutex mu_;
  std::condition_variable cv_;
  State state_ = State::waiting;
  Response response_;
  std::deque<std::string> chunks_;
  bool closed_ = false;
  bool gone_ = false;
};

class AnswerWriter final : public Writer {
public:
  explicit AnswerWriter(std::shared_ptr<Answer> a) : a_(std::move(a)) {}
  ~AnswerWriter() override { a_->close(); }  // dropped without close(): the body ends
  bool write(std::string_view chunk) override { return a_->write(chunk); }
  void close() override { a_->close(); }

private:
  std::shared_ptr<Answer> a_;
};

class AnswerResponder final : public ResponderImpl {
public:
  explicit AnswerResponder(std::shared_ptr<Answer> a) : a_(std::move(a)) {}
  ~AnswerResponder() override { a_->responder_dropped(); }
  void respond(Response r) override { a_->respond(std::move(r)); }
  WriterPtr start(int status, Headers headers) override {
    a_->start(status, std::move(headers));
    return std::make_shared<AnswerWriter>(a_);
  }

private:
  std::shared_ptr<Answer> a_;
};

// A CSGI::Body: a file, a stream or a delayed writer, read chunk by chunk; it keeps the request's env
// alive until it is closed (APP-3).
struct Body {
  std::shared_ptr<Env> env;
  std::variant<FileBody, StreamPtr, std::shared_ptr<Answer>> source;
  std::uint64_t left = 0;  // a file's bytes still to send
  bool closed = false;

  bool next(std::string& chunk) {
    if (closed) return false;
    if (auto* f = std::get_if<FileBody>(&source)) {
      if (left == 0) return false;
      chunk.resize(static_cast<std::size_t>(std::min<std::uint64_t>(left, 65536)));
      ssize_t n = ::pread(f->file->fd(), chunk.data(), chunk.size(), static_cast<off_t>(f->offset));
      if (n <= 0) throw std::runtime_error("the file of the response ended early");
      chunk.resize(static_cast<std::size_t>(n));
      f->offset += static_cast<std::uint64_t>(n);
      left -= static_cast<std::uint64_t>(n);
      return true;
    }
    if (auto* s = std::get_if<StreamPtr>(&source)) return (*s)->next(chunk);
    return std::get<std::shared_ptr<Answer>>(source)->next(chunk);
  }
  void close() noexcept {
    if (closed) return;
    closed = true;
    try {
      if (auto* s = std::get_if<StreamPtr>(&source)) (*s)->close();
      if (auto* a = std::get_if<std::shared_ptr<Answer>>(&source)) (*a)->abandon();
    } catch (...) {
    }
    env.reset();
  }
  ~Body() { close(); }
};

SV* wrap(pTHX_ void* p, const char* cls) {
  SV* ref = newRV_noinc(newSViv(PTR2IV(p)));
  sv_bless(ref, gv_stashpv(cls, GV_ADD));
  return ref;
}

template <class T>
T* unwrap(pTHX_ SV* self) {
  return SvROK(self) ? INT2PTR(T*, SvIV(SvRV(self))) : nullptr;
}

// The PSGI env as a csgi env (ENV-5, ENV-9…ENV-11 as every bridge applies them).
void fill_env(pTHX_ Env& env, HV* hv) {
  hv_iterinit(hv);
  std::string_view script_name, path_info;
  while (HE* he = hv_iternext(hv)) {
    I32 klen = 0;
    const char* k = hv_iterkey(he, &klen);
    std::string_view key(k, static_cast<std::size_t>(klen));
    SV* v = hv_iterval(hv, he);
    if (key.starts_with("psgi") || SvROK(v) || !SvOK(v)) continue;
    if (key.starts_with("HTTP_") && !header_meta_variable(key)) continue;
    STRLEN len = 0;
    const char* p = SvPV(v, len);
    std::string_view value(p, len);
    if ((key == keys::CONTENT_LENGTH || key == keys::CONTENT_TYPE) && value.empty()) continue;
    env.set(key, value);
  }
  env.set(keys::SCRIPT_NAME, canonical_script_name(env, env.get(keys::SCRIPT_NAME)));
  env.set(keys::PATH_INFO, without_dot_segments(env, env.get(keys::PATH_INFO)));
  if (!env.contains(keys::REQUEST_URI)) env.set(keys::REQUEST_URI, std::string(env.get(keys::SCRIPT_NAME)) + std::string(env.get(keys::PATH_INFO)));
  auto flag = [&](const char* psgi_key) {
    SV** v = hv_fetch(hv, psgi_key, static_cast<I32>(std::strlen(psgi_key)), 0);
    return v && SvTRUE(*v);
  };
  SV** scheme = hv_fetchs(hv, "psgi.url_scheme", 0);
  env.set(keys::version, keys::spec_version);
  env.set(keys::url_scheme, scheme && SvOK(*scheme) ? SvPV_nolen(*scheme) : "http");
  env.set_bool(keys::multithread, flag("psgi.multithread"));
  env.set_bool(keys::multiprocess, flag("psgi.multiprocess"));
  env.set_bool(keys::run_once, flag("psgi.run_once"));
  env.set_bool(keys::nonblocking, false);
  env.set_bool(keys::streaming, true);
  bool buffered = flag("psgix.input.buffered");
  env.set_bool(keys::x::input_buffered, buffered);
  if (SV** in = hv_fetchs(hv, "psgi.input", 0); in && SvOK(*in))
    env.set_object<Input>(keys::input, std::shared_ptr<Input>(std::make_shared<PsgiInput>(my_perl, *in, buffered)));
  if (SV** errors = hv_fetchs(hv, "psgi.errors", 0); errors && SvOK(*errors))
    env.set_object<ErrorStream>(keys::errors, std::shared_ptr<ErrorStream>(std::make_shared<PsgiErrors>(my_perl, *errors)));
}

SV* headers_av(pTHX_ const Headers& headers) {
  AV* av = newAV();
  for (const Header& h : headers) {
    av_push(av, newSVpvn(h.name.data(), h.name.size()));
    av_push(av, newSVpvn(h.value.data(), h.value.size()));
  }
  return newRV_noinc(reinterpret_cast<SV*>(av));
}

SV* psgi_response(pTHX_ int status, const Headers& headers, SV* body) {
  AV* res = newAV();
  av_push(res, newSViv(status));
  av_push(res, headers_av(aTHX_ headers));
  av_push(res, body);
  return newRV_noinc(reinterpret_cast<SV*>(res));
}

SV* complete_body(pTHX_ std::string_view bytes) {
  AV* av = newAV();
  if (!bytes.empty()) av_push(av, newSVpvn(bytes.data(), bytes.size()));
  return newRV_noinc(reinterpret_cast<SV*>(av));
}

// Calls the app; returns the PSGI response, or null with `failure` set.
SV* call(pTHX_ const App& app, HV* psgi_env) {
  try {
    auto env = std::make_shared<Env>();
    Response r;
    try {
      fill_env(aTHX_ *env, psgi_env);
      r = app(*env);
      if (r.is_delayed()) {
        auto answer = std::make_shared<Answer>();
        std::get<Delayed>(r.body)(Responder(std::make_shared<AnswerResponder>(answer)));
        bool streaming = false;
        std::optional<Response> got = answer->wait(streaming);
        if (!got) throw std::runtime_error("the app dropped its responder without answering");
        if (streaming) {
          auto* body = new Body{env, answer};
          return psgi_response(aTHX_ got->status, got->headers, wrap(aTHX_ body, "CSGI::Body"));
        }
        r = std::move(*got);
      }
    } catch (...) {
      r = app_failure_response(*env, std::current_exception());
    }
    if (auto* s = std::get_if<std::string>(&r.body)) return psgi_response(aTHX_ r.status, r.headers, complete_body(aTHX_ *s));
    if (auto* b = std::get_if<SharedBytes>(&r.body))
      return psgi_response(aTHX_ r.status, r.headers, complete_body(aTHX_ *b ? std::string_view(**b) : ""));
    if (auto* f = std::get_if<FileBody>(&r.body)) {
      FileBody file = f->file ? *f : FileBody::open(f->path, f->offset, f->length);
      std::uint64_t size = file.size();
      auto* body = new Body{env, file, size};
      return psgi_response(aTHX_ r.status, r.headers, wrap(aTHX_ body, "CSGI::Body"));
    }
    if (auto* s = std::get_if<StreamPtr>(&r.body)) {
      auto* body = new Body{env, *s};
      return psgi_response(aTHX_ r.status, r.headers, wrap(aTHX_ body, "CSGI::Body"));
    }
    failure = "the app answered a delayed response with another delayed response";
  } catch (const std::exception& e) {
    failure = e.what();
  }
  return nullptr;
}

// getline: the next chunk, or null at the end (or with `failure` set on an error).
SV* next_chunk(pTHX_ Body* body) {
  failure.clear();
  try {
    std::string chunk;
    while (body && body->next(chunk))
      if (!chunk.empty()) return newSVpvn(chunk.data(), chunk.size());
  } catch (const std::exception& e) {
    failure = e.what();
  }
  return nullptr;
}

App* load(pTHX_ SV* path, AV* args) {
  try {
    AppArgs list;
    for (SSize_t i = 0, n = av_count(args); i < n; ++i) {
      SV** a = av_fetch(args, i, 0);
      list.emplace_back(a ? SvPV_nolen(*a) : "");
    }
    return new App(load_app(SvPV_nolen(path), list));
  } catch (const std::exception& e) {
    failure = e.what();
    return nullptr;
  }
}

XS_INTERNAL(xs_load_app) {
  dXSARGS;
  if (items < 2 || !SvROK(ST(1)) || SvTYPE(SvRV(ST(1))) != SVt_PVAV) croak_xs_usage(cv, "path, \\@args");
  App* app = load(aTHX_ ST(0), reinterpret_cast<AV*>(SvRV(ST(1))));
  if (!app) croak("CSGI->load_app: %s", failure.c_str());
  ST(0) = sv_2mortal(wrap(aTHX_ app, "CSGI::App"));
  XSRETURN(1);
}

XS_INTERNAL(xs_app_call) {
  dXSARGS;
  if (items < 2 || !SvROK(ST(1)) || SvTYPE(SvRV(ST(1))) != SVt_PVHV) croak_xs_usage(cv, "self, env");
  App* app = unwrap<App>(aTHX_ ST(0));
  if (!app) croak("not a CSGI::App");
  SV* res = call(aTHX_ *app, reinterpret_cast<HV*>(SvRV(ST(1))));
  if (!res) croak("csgi app: %s", failure.c_str());
  ST(0) = sv_2mortal(res);
  XSRETURN(1);
}

XS_INTERNAL(xs_app_destroy) {
  dXSARGS;
  if (items >= 1 && SvROK(ST(0))) {
    delete unwrap<App>(aTHX_ ST(0));
    sv_setiv(SvRV(ST(0)), 0);
  }
  XSRETURN_EMPTY;
}

XS_INTERNAL(xs_body_getline) {
  dXSARGS;
  if (items < 1) croak_xs_usage(cv, "self");
  SV* chunk = next_chunk(aTHX_ unwrap<Body>(aTHX_ ST(0)));
  if (!chunk && !failure.empty()) croak("csgi app body: %s", failure.c_str());
  ST(0) = chunk ? sv_2mortal(chunk) : &PL_sv_undef;
  XSRETURN(1);
}

XS_INTERNAL(xs_body_close) {
  dXSARGS;
  if (items >= 1)
    if (Body* body = unwrap<Body>(aTHX_ ST(0))) body->close();
  XSRETURN_EMPTY;
}

XS_INTERNAL(xs_body_destroy) {
  dXSARGS;
  if (items >= 1 && SvROK(ST(0))) {
    delete unwrap<Body>(aTHX_ ST(0));
    sv_setiv(SvRV(ST(0)), 0);
  }
  XSRETURN_EMPTY;
}

}  // namespace

void define_app_classes(PerlInterpreter* interp) {
  dTHXa(interp);
  const char* file = __FILE__;
  newXS("CSGI::_load_app", xs_load_app, file);
  newXS("CSGI::App::call", xs_app_call, file);
  newXS("CSGI::App::DESTROY", xs_app_destroy, file);
  newXS("CSGI::Body::getline", xs_body_getline, file);
  newXS("CSGI::Body::close", xs_body_close, file);
  newXS("CSGI::Body::DESTROY", xs_body_destroy, file);
}

}  // namespace csgi::perl
