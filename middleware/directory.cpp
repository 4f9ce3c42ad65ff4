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

bool listable_name(std::string_view n) {
  for (unsigned char c : n)
    if (c < 0x20 || c == 0x7f || c == '\\') return false;
  return valid_utf8(n);
}

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

}  // namespace


Response directory_listing(const Opened& dir, std::string_view display_path, bool show_parent, const StaticOptions& o) {
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
    if (name.front() == '.' && !o.allow_dotfiles && name != ".well-known") continue;
    if (!listable_name(name)) continue;
    struct stat st {};
    if (::fstatat(::dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (S_ISLNK(st.st_mode)) {
      if (o.symlinks == Symlinks::never) continue;
      if (::fstatat(::dirfd(d), de->d_name, &st, 0) != 0) continue;  // dangling
    }
    if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) continue;
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
  o.on_directory = [copy](Env& env, const Opened& dir, std::string_view relative) {
    std::string display(env.get(keys::SCRIPT_NAME));
    display.append(env.get(keys::PATH_INFO));
    if (display.empty()) display = "/";
    return directory_listing(dir, display, !relative.empty() || !env.get(keys::SCRIPT_NAME).empty(), copy);
  };
  return o;
}
}  // namespace

Directory::Directory(DirectoryOptions options) : files_(with_listing(std::move(options.files))) {}

}  // namespace csgi::mw
