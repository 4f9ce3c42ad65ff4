#pragma once
/// The env of a WSGI call (to_wsgi.cpp), read from the host's environ when the app first uses an entry.
///
/// start() reads only SCRIPT_NAME and PATH_INFO (they are made canonical before the app runs) and
/// attaches this source to the env; every other entry is added by the env's lookup that misses it (EnvSource), so a
/// request costs nothing for the environ entries its app never reads. The mapping is the one PEP 3333
/// hosts get everywhere in csgi: text values become entries that point straight into the str objects
/// (latin-1 bytes, no copy); wsgi.input / wsgi.errors / wsgi.url_scheme / wsgi.multithread / ... become
/// the csgi.* keys; HTTP_CONTENT_TYPE / HTTP_CONTENT_LENGTH and empty CONTENT_TYPE / CONTENT_LENGTH are
/// left out; QUERY_STRING defaults to ""; REQUEST_URI is the host's, else gunicorn's RAW_URI, else built
/// from SCRIPT_NAME, PATH_INFO and QUERY_STRING.
///
/// Where the GIL is held (the adapter's own reads before and after the app) an entry is one dict lookup.
/// Where it is not (the app), the first lookup takes the GIL once and copies the dict's (key, value)
/// pointers; later lookups search that copy without the GIL. The environ must not be changed by other
/// threads during the call (the entries point into its str objects, as they always did).
///
/// A value above U+00FF in SCRIPT_NAME or PATH_INFO makes start() raise ValueError; in any other entry
/// the entry reads as absent and bad_key() names it once the app has read it (or iterated the env): the
/// call then raises the same ValueError instead of answering.
#include <Python.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "csgi/core/env.hpp"

namespace csgi::python {

/// Where csgi.input and csgi.errors come from: the exchange's streams over the host's objects.
class HostStreams {
public:
  /// csgi.input over `obj` (wsgi.input): `length` bytes, or to the host's EOF when `unbounded`.
  virtual Input* open_input(PyObject* obj, std::int64_t length, bool unbounded) noexcept = 0;
  /// csgi.errors over `obj` (wsgi.errors).
  virtual ErrorStream* open_errors(PyObject* obj) noexcept = 0;

protected:
  ~HostStreams() = default;
};

class WsgiEnviron final : public EnvSource {
public:
  explicit WsgiEnviron(HostStreams& streams);
  /// Starts a request on `environ` (borrowed: the caller keeps it alive until reset()) and attaches to
  /// `env`. Needs the GIL; raises ValueError for a SCRIPT_NAME or PATH_INFO above U+00FF.
  void start(Env& env, PyObject* environ, PyInterpreterState* interp);
  /// Makes SCRIPT_NAME and PATH_INFO canonical (ENV-5, ENV-2); throws csgi::BadRequest for a ".." above
  /// the root. Needs no GIL; call it before the app runs.
  void canonicalize(Env& env);
  /// The host's object under `name` (e.g. "wsgi.file_wrapper"), borrowed, or nullptr. Needs the GIL.
  PyObject* host_object(std::string_view name) noexcept;
  /// The first entry the app read whose value holds characters above U+00FF; empty when none.
  const std::string& bad_key() const noexcept { return bad_key_; }
  /// The ValueError text for bad_key().
  std::string bad_key_message() const;
  /// Whether start() ran since the last reset().
  bool started() const noexcept { return environ_ != nullptr; }
  /// Drops the request (after the env was cleared).
  void reset() noexcept;

  bool fetch(Env& env, std::string_view key) noexcept override;
  void fetch_all(Env& env) noexcept override;
  bool forget(std::string_view key) noexcept override;

private:
  struct Item {
    std::string_view key;  // the environ key's latin-1 bytes
    PyObject* value;       // borrowed: the environ holds it
    bool forgotten;
  };
  struct Found {
    std::string_view key;  // a view that lives as long as the request ("" when the key must be copied)
    Value value;
  };

  bool lookup(std::string_view key, Found& out) noexcept;
  bool text_entry(std::string_view key, Found& out) noexcept;
  PyObject* raw(std::string_view name) noexcept;
  const Item* find_item(std::string_view name) const noexcept;
  void snapshot() noexcept;
  bool truthy(PyObject* v) noexcept;
  bool text_of(std::string_view key, PyObject* v, std::string_view& out) noexcept;
  bool request_uri(Found& out) noexcept;
  bool forgotten(std::string_view key) const noexcept;
  static std::uint64_t bit(std::string_view key) noexcept {
    return std::uint64_t{1} << ((key.size() * 7 + static_cast<unsigned char>(key.back())) & 63);
  }

  HostStreams& streams_;
  PyObject* environ_ = nullptr;
  PyInterpreterState* interp_ = nullptr;
  std::string_view script_raw_, path_raw_;  // as the host gave them
  std::string_view script_, path_;          // canonical
  std::vector<Item> items_;                 // the dict's entries once snapshot() ran
  bool snapped_ = false;
  std::uint64_t mask_ = 0;           // bit() of every item's key
  std::uint32_t fixed_forgotten_ = 0;  // the keys of kFixed that were erased
  std::string bad_key_;
  std::string uri_;  // a REQUEST_URI built here
};

}  // namespace csgi::python
