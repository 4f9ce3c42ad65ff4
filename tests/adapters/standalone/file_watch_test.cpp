// FileWatch (--reload): a change is reported once the files have been quiet for the debounce interval,
// a file renamed over a watched one counts, other files in its directory do not, and a tree reports files
// with the suffix only, in subdirectories made after the watch began too. Times are given, not waited.
#include "csgi/adapters/standalone/detail/process/file_watch.hpp"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

using csgi::standalone::detail::FileWatch;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {
struct TempDir {
  fs::path path;
  TempDir() {
    char tmpl[] = "/tmp/csgi-watch-XXXXXX";
    path = ::mkdtemp(tmpl);
  }
  ~TempDir() { fs::remove_all(path); }
};

void write_file(const fs::path& p, const std::string& text) {
  std::ofstream f(p, std::ios::app);
  f << text;
}
}  // namespace

TEST_CASE("FileWatch reports a file written in pieces once, after the quiet interval", "[reload]") {
  TempDir d;
  fs::path lib = d.path / "libapp.so";
  write_file(lib, "v1");
  FileWatch w({lib.string()}, {}, ".py", 300ms);
  auto t0 = FileWatch::Clock::now();
  CHECK(w.poll(t0).empty());
  write_file(lib, "piece 1");
  CHECK(w.poll(t0).empty());
  write_file(lib, "piece 2");
  CHECK(w.poll(t0 + 200ms).empty());  // the last piece came at +200 ms
  CHECK(w.poll(t0 + 450ms).empty());  // quiet for 250 ms only
  CHECK(w.poll(t0 + 500ms) == lib.string());
  CHECK(w.poll(t0 + 900ms).empty());  // reported once
}

TEST_CASE("FileWatch: a file renamed over the watched one counts, its neighbours do not", "[reload]") {
  TempDir d;
  fs::path lib = d.path / "libapp.so";
  write_file(lib, "v1");
  FileWatch w({lib.string()}, {}, ".py", 300ms);
  auto t0 = FileWatch::Clock::now();
  write_file(d.path / "other.so", "x");
  write_file(d.path / "libapp.so.part", "v2");
  CHECK(w.poll(t0).empty());
  CHECK(w.poll(t0 + 1s).empty());
  fs::rename(d.path / "libapp.so.part", lib);
  CHECK(w.poll(t0 + 2s).empty());
  CHECK(w.poll(t0 + 3s) == lib.string());
}

TEST_CASE("FileWatch: a tree reports files with the suffix, in new subdirectories too", "[reload]") {
  TempDir d;
  fs::create_directory(d.path / "pkg");
  FileWatch w({}, {d.path.string()}, ".py", 300ms);
  auto t0 = FileWatch::Clock::now();
  write_file(d.path / "notes.txt", "x");
  fs::create_directory(d.path / "__pycache__");
  write_file(d.path / "__pycache__" / "a.py", "x");
  CHECK(w.poll(t0).empty());
  CHECK(w.poll(t0 + 1s).empty());
  write_file(d.path / "pkg" / "models.py", "x = 1\n");
  CHECK(w.poll(t0 + 2s).empty());
  CHECK(w.poll(t0 + 3s) == (d.path / "pkg" / "models.py").string());
  fs::create_directory(d.path / "pkg" / "sub");
  CHECK(w.poll(t0 + 4s).empty());  // the new directory is watched from now on
  write_file(d.path / "pkg" / "sub" / "views.py", "y = 2\n");
  CHECK(w.poll(t0 + 5s).empty());
  CHECK(w.poll(t0 + 6s) == (d.path / "pkg" / "sub" / "views.py").string());
}

TEST_CASE("FileWatch: a directory that cannot be watched throws", "[reload]") {
  CHECK_THROWS_AS(FileWatch({"/nonexistent-csgi-dir/libapp.so"}, {}, ".py"), std::system_error);
}
