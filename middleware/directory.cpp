#include "csgi/middleware/directory.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <ctime>
#include <system_error>

#include "csgi/core/percent.hpp"

namespace csgi::mw {

namespace {

struct Entry {
  std::string name;
  bool dir = false;
  std::uint64_t size = 0;
  std::time_t mtime = 0;
};

std::string human_size(std::uint64_t n) {
  static const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(n);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  char buf[32];
  if (u == 0)
    std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(n));
  else
    std::snprintf(buf, sizeof buf, "%.1f %s", v, units[u]);
  return buf;
}

std::string iso_time(std::time_t t) {
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm);
  return buf;
}

/// Whether `name` in the directory `relative` is what Static would serve, and then its stat: the same
/// path checks and the same open beneath the root, so a refused entry (a symlink leaving the root, a
/// FIFO, a name sanitize_path rejects) is left out and its size and time never show.
bool servable(const Root& root, std::string_view relative, std::string_view name, const StaticOptions& o,
              struct stat& st) {
  std::string path = "/";
  if (!relative.empty()) path.append(relative).append("/");
  path.append(name);
  SafePath sp = sanitize_path(path, o.allow_dotfiles);
  if (!sp) return false;
  Opened e = root.open(sp.relative);
  if (!e || (!e.is_file() && !e.is_dir())) return false;
  st = e.st;
  return true;
}

}  // namespace

Response directory_listing(const Root& root, const Opened& dir, std::string_view relative, std::string_view display_path,
                           bool show_parent, const StaticOptions& o) {
  int fd = ::dup(dir.file->fd());
  if (fd < 0) throw std::system_error(errno, std::generic_category(), "dup");
  DIR* d = ::fdopendir(fd);
  if (!d) {
    int e = errno;
    ::close(fd);
    throw std::system_error(e, std::generic_category(), "fdopendir");
  }
  ::rewinddir(d);
  std::vector<Entry> entries;
  while (dirent* de = ::readdir(d)) {
    std::string_view name(de->d_name);
    if (name == "." || name == "..") continue;
    struct stat st {};
    if (!servable(root, relative, name, o, st)) continue;
    entries.push_back({std::string(name), S_ISDIR(st.st_mode), static_cast<std::uint64_t>(st.st_size), st.st_mtim.tv_sec});
  }
  ::closedir(d);
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    if (a.dir != b.dir) return a.dir;
    return a.name < b.name;
  });

  std::string title = "Index of " + html_escape(display_path);
  std::string page;
  page.reserve(512 + entries.size() * 160);
  page += "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>" + title + "</title>\n"
          "<style>body{font-family:sans-serif}table{border-collapse:collapse}td,th{padding:2px 12px;text-align:left}"
          "td.size{text-align:right}</style></head>\n<body>\n<h1>" + title + "</h1>\n<table>\n"
          "<tr><th>Name</th><th>Size</th><th>Type</th><th>Last Modified</th></tr>\n";
  if (show_parent) page += "<tr><td><a href=\"../\">Parent Directory</a></td><td></td><td></td><td></td></tr>\n";
  auto mime = o.mime ? o.mime : MimeTypes::system();
  for (const Entry& e : entries) {
    std::string href = percent_encode(e.name) + (e.dir ? "/" : "");
    std::string shown = html_escape(e.name) + (e.dir ? "/" : "");
    page += "<tr><td><a href=\"" + href + "\">" + shown + "</a></td><td class=\"size\">" +
            (e.dir ? std::string("-") : human_size(e.size)) + "</td><td>" +
            (e.dir ? std::string("directory") : html_escape(mime->lookup(e.name, o.default_type))) + "</td><td>" +
            iso_time(e.mtime) + "</td></tr>\n";
  }
  page += "</table>\n</body></html>\n";
  return Response::html(200, std::move(page));
}

namespace {
StaticOptions with_listing(StaticOptions o) {
  StaticOptions copy = o;  // the listing needs the options without itself
  copy.on_directory = nullptr;
  o.on_directory = [copy](Env& env, const Root& root, const Opened& dir, std::string_view relative) {
    std::string display(env.get(keys::SCRIPT_NAME));
    display.append(env.get(keys::PATH_INFO));
    if (display.empty()) display = "/";
    return directory_listing(root, dir, relative, display, !relative.empty() || !env.get(keys::SCRIPT_NAME).empty(),
                             copy);
  };
  return o;
}
}  // namespace

Directory::Directory(DirectoryOptions options) : files_(with_listing(std::move(options.files))) {}

}  // namespace csgi::mw
