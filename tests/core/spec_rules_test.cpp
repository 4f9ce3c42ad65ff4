// Keeps spec/csgi.md and its enforcement together: every rule ID in the spec must be enforced by Lint
// (csgi::Lint::rules()) or cited by a test source under tests/ (this file does not count).
#include "csgi/core/lint.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#ifndef CSGI_SPEC_PATH
#error "CSGI_SPEC_PATH must name spec/csgi.md (tests/core/CMakeLists.txt)"
#endif
#ifndef CSGI_TESTS_DIR
#error "CSGI_TESTS_DIR must name the tests/ directory (tests/core/CMakeLists.txt)"
#endif

namespace fs = std::filesystem;

namespace {

const std::set<std::string> kAreas = {"APP", "ENV", "CORE", "INPUT", "ERR", "EXT", "RES", "MW", "ADP", "LIB"};

struct Rule {
  std::string id;
  std::string text;  // from after the ID marker to the next rule or heading
  int line = 0;
};

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

bool upper(char c) { return c >= 'A' && c <= 'Z'; }
bool digit(char c) { return c >= '0' && c <= '9'; }
bool word(char c) { return upper(c) || digit(c) || (c >= 'a' && c <= 'z') || c == '_' || c == '-'; }

/// Every `AREA-n` (a known area, on word boundaries) in `text`.
std::vector<std::string> find_ids(std::string_view text) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (!upper(text[i]) || (i > 0 && word(text[i - 1]))) continue;
    std::size_t j = i;
    while (j < text.size() && upper(text[j])) ++j;
    if (j >= text.size() || text[j] != '-' || !kAreas.count(std::string(text.substr(i, j - i)))) {
      i = j;
      continue;
    }
    std::size_t k = j + 1;
    while (k < text.size() && digit(text[k])) ++k;
    if (k > j + 1 && (k == text.size() || !(word(text[k]) && text[k] != '-'))) out.emplace_back(text.substr(i, k - i));
    i = k;
  }
  return out;
}

/// The rules of the spec: each starts with **[AREA-n]**.
std::vector<Rule> parse_spec(const std::string& spec) {
  std::vector<Rule> rules;
  std::size_t pos = 0;
  auto line_of = [&](std::size_t at) { return 1 + static_cast<int>(std::count(spec.begin(), spec.begin() + at, '\n')); };
  while ((pos = spec.find("**[", pos)) != std::string::npos) {
    std::size_t close = spec.find("]**", pos);
    if (close == std::string::npos) break;
    std::string id = spec.substr(pos + 3, close - pos - 3);
    auto found = find_ids(id);
    if (found.size() == 1 && found[0] == id) {
      std::size_t start = close + 3;
      std::size_t next = spec.find("**[", start);
      std::size_t heading = spec.find("\n#", start);
      std::size_t end = std::min({next, heading, spec.size()});
      rules.push_back(Rule{id, spec.substr(start, end - start), line_of(pos)});
    }
    pos = close;
  }
  return rules;
}

struct Citations {
  std::map<std::string, std::set<std::string>> by_id;  // ID → files citing it
  std::map<std::string, std::string> files;            // relative path → content
};

Citations scan_tests() {
  static const std::set<std::string> exts = {".cpp", ".cc", ".hpp", ".h", ".py", ".sh", ".js", ".mjs"};
  Citations c;
  fs::path root = CSGI_TESTS_DIR;
  for (auto it = fs::recursive_directory_iterator(root); it != fs::recursive_directory_iterator(); ++it) {
    if (it->is_directory() && it->path().filename().string().starts_with(".")) {
      it.disable_recursion_pending();
      continue;
    }
    if (!it->is_regular_file() || !exts.count(it->path().extension().string())) continue;
    if (it->path().filename() == "spec_rules_test.cpp") continue;
    std::string rel = "tests/" + fs::relative(it->path(), root).generic_string();
    std::string text = slurp(it->path());
    for (const std::string& id : find_ids(text)) c.by_id[id].insert(rel);
    c.files.emplace(rel, std::move(text));
  }
  return c;
}

/// The text after "Check:" in a rule.
std::string check_clause(const Rule& r) {
  auto at = r.text.find("Check:");
  return at == std::string::npos ? std::string() : r.text.substr(at);
}

std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ", ") + s;
  return out;
}

}  // namespace

TEST_CASE("spec: the rule ID scanner finds IDs on word boundaries only", "[spec]") {
  CHECK(find_ids("**[ENV-7]** and `[ADP-12]`, RES-3.") == std::vector<std::string>{"ENV-7", "ADP-12", "RES-3"});
  CHECK(find_ids("UTF-8 SHA-1 XENV-1 ENV-1x ENV- ENV-12a").empty());
  CHECK(find_ids("\"[MW-3]\"") == std::vector<std::string>{"MW-3"});
}

