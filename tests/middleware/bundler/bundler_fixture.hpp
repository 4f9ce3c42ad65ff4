#pragma once
// Shared helpers of the bundler's Catch2 tests: temporary module trees and a reader of bundle responses.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <thread>

#include "csgi/core/test_client.hpp"
#include "csgi/middleware/bundler/bundler.hpp"

namespace bundler_test {

namespace fs = std::filesystem;
using csgi::mw::Bundler;
using csgi::mw::BundlerOptions;


/// A temporary directory tree of module files, removed at the end.
struct Tree {
  fs::path dir;
  Tree() {
    char tmpl[] = "/tmp/csgi-bundler-test-XXXXXX";
    dir = mkdtemp(tmpl);
  }
  ~Tree() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  void write(const std::string& rel, const std::string& text) {
    fs::path p = dir / rel;
    fs::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary | std::ios::trunc) << text;
  }
  std::string root() const { return dir.string(); }
};

struct Bundle {
  std::string epoch;
  long entry = -1;
  std::map<std::string, long> ids;  // path -> id, in this response
  std::vector<std::string> paths;   // in order
};

/// Reads a bundle response: one module per line, each line "[id,"path",[[spec,id],…],"source"(,table)]".
inline Bundle parse(const std::string& body) {
  Bundle b;
  std::smatch m;
  static const std::regex head(R"re(^csgiRequire\.define\("([0-9a-f]+)",(\d+),\[)re");
  REQUIRE(std::regex_search(body, m, head));
  b.epoch = m[1];
  b.entry = std::stol(m[2]);
  static const std::regex mod(R"re(^\[(\d+),"([^"]*)",)re");
  std::size_t pos = 0;
  while (pos < body.size()) {
    std::size_t nl = body.find('\n', pos);
    std::string line = body.substr(pos, nl == std::string::npos ? std::string::npos : nl - pos);
    if (std::regex_search(line, m, mod)) {
      b.ids[m[2]] = std::stol(m[1]);
      b.paths.push_back(m[2]);
    }
    if (nl == std::string::npos) break;
    pos = nl + 1;
  }
  return b;
}

inline std::set<std::string> set_of(const Bundle& b) { return {b.paths.begin(), b.paths.end()}; }

/// How many times `needle` occurs in `s` (not overlapping).
inline std::size_t count_of(const std::string& s, const std::string& needle) {
  std::size_t n = 0;
  for (auto at = s.find(needle); at != std::string::npos; at = s.find(needle, at + needle.size())) ++n;
  return n;
}

/// The have= bitset for a set of ids.
inline std::string have(const std::vector<long>& ids) {
  static const char* b64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  long max = 0;
  for (long i : ids) max = std::max(max, i);
  std::string s((max / 6) + 1, 'A');
  for (long i : ids) s[i / 6] = b64[(std::string_view(b64).find(s[i / 6])) | (1 << (i % 6))];
  return s;
}
inline std::vector<long> ids_of(const Bundle& b) {
  std::vector<long> v;
  for (auto& [p, i] : b.ids) v.push_back(i);
  return v;
}

inline csgi::App app_of(const std::string& root, BundlerOptions o = {}) {
  auto b = std::make_shared<Bundler>(root, o);
  return [b](csgi::Env& env) { return (*b)(env); };
}

/// Polls `fn` until it holds (bounded: 3 s), for changes noticed by the inotify thread.
template <class F>
bool eventually(F fn) {
  for (int i = 0; i < 300; ++i) {
    if (fn()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return fn();
}


}  // namespace bundler_test
