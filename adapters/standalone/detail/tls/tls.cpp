// Loading the TLS module (libcsgi_tls.so) when certificates are given, and the env of a TLS connection
// (see tls.hpp).
#include "csgi/adapters/standalone/detail/tls/tls.hpp"

#include <dlfcn.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <stdexcept>

#include "csgi/core/env.hpp"
#include "csgi/core/keys.hpp"

namespace csgi::standalone::detail {

namespace {

constexpr const char* module_name = "libcsgi_tls.so";

std::string directory_of(const std::string& path) {
  auto slash = path.rfind('/');
  return slash == std::string::npos ? std::string(".") : path.substr(0, slash);
}

// Where the module may be, in order: $CSGI_TLS_MODULE; next to the program (and its ../lib/csgi); where
// this build put it; where the install step puts it.
std::vector<std::string> module_candidates() {
  std::vector<std::string> out;
  if (const char* env = std::getenv("CSGI_TLS_MODULE"); env && *env) out.emplace_back(env);
  char exe[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n > 0) {
    std::string dir = directory_of(std::string(exe, static_cast<std::size_t>(n)));
    out.push_back(dir + "/" + module_name);
    out.push_back(dir + "/../lib/csgi/" + module_name);
  }
#ifdef CSGI_TLS_MODULE_BUILD_PATH
  out.emplace_back(CSGI_TLS_MODULE_BUILD_PATH);
#endif
#ifdef CSGI_TLS_MODULE_INSTALL_PATH
  out.emplace_back(CSGI_TLS_MODULE_INSTALL_PATH);
#endif
  return out;
}

TlsMakeFn find_module() {
  std::string tried;
  for (const std::string& path : module_candidates()) {
    if (::access(path.c_str(), R_OK) != 0) {
      tried += (tried.empty() ? "" : ", ") + path;
      continue;
    }
    void* h = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!h) throw std::runtime_error(std::string("TLS: cannot load ") + path + ": " + ::dlerror());
    auto make = reinterpret_cast<TlsMakeFn>(::dlsym(h, tls_module_entry));
    if (!make) throw std::runtime_error("TLS: " + path + " has no " + tls_module_entry);
    return make;
  }
  throw std::runtime_error(std::string("TLS: cannot find ") + module_name + " (tried " + tried +
                           "; set CSGI_TLS_MODULE to its path)");
}

// Loaded once per process (a failed attempt is made again next time), never unloaded.
TlsMakeFn load_module() {
  static const TlsMakeFn make = find_module();
  return make;
}

}  // namespace

std::unique_ptr<TlsContext> make_tls_context(const std::vector<TlsCertificate>& certs, const std::string& client_ca,
                                             bool h2) {
  TlsMakeFn make = load_module();
  std::string error;
  std::unique_ptr<TlsContext> ctx(make(certs, client_ca, h2, error));
  if (!ctx) throw std::runtime_error(error);
  return ctx;
}

void TlsInfo::copy_to_env(Env& env) const {
  set_env(env);
  for (std::string_view key : {keys::SSL_PROTOCOL, keys::SSL_CIPHER, keys::SSL_TLS_SNI, keys::SSL_CLIENT_VERIFY,
                               keys::SSL_CLIENT_S_DN, keys::SSL_CLIENT_CERT}) {
    std::string_view v = env.get(key);
    if (!v.empty()) env.set(key, v);
  }
}

void TlsInfo::set_env(Env& env) const {
  env.set_view(keys::HTTPS, "on");
  env.set_view(keys::SSL_PROTOCOL, protocol);
  env.set_view(keys::SSL_CIPHER, cipher);
  if (!sni.empty()) env.set_view(keys::SSL_TLS_SNI, sni);
  if (!asked_client_cert) return;
  env.set_view(keys::SSL_CLIENT_VERIFY, verify);
  if (!subject.empty()) env.set_view(keys::SSL_CLIENT_S_DN, subject);
  if (!cert.empty()) env.set_view(keys::SSL_CLIENT_CERT, cert);
}

}  // namespace csgi::standalone::detail