TEST_CASE("spec: rule IDs are unique and each rule says how it is checked", "[spec]") {
  auto rules = parse_spec(slurp(CSGI_SPEC_PATH));
  REQUIRE(rules.size() >= 60);
  std::map<std::string, int> seen;
  std::vector<std::string> duplicates, unchecked;
  for (const Rule& r : rules) {
    if (auto [it, fresh] = seen.emplace(r.id, r.line); !fresh)
      duplicates.push_back(r.id + " (lines " + std::to_string(it->second) + " and " + std::to_string(r.line) + ")");
    if (check_clause(r).empty()) unchecked.push_back(r.id);
  }
  INFO("duplicate rule IDs: " << join(duplicates));
  CHECK(duplicates.empty());
  INFO("rules without a 'Check:' clause: " << join(unchecked));
  CHECK(unchecked.empty());
}

TEST_CASE("spec: Lint claims only spec rules, and a Check: line starts with Lint exactly where Lint enforces", "[spec]") {
  auto rules = parse_spec(slurp(CSGI_SPEC_PATH));
  std::set<std::string> in_spec;
  std::set<std::string> says_lint;
  for (const Rule& r : rules) {
    in_spec.insert(r.id);
    if (check_clause(r).starts_with("Check: Lint")) says_lint.insert(r.id);
  }
  std::set<std::string> lint;
  for (std::string_view id : csgi::Lint::rules()) lint.emplace(id);
  std::vector<std::string> unknown, not_marked, not_enforced;
  for (const auto& id : lint) {
    if (!in_spec.count(id)) unknown.push_back(id);
    else if (!says_lint.count(id)) not_marked.push_back(id);
  }
  for (const auto& id : says_lint)
    if (!lint.count(id)) not_enforced.push_back(id);
  INFO("Lint::rules() IDs missing from spec/csgi.md: " << join(unknown));
  CHECK(unknown.empty());
  INFO("enforced by Lint but the spec's Check: line does not say Lint: " << join(not_marked));
  CHECK(not_marked.empty());
  INFO("the spec says Lint checks these, but Lint::rules() lacks them: " << join(not_enforced));
  CHECK(not_enforced.empty());
}

TEST_CASE("spec: every rule is enforced by Lint or cited by an existing test", "[spec]") {
  auto rules = parse_spec(slurp(CSGI_SPEC_PATH));
  std::set<std::string> lint;
  for (std::string_view id : csgi::Lint::rules()) lint.emplace(id);
  Citations cited = scan_tests();
  std::vector<std::string> nowhere;
  for (const Rule& r : rules)
    if (!lint.count(r.id) && !cited.by_id.count(r.id)) nowhere.push_back(r.id + " (line " + std::to_string(r.line) + ")");
  INFO("rules enforced nowhere (not in Lint::rules(), cited by no test under tests/): " << join(nowhere));
  CHECK(nowhere.empty());
}

TEST_CASE("spec: tests cite only rules the spec defines, and named test files cite their rule", "[spec]") {
  auto rules = parse_spec(slurp(CSGI_SPEC_PATH));
  std::set<std::string> in_spec;
  for (const Rule& r : rules) in_spec.insert(r.id);
  Citations cited = scan_tests();
  std::vector<std::string> stray;
  for (const auto& [id, files] : cited.by_id)
    if (!in_spec.count(id)) stray.push_back(id + " in " + *files.begin());
  INFO("tests cite rule IDs that spec/csgi.md does not define: " << join(stray));
  CHECK(stray.empty());

  // A rule whose Check: line names a test file (tests/…/x_test.cpp) must be cited by that file.
  std::vector<std::string> broken;
  for (const Rule& r : rules) {
    std::string check = check_clause(r);
    for (std::size_t at = check.find("tests/"); at != std::string::npos; at = check.find("tests/", at + 1)) {
      std::size_t end = check.find_first_of(" ,;:)`*\n", at);
      std::string path = check.substr(at, end == std::string::npos ? std::string::npos : end - at);
      if (!path.ends_with(".cpp")) continue;
      auto f = cited.files.find(path);
      if (f == cited.files.end())
        broken.push_back(r.id + ": " + path + " does not exist");
      else if (!cited.by_id[r.id].count(path))
        broken.push_back(r.id + ": " + path + " does not cite it");
    }
  }
  INFO("Check: lines naming test files that do not check the rule: " << join(broken));
  CHECK(broken.empty());
}
