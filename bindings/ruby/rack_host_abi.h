#pragma once
/// The C interface of the Rack host module, libcsgi_rack_host.so: the part of `csgi serve --rack` that
/// embeds libruby. The programs do not link libruby; they dlopen() this module (rack_host.cpp) only when a
/// Rack app is asked for.
#include <stddef.h>

#define CSGI_RACK_HOST_ABI_VERSION 1
#define CSGI_RACK_HOST_FILE "libcsgi_rack_host.so"
#define CSGI_RACK_HOST_ENTRY "csgi_rack_host_v1"

#ifdef __cplusplus
extern "C" {
#endif

/// What the module's entry point `csgi_rack_host_v1()` returns. Plain C layout; never changes for a given
/// abi_version.
struct csgi_rack_host {
  int abi_version;            /* CSGI_RACK_HOST_ABI_VERSION */
  unsigned long cxx_abi;      /* csgi::detail::cxx_abi_tag() the module was built with */
  unsigned long core_layout;  /* csgi::detail::core_layout_tag() */
  unsigned long app_size;     /* sizeof(csgi::App) */
  /// Loads the Rack app of `config_ru` into *app_out, a csgi::App the caller constructed. With `workers`
  /// 0 the Ruby VM starts now on a thread of its own (ARGV = argv) and builds the app; with N the VM and
  /// the app are started in each worker process forked from this one. Returns 0; or -1 with a message
  /// in err (NUL-terminated, at most err_size bytes). Called at most once per process.
  int (*load_rack_app)(const char* config_ru, unsigned workers, const char* const* argv, int argc, void* app_out,
                       char* err, size_t err_size);
};

typedef const struct csgi_rack_host* (*csgi_rack_host_entry_fn)(void);

#ifdef __cplusplus
}
#endif
