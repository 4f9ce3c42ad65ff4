#pragma once
/// File-extension → media type map for the static and directory apps: /etc/mime.types (the system list,
/// as Apache and nginx ship it) over a built-in table of the common web types, so a machine without
/// mime.types still serves .html as text/html.
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>

namespace csgi::mw {

class MimeTypes {
public:
  /// The built-in table only.
  MimeTypes();
  /// The built-in table, then every line of `path` (format of /etc/mime.types: "type ext ext …", '#'
  /// comments) on top; a missing file is not an error.
  static MimeTypes from_file(const std::string& path);
  /// /etc/mime.types over the built-in table, loaded once per process (thread-safe).
  static std::shared_ptr<const MimeTypes> system();

  /// Adds or replaces one mapping (extension without the dot, any case).
  void add(std::string_view extension, std::string type);
  /// Loads a mime.types-format text; returns how many extensions it mapped.
  std::size_t load(std::string_view text);

  /// The type for a file name ("a/b.tar.GZ" → "application/gzip"), or `fallback` when unknown.
  std::string_view lookup(std::string_view filename, std::string_view fallback = "application/octet-stream") const;

private:
  std::unordered_map<std::string, std::string> map_;
};

/// True for types worth compressing: text/*, JSON, JavaScript, XML and their +json/+xml kinds, SVG,
/// WebAssembly, fonts without built-in compression (TTF/OTF/EOT). Parameters (";charset=…") are ignored.
bool is_compressible_type(std::string_view content_type) noexcept;

}  // namespace csgi::mw
