#pragma once
// One Rack request on the Ruby VM thread (request.cpp): the env mapping of spec/rack.md, the Ruby objects
// the glue (glue.rb) works with, and the answer given through the csgi Responder.
#include <ruby.h>

#include "csgi/core/app.hpp"

namespace csgi::rack_host {

/// A request handed to the VM thread: the adapter keeps *env alive until the responder is answered or
/// the writer closed (APP-4).
struct Job {
  Env* env;
  Responder responder;
  WriterPtr writer;     // set once the glue started a streaming response
  bool answered = false;
};

/// Defines the CSGI module's C classes and evaluates the glue; on the VM thread, inside rb_protect.
VALUE define_glue(VALUE);
/// Builds the app of the config.ru file named by `path` (a String); inside rb_protect.
VALUE build_app(VALUE path);
/// Serves `job` with `app`; never throws or raises: a Ruby exception answers 500 (or cuts a started
/// stream) and is logged to csgi.errors with the request line.
void serve(Job& job, VALUE app);
/// "Class: message" and the backtrace of the pending Ruby exception, which it clears.
std::string take_error();

}  // namespace csgi::rack_host
