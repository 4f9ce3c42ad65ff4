#pragma once
/// The C interface of the Perl module CSGI (auto/CSGI/CSGI.so, src/module.cpp) as `csgi serve --psgi`
/// uses it: the programs do not link libperl; perl_host.cpp dlopen()s libperl and then this module only
/// when a PSGI app is asked for.
#include <stddef.h>

#define CSGI_PERL_HOST_ABI_VERSION 1
#define CSGI_PERL_HOST_ENTRY "csgi_perl_host_v1"

#ifdef __cplusplus
extern "C" {
#endif

struct csgi_perl_host {
  int abi_version;            /* CSGI_PERL_HOST_ABI_VERSION */
  unsigned long cxx_abi;      /* csgi::detail::cxx_abi_tag() the module was built with */
  unsigned long core_layout;  /* csgi::detail::core_layout_tag() */
  unsigned long app_size;     /* sizeof(csgi::App) */
  /// Starts a Perl interpreter (@ARGV = argv), loads the PSGI file `psgi_file` as plackup does and puts
  /// the app into *app_out, a csgi::App the caller constructed. `workers`: the server's --workers
  /// (psgi.multiprocess when non-zero). Returns 0; or -1 with a message in err (NUL-terminated, at most
  /// err_size bytes). Called at most once per process; the interpreter lives until the process exits.
  int (*load_psgi_app)(const char* psgi_file, unsigned workers, const char* const* argv, int argc,
                       void* app_out, char* err, size_t err_size);
};

typedef const struct csgi_perl_host* (*csgi_perl_host_entry_fn)(void);

#ifdef __cplusplus
}
#endif
