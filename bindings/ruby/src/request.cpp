// The Rack side of one request, on the Ruby VM thread (request.hpp). Ruby raises by longjmp, so no C++
// object with a destructor is alive in a frame that Ruby may unwind: C++ work happens in try blocks that
// end before any rb_raise, or outside rb_protect.
#include "request.hpp"

#include <ruby/thread.h>

#include <cstring>
#include <string>

#include "csgi/core/extensions.hpp"
#include "csgi/core/keys.hpp"
#include "csgi/core/percent.hpp"

namespace csgi::rack_host {
namespace {

const char glue_source[] =
#include "glue_rb.inc"
    ;

VALUE m_host = Qnil;
VALUE c_input_source = Qnil, c_error_sink = Qnil, c_response_sink = Qnil;

// The C objects the glue holds hold plain pointers into the request; cleared when it ends, after which
// they raise IOError (an app that kept rack.input past its request).
const rb_data_type_t pointer_type = {"csgi_request_pointer", {nullptr, nullptr, nullptr, nullptr, {}}, nullptr, nullptr,
                                     RUBY_TYPED_FREE_IMMEDIATELY};

template <class T>
T* pointer_of(VALUE self) {
  void* p = rb_check_typeddata(self, &pointer_type);
  if (!p) rb_raise(rb_eIOError, "csgi: the request this object belonged to has ended");
  return static_cast<T*>(p);
}

// Copies a C++ exception's message for raising once the try block has ended.
void keep_message(char (&out)[512], const char* what) {
  std::strncpy(out, what, sizeof out - 1);
  out[sizeof out - 1] = '\0';
}

struct Read {
  Input* input;
  char* buf;
  std::size_t want;
  std::size_t got;
  char error[512];
};

void* read_without_gvl(void* p) {
  auto* r = static_cast<Read*>(p);
  try {
    r->got = r->input->read(r->buf, r->want);
  } catch (const std::exception& e) {
    keep_message(r->error, e.what());
  } catch (...) {
    keep_message(r->error, "unknown error");
  }
  return nullptr;
}

// CSGI::InputSource#read_chunk(max): the next bytes of csgi.input (binary), nil at the end. The read
// blocks without the GVL, so other Ruby threads run meanwhile.
VALUE input_read_chunk(VALUE self, VALUE max) {
  Input* input = pointer_of<Input>(self);
  long n = NUM2LONG(max);
  if (n <= 0) rb_raise(rb_eArgError, "read_chunk needs a positive size");
  VALUE str = rb_str_buf_new(n);
  Read r{input, RSTRING_PTR(str), static_cast<std::size_t>(n), 0, ""};
  rb_thread_call_without_gvl(read_without_gvl, &r, nullptr, nullptr);
  if (r.error[0]) rb_raise(rb_eIOError, "csgi: reading the request body: %s", r.error);
  if (r.got == 0) return Qnil;
  rb_str_set_len(str, static_cast<long>(r.got));
  return str;
}

// CSGI::ErrorSink#write_message(str): one message to csgi.errors.
VALUE error_write_message(VALUE self, VALUE str) {
  ErrorStream* errors = pointer_of<ErrorStream>(self);
  StringValue(str);
  char error[512] = "";
  try {
    errors->write(std::string_view(RSTRING_PTR(str), static_cast<std::size_t>(RSTRING_LEN(str))));
  } catch (const std::exception& e) {
    keep_message(error, e.what());
  }
  if (error[0]) rb_raise(rb_eIOError, "csgi: %s", error);
  return Qnil;
}

// The status and the flat [name, value, ...] field list the glue passes, checked before any C++ runs.
int checked_status(VALUE status, VALUE fields) {
  int s = NUM2INT(status);
  if (s < 100 || s > 999) rb_raise(rb_eArgError, "Rack status %d is not a 3-digit HTTP status", s);
  Check_Type(fields, T_ARRAY);
  for (long i = 0; i < RARRAY_LEN(fields); ++i) Check_Type(RARRAY_AREF(fields, i), T_STRING);
  return s;
}

Headers to_headers(VALUE fields) {
  Headers h;
  long n = RARRAY_LEN(fields);
  h.reserve(static_cast<std::size_t>(n / 2));
  for (long i = 0; i + 1 < n; i += 2) {
    VALUE k = RARRAY_AREF(fields, i), v = RARRAY_AREF(fields, i + 1);
    h.add(std::string(RSTRING_PTR(k), RSTRING_LEN(k)), std::string(RSTRING_PTR(v), RSTRING_LEN(v)));
  }
  return h;
}

Job* unanswered_job(VALUE self) {
  Job* job = pointer_of<Job>(self);
  if (job->answered) rb_raise(rb_eRuntimeError, "csgi: the response was already given");
  return job;
}

// CSGI::ResponseSink#complete(status, fields, body_string)
VALUE sink_complete(VALUE self, VALUE status, VALUE fields, VALUE body) {
  Job* job = unanswered_job(self);
  int s = checked_status(status, fields);
  StringValue(body);
  char error[512] = "";
  try {
    Response r{s, to_headers(fields), std::string(RSTRING_PTR(body), static_cast<std::size_t>(RSTRING_LEN(body)))};
    job->answered = true;
    job->responder.respond(std::move(r));
  } catch (const std::exception& e) {
    keep_message(error, e.what());
  }
  if (error[0]) rb_raise(rb_eIOError, "csgi: %s", error);
  return Qnil;
}

// CSGI::ResponseSink#file(status, fields, path): the file as a csgi file body (sendfile).
VALUE sink_file(VALUE self, VALUE status, VALUE fields, VALUE path) {
  Job* job = unanswered_job(self);
  int s = checked_status(status, fields);
  const char* p = StringValueCStr(path);
  char error[512] = "";
  try {
    Response r{s, to_headers(fields), FileBody::open(p)};
    job->answered = true;
    job->responder.respond(std::move(r));
  } catch (const std::exception& e) {
    keep_message(error, e.what());
  }
  if (error[0]) rb_raise(rb_eIOError, "csgi: body.to_path: %s", error);
  return Qnil;
}

// CSGI::ResponseSink#start(status, fields): status and headers now, the body through #write.
VALUE sink_start(VALUE self, VALUE status, VALUE fields) {
  Job* job = unanswered_job(self);
  int s = checked_status(status, fields);
  char error[512] = "";
  try {
    job->answered = true;
    job->writer = job->responder.start(s, to_headers(fields));
  } catch (const std::exception& e) {
    keep_message(error, e.what());
  }
  if (error[0]) rb_raise(rb_eIOError, "csgi: %s", error);
  return Qnil;
}

struct Write {
  Writer* writer;
  std::string_view chunk;
  bool ok;
  char error[512];
};

void* write_without_gvl(void* p) {
  auto* w = static_cast<Write*>(p);
  try {
    w->ok = w->writer->write(w->chunk);
  } catch (const std::exception& e) {
    keep_message(w->error, e.what());
  }
  return nullptr;
}

// CSGI::ResponseSink#write(chunk): true while the client is there.
VALUE sink_write(VALUE self, VALUE chunk) {
  Job* job = pointer_of<Job>(self);
  if (!job->writer) rb_raise(rb_eRuntimeError, "csgi: write before start");
  if (!RB_TYPE_P(chunk, T_STRING))
    rb_raise(rb_eTypeError, "Rack body yielded %" PRIsVALUE ", not a String", rb_obj_class(chunk));
  if (RSTRING_LEN(chunk) == 0) return Qtrue;
  Write w{job->writer.get(), std::string_view(RSTRING_PTR(chunk), static_cast<std::size_t>(RSTRING_LEN(chunk))),
          false, ""};
  rb_thread_call_without_gvl(write_without_gvl, &w, nullptr, nullptr);
  RB_GC_GUARD(chunk);
  if (w.error[0]) rb_raise(rb_eIOError, "csgi: %s", w.error);
  return w.ok ? Qtrue : Qfalse;
}

// CSGI::ResponseSink#hints_offered?: the adapter can send interim responses for this request.
VALUE sink_hints_offered(VALUE self) {
  Job* job = pointer_of<Job>(self);
  return job->env->object<Informational>(keys::x::informational) ? Qtrue : Qfalse;
}

// CSGI::ResponseSink#early_hints(fields): a 103 with the flat [name, value, ...] list; true when sent
// (false after the response started, to an HTTP/1.0 client, or once the client has gone).
VALUE sink_early_hints(VALUE self, VALUE fields) {
  Job* job = pointer_of<Job>(self);
  checked_status(INT2FIX(103), fields);
  bool sent = false;
  char error[512] = "";
  try {
    auto* info = job->env->object<Informational>(keys::x::informational);
    sent = info && !job->answered && info->send(103, to_headers(fields));
  } catch (const std::exception& e) {
    keep_message(error, e.what());
  }
  if (error[0]) rb_raise(rb_eIOError, "csgi: rack.early_hints: %s", error);
  return sent ? Qtrue : Qfalse;
}

VALUE frozen(std::string_view s) { return rb_interned_str(s.data(), static_cast<long>(s.size())); }
VALUE binary(std::string_view s) { return rb_str_new(s.data(), static_cast<long>(s.size())); }

// The env of spec/rack.md from the csgi env: CGI keys as they are, but SCRIPT_NAME and PATH_INFO
// percent-encoded again (Rack apps decode them), and the rack.* keys of the request.
VALUE rack_env(const Env& env, std::string& scratch) {
  VALUE h = rb_hash_new();
  for (const Env::Entry& e : env) {
    if (!e.value.is_text() || e.key.find('.') != std::string_view::npos) continue;
    std::string_view v = e.value.text();
    if (e.key == keys::SCRIPT_NAME || e.key == keys::PATH_INFO) {
      scratch.clear();
      percent_encode_to(scratch, v, uri::path);
      v = scratch;
    }
    rb_hash_aset(h, frozen(e.key), binary(v));
  }
  rb_hash_aset(h, frozen("HTTP_VERSION"), binary(env.get(keys::SERVER_PROTOCOL)));
  std::string_view scheme = env.get(keys::url_scheme);
  rb_hash_aset(h, frozen("rack.url_scheme"), frozen(scheme.empty() ? "http" : scheme));
  rb_hash_aset(h, frozen("rack.multithread"), Qfalse);  // one VM thread calls the app
  rb_hash_aset(h, frozen("rack.multiprocess"), env.flag(keys::multiprocess) ? Qtrue : Qfalse);
  rb_hash_aset(h, frozen("rack.run_once"), env.flag(keys::run_once) ? Qtrue : Qfalse);
  rb_hash_aset(h, frozen("rack.hijack?"), Qfalse);
  return h;
}

struct Call {
  Job* job;
  VALUE app;
  volatile VALUE* objects;  // input source, error sink, response sink: on the caller's stack for the GC
  std::string* scratch;     // owned by the caller: a raise here skips no destructor
};

VALUE call_protected(VALUE arg) {
  auto* c = reinterpret_cast<Call*>(arg);
  c->objects[0] = TypedData_Wrap_Struct(c_input_source, &pointer_type, &c->job->env->input());
  c->objects[1] = TypedData_Wrap_Struct(c_error_sink, &pointer_type, &c->job->env->errors());
  c->objects[2] = TypedData_Wrap_Struct(c_response_sink, &pointer_type, c->job);
  VALUE env = rack_env(*c->job->env, *c->scratch);
  return rb_funcall(m_host, rb_intern("call"), 5, c->app, env, c->objects[0], c->objects[1], c->objects[2]);
}

std::string request_line(const Env& env) {
  std::string s(env.get(keys::REQUEST_METHOD));
  s += ' ';
  s += env.get(keys::REQUEST_URI);
  s += ' ';
  s += env.get(keys::SERVER_PROTOCOL);
  return s;
}

}  // namespace

VALUE define_glue(VALUE) {
  VALUE m = rb_define_module("CSGI");
  c_input_source = rb_define_class_under(m, "InputSource", rb_cObject);
  rb_undef_alloc_func(c_input_source);
  rb_define_method(c_input_source, "read_chunk", input_read_chunk, 1);
  c_error_sink = rb_define_class_under(m, "ErrorSink", rb_cObject);
  rb_undef_alloc_func(c_error_sink);
  rb_define_method(c_error_sink, "write_message", error_write_message, 1);
  c_response_sink = rb_define_class_under(m, "ResponseSink", rb_cObject);
  rb_undef_alloc_func(c_response_sink);
  rb_define_method(c_response_sink, "complete", sink_complete, 3);
  rb_define_method(c_response_sink, "file", sink_file, 3);
  rb_define_method(c_response_sink, "start", sink_start, 2);
  rb_define_method(c_response_sink, "write", sink_write, 1);
  rb_define_method(c_response_sink, "hints_offered?", sink_hints_offered, 0);
  rb_define_method(c_response_sink, "early_hints", sink_early_hints, 1);
  rb_funcall(rb_mKernel, rb_intern("eval"), 4, rb_str_new_cstr(glue_source), Qnil, rb_str_new_cstr("csgi/rack/glue.rb"),
             INT2FIX(1));
  m_host = rb_const_get(m, rb_intern("Host"));
  return Qnil;
}

VALUE build_app(VALUE path) { return rb_funcall(m_host, rb_intern("load"), 1, path); }

std::string take_error() {
  VALUE err = rb_errinfo();
  rb_set_errinfo(Qnil);
  int state = 0;
  VALUE text = rb_protect([](VALUE e) { return rb_funcall(m_host, rb_intern("describe"), 1, e); }, err, &state);
  if (state || !RB_TYPE_P(text, T_STRING)) {
    rb_set_errinfo(Qnil);
    return "an exception that cannot be described";
  }
  return std::string(RSTRING_PTR(text), static_cast<std::size_t>(RSTRING_LEN(text)));
}

void serve(Job& job, VALUE app) {
  volatile VALUE objects[3] = {Qnil, Qnil, Qnil};
  std::string scratch;
  Call call{&job, app, objects, &scratch};
  int state = 0;
  rb_protect(call_protected, reinterpret_cast<VALUE>(&call), &state);
  for (int i = 0; i < 3; ++i)
    if (!NIL_P(objects[i])) DATA_PTR(objects[i]) = nullptr;
  std::string error = state ? take_error() : std::string();
  try {
    if (state) job.env->errors().write("rack: " + request_line(*job.env) + ": " + error);
    if (job.writer) {
      if (!state) job.writer->close();
      job.writer.reset();  // after an exception: dropped unclosed, the response ends as failed
    } else if (!job.answered) {
      job.answered = true;
      job.responder.respond(Response::error(500));
    }
  } catch (...) {
    // an error stream or responder that throws has nobody left to tell
  }
}

}  // namespace csgi::rack_host
