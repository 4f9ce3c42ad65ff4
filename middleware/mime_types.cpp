#include "csgi/middleware/mime_types.hpp"
#include "csgi/core/text.hpp"

#include <fstream>
#include <sstream>
#include <utility>

#include "csgi/core/response.hpp"

namespace csgi::mw {

namespace {


// Common web types; /etc/mime.types overrides and extends these.
constexpr std::pair<const char*, const char*> builtin[] = {
    {"html", "text/html"},          {"htm", "text/html"},
    {"css", "text/css"},            {"js", "text/javascript"},
    {"mjs", "text/javascript"},     {"json", "application/json"},
    {"map", "application/json"},    {"txt", "text/plain"},
    {"text", "text/plain"},         {"md", "text/markdown"},
    {"csv", "text/csv"},            {"xml", "application/xml"},
    {"xhtml", "application/xhtml+xml"}, {"rss", "application/rss+xml"},
    {"atom", "application/atom+xml"}, {"svg", "image/svg+xml"},
    {"png", "image/png"},           {"jpg", "image/jpeg"},
    {"jpeg", "image/jpeg"},         {"gif", "image/gif"},
    {"webp", "image/webp"},         {"avif", "image/avif"},
    {"ico", "image/vnd.microsoft.icon"}, {"bmp", "image/bmp"},
    {"tif", "image/tiff"},          {"tiff", "image/tiff"},
    {"woff", "font/woff"},          {"woff2", "font/woff2"},
    {"ttf", "font/ttf"},            {"otf", "font/otf"},
    {"eot", "application/vnd.ms-fontobject"}, {"wasm", "application/wasm"},
    {"pdf", "application/pdf"},     {"zip", "application/zip"},
    {"gz", "application/gzip"},     {"tgz", "application/gzip"},
    {"bz2", "application/x-bzip2"}, {"xz", "application/x-xz"},
    {"zst", "application/zstd"},    {"tar", "application/x-tar"},
    {"7z", "application/x-7z-compressed"}, {"br", "application/x-brotli"},
    {"mp3", "audio/mpeg"},          {"ogg", "audio/ogg"},
    {"oga", "audio/ogg"},           {"wav", "audio/wav"},
    {"flac", "audio/flac"},         {"m4a", "audio/mp4"},
    {"mp4", "video/mp4"},           {"m4v", "video/mp4"},
    {"webm", "video/webm"},         {"ogv", "video/ogg"},
    {"mov", "video/quicktime"},     {"avi", "video/x-msvideo"},
    {"wasm", "application/wasm"},   {"webmanifest", "application/manifest+json"},
    {"ics", "text/calendar"},       {"yaml", "application/yaml"},
    {"yml", "application/yaml"},    {"toml", "application/toml"},
    {"sh", "application/x-sh"},     {"c", "text/x-c"},
    {"h", "text/x-c"},              {"cpp", "text/x-c++src"},
    {"hpp", "text/x-c++hdr"},       {"py", "text/x-python"},
    {"pl", "text/x-perl"},          {"rb", "text/x-ruby"},
    {"doc", "application/msword"},  {"docx", "application/vnd.openxmlformats-officedocument.wordprocessingml.document"},
    {"xls", "application/vnd.ms-excel"}, {"xlsx", "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"},
    {"odt", "application/vnd.oasis.opendocument.text"}, {"epub", "application/epub+zip"},
    {"swf", "application/x-shockwave-flash"}, {"jar", "application/java-archive"},
};


}  // namespace

MimeTypes::MimeTypes() {
  for (auto& [ext, type] : builtin) map_[ext] = type;
}

MimeTypes MimeTypes::from_file(const std::string& path) {
  MimeTypes m;
  std::ifstream in(path, std::ios::binary);
  if (in) {
    std::ostringstream text;
    text << in.rdbuf();
    m.load(text.str());
  }
  return m;
}

std::shared_ptr<const MimeTypes> MimeTypes::system() {
  static const std::shared_ptr<const MimeTypes> instance =
      std::make_shared<const MimeTypes>(from_file("/etc/mime.types"));
  return instance;
}

void MimeTypes::add(std::string_view extension, std::string type) { map_[csgi::to_lower(extension)] = std::move(type); }

std::size_t MimeTypes::load(std::string_view text) {
  std::size_t mapped = 0;
  while (!text.empty()) {
    std::size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
    if (auto hash = line.find('#'); hash != std::string_view::npos) line = line.substr(0, hash);
    std::string_view type;
    bool first = true;
    while (!line.empty()) {
      std::size_t start = line.find_first_not_of(" \t\r");
      if (start == std::string_view::npos) break;
      line.remove_prefix(start);
      std::size_t end = line.find_first_of(" \t\r");
      std::string_view word = line.substr(0, end);
      line = end == std::string_view::npos ? std::string_view{} : line.substr(end);
      if (first) {
        if (word.find('/') == std::string_view::npos) break;  // not a "type ext…" line
        type = word;
        first = false;
      } else {
        map_[csgi::to_lower(word)] = csgi::to_lower(type);
        ++mapped;
      }
    }
  }
  return mapped;
}

std::string_view MimeTypes::lookup(std::string_view filename, std::string_view fallback) const {
  std::size_t slash = filename.rfind('/');
  if (slash != std::string_view::npos) filename.remove_prefix(slash + 1);
  std::size_t dot = filename.rfind('.');
  if (dot == std::string_view::npos || dot + 1 == filename.size()) return fallback;
  std::string_view ext = filename.substr(dot + 1);
  char buf[32];
  if (ext.size() > sizeof buf) return fallback;
  for (std::size_t i = 0; i < ext.size(); ++i) {
    char c = ext[i];
    buf[i] = c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
  }
  auto it = map_.find(std::string(buf, ext.size()));
  return it == map_.end() ? fallback : std::string_view(it->second);
}

bool is_compressible_type(std::string_view t) noexcept {
  if (auto semi = t.find(';'); semi != std::string_view::npos) t = t.substr(0, semi);
  while (!t.empty() && (t.back() == ' ' || t.back() == '\t')) t.remove_suffix(1);
  if (istarts_with(t, "text/")) return true;
  if (iends_with(t, "+json") || iends_with(t, "+xml")) return true;
  static constexpr std::string_view exact[] = {
      "application/json",       "application/javascript", "application/x-javascript",
      "application/xml",        "application/wasm",       "application/ld+json",
      "application/yaml",       "application/toml",       "application/x-sh",
      "application/rtf",        "application/vnd.ms-fontobject", "font/ttf",
      "font/otf",               "application/x-font-ttf", "image/x-icon",
      "image/vnd.microsoft.icon", "image/bmp",            "application/manifest+json",
      "application/graphql",    "application/x-www-form-urlencoded",
  };
  for (std::string_view e : exact)
    if (iequals(t, e)) return true;
  return false;
}

}  // namespace csgi::mw
