// The Perl module CSGI (lib/CSGI.pm loads it with XSLoader): CSGI::_serve, which serves a PSGI app from
// the perl that loaded it (Plack::Handler::CSGI), and the entry point through which `csgi serve --psgi`
// starts an interpreter of its own (perl_host_abi.h).
#include <dlfcn.h>

#include <cstdio>
#include <exception>
#include <filesystem>
#include <string>
#include <vector>

#include "csgi/adapters/runner/runner.hpp"
#include "csgi/bindings/perl/perl_host_abi.h"
#include "csgi/bindings/perl/src/psgi_host.hpp"
#include "csgi/core/app_library.hpp"

#define PERL_NO_GET_CONTEXT
#include <EXTERN.h>
#include <perl.h>
#include <XSUB.h>

extern "C" void boot_DynaLoader(pTHX_ CV* cv);

namespace csgi::perl {
namespace {

// CSGI::_serve(app, \@argv, multiprocess): the server of csgi serve with that command line, for this
// interpreter's app; returns the exit status.
int serve(PerlInterpreter* interp, SV* app, AV* args, bool multiprocess) noexcept {
  try {
    dTHXa(interp);
    std::vector<std::string> strings{"csgi"};
    for (SSize_t i = 0, n = av_count(args); i < n; ++i) {
      SV** a = av_fetch(args, i, 0);
      strings.emplace_back(a ? SvPV_nolen(*a) : "");
    }
    std::vector<char*> argv;
    for (auto& s : strings) argv.push_back(s.data());
    argv.push_back(nullptr);
    // The app (and with it the perl thread) is gone when run() returns.
    return csgi::run(psgi_app(interp, app, multiprocess), static_cast<int>(strings.size()), argv.data());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "csgi: %s\n", e.what());
  } catch (...) {
  }
  return 1;
}

XS_INTERNAL(xs_serve) {
  dXSARGS;
  if (items < 2 || !SvROK(ST(1)) || SvTYPE(SvRV(ST(1))) != SVt_PVAV) croak_xs_usage(cv, "app, \\@argv, multiprocess");
  bool multiprocess = items > 2 && SvTRUE(ST(2));
  int status = serve(my_perl, ST(0), reinterpret_cast<AV*>(SvRV(ST(1))), multiprocess);
  ST(0) = sv_2mortal(newSViv(status));
  XSRETURN(1);
}

void define_module(pTHX) {
  define_request_classes(my_perl);
  define_app_classes(my_perl);
  newXS("CSGI::_serve", xs_serve, __FILE__);
}

void xs_init(pTHX) { newXS("DynaLoader::boot_DynaLoader", boot_DynaLoader, __FILE__); }

// The lib directory this module was loaded from: <lib>/auto/CSGI/CSGI.so.
std::string lib_dir() {
  Dl_info info{};
  if (!::dladdr(reinterpret_cast<void*>(&lib_dir), &info) || !info.dli_fname) return {};
  return std::filesystem::path(info.dli_fname).parent_path().parent_path().parent_path().string();
}

int load_psgi_app(const char* file, unsigned workers, const char* const* args, int argc, void* app_out, char* err,
                  size_t err_size) {
  auto failed = [&](std::string what) {
    while (!what.empty() && what.back() == '\n') what.pop_back();
    std::snprintf(err, err_size, "--psgi %s: %s", file, what.c_str());
    return -1;
  };
  try {
    static char arg0[] = "csgi", arg1[] = "-e", arg2[] = "0";
    static char* boot_argv[] = {arg0, arg1, arg2, nullptr};
    static char* env_none[] = {nullptr};
    int boot_argc = 3;
    char** pargv = boot_argv;
    char** penv = env_none;
    PERL_SYS_INIT3(&boot_argc, &pargv, &penv);
    PerlInterpreter* interp = perl_alloc();
    if (!interp) return failed("cannot start a Perl interpreter");
    PERL_SET_CONTEXT(interp);
    perl_construct(interp);
    dTHXa(interp);
    PL_exit_flags |= PERL_EXIT_DESTRUCT_END;
    if (perl_parse(interp, xs_init, boot_argc, boot_argv, nullptr) != 0 || perl_run(interp) != 0)
      return failed("cannot start a Perl interpreter");
    define_module(aTHX);
    AV* argv_av = get_av("ARGV", GV_ADD);
    av_clear(argv_av);
    for (int i = 0; i < argc; ++i) av_push(argv_av, newSVpv(args[i], 0));
    sv_setpv(get_sv("CSGI::_lib", GV_ADD), lib_dir().c_str());
    sv_setpv(get_sv("CSGI::_file", GV_ADD), file);
    SV* app = eval_pv("unshift @INC, $CSGI::_lib; require CSGI; CSGI::_load_psgi($CSGI::_file)", FALSE);
    if (SvTRUE(ERRSV)) return failed(SvPV_nolen(ERRSV));
    *static_cast<App*>(app_out) = psgi_app(interp, app, workers > 0);
    return 0;
  } catch (const std::exception& e) {
    return failed(e.what());
  }
}

}  // namespace
}  // namespace csgi::perl

#pragma GCC visibility push(default)
extern "C" {

XS_EXTERNAL(boot_CSGI) {
  dXSARGS;
  (void)items;
  csgi::perl::define_module(aTHX);
  XSRETURN_YES;
}

const csgi_perl_host* csgi_perl_host_v1() {
  static const csgi_perl_host host{CSGI_PERL_HOST_ABI_VERSION, csgi::detail::cxx_abi_tag(),
                                   csgi::detail::core_layout_tag(), sizeof(csgi::App), &csgi::perl::load_psgi_app};
  return &host;
}
}
#pragma GCC visibility pop
