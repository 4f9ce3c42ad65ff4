#include "csgi/middleware/bundler/detail/esm_transform.hpp"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "csgi/middleware/path_safety.hpp"

namespace csgi::mw::bundler {

namespace {

struct Binding {
  std::string expr;  // what a reference becomes: "__csgi_i0.name"
  std::string spec, imported;  // where it comes from
};

struct ReExport {
  std::string name, spec, imported;  // imported "*": the module's namespace
};

/// One open bracket and what the forward pass knows about it.
struct Level {
  std::size_t open = npos;
  enum Kind : std::uint8_t { top, paren, bracket, object, block, klass, tmpl } kind = top;
  bool params = false;       // inside a parameter list or a declaration's pattern (any depth)
  bool in_default = false;   // in a pattern, after `=`: a default value (an expression) up to the next ','
  std::string_view pattern_decl;     // a declaration's pattern: its `var`/`let`/`const`
  std::size_t pattern_base = npos;   // … and the index (in the level stack) of the level declaring it
  std::size_t pattern_params = npos; // a parameter list's pattern: the list's '('
  bool function = false;     // a function body
  int ternary = 0;           // '?' waiting for their ':'
  bool decl = false;         // inside `var/let/const` declarators
  std::string_view decl_word;  // which of them
  bool decl_binding = false; // the next token starts a declarator
  bool case_label = false;   // after `case`, before its ':'
  bool arrow = false;        // inside a concise arrow body
  bool class_pending = false;
};

class Transform {
public:
  Transform(std::string_view s, const std::vector<Token>& t) : s_(s), t_(t) {}

  EsmModule run() {
    if (!valid_utf8(s_)) {  // names and specifiers go into JSON and JavaScript strings: refuse, don't mangle
      std::size_t begin = 0, n = 1;
      for (;;) {
        std::size_t end = s_.find('\n', begin);
        if (!valid_utf8(s_.substr(begin, end == std::string_view::npos ? end : end - begin)) || end == std::string_view::npos)
          break;
        begin = end + 1;
        ++n;
      }
      out_.error = "line " + std::to_string(n) + ": an ES module must be valid UTF-8";
      return std::move(out_);
    }
    for (std::size_t i = 0; i < t_.size(); ++i)
      if (is_word(i) && text(i).find('\\') != std::string_view::npos) {
        // Names are copied into the code on the first line and into the loader's metadata as written.
        fail(i, "an identifier written with a \\u escape is not supported in an ES module");
        return std::move(out_);
      }
    match_brackets();
    if (s_.starts_with("#!")) out_.edits.push_back({0, 2, "//"});  // a hashbang is only allowed first
    for (std::size_t i = 0; i < t_.size() && !out_.error; ++i)
      if (parent_[i] == npos && is_word(i) && !after_dot(i) && (text(i) == "import" || text(i) == "export"))
        i = statement(i);
    if (!out_.error) {  // first the scopes of local declarations of imported names, then the rewrites
      std::size_t kept = out_.edits.size();
      references();
      out_.edits.resize(kept);
      collecting_ = false;
    }
    if (!out_.error) references();
    if (!out_.error) finish();
    return std::move(out_);
  }

private:
  // --- tokens ---
  std::string_view text(std::size_t i) const { return s_.substr(t_[i].begin, t_[i].end - t_[i].begin); }
  bool is_word(std::size_t i) const { return i < t_.size() && t_[i].kind == Token::ident; }
  bool word(std::size_t i, std::string_view w) const { return is_word(i) && same(t_[i], w); }
  bool punct(std::size_t i, std::string_view p) const {
    return i < t_.size() && t_[i].kind == Token::punct && same(t_[i], p);
  }
  // The token's text is `w` (length first: most tokens differ there, and one-character punctuators
  // compare inline; these checks run several times per token of a large module).
  bool same(const Token& t, std::string_view w) const {
    if (t.end - t.begin != w.size()) return false;
    if (w.size() == 1) return s_[t.begin] == w[0];
    return s_.compare(t.begin, w.size(), w) == 0;
  }
  bool after_dot(std::size_t i) const { return i > 0 && (punct(i - 1, ".") || punct(i - 1, "?.")); }
  std::uint32_t line(std::size_t off) const {
    return std::uint32_t(std::count(s_.begin(), s_.begin() + std::ptrdiff_t(off), '\n') + 1);
  }
  bool newline_between(std::size_t a, std::size_t b) const {
    return s_.substr(t_[a].end, t_[b].begin - t_[a].end).find('\n') != std::string_view::npos;
  }
  void fail(std::size_t i, const std::string& what) {
    if (!out_.error) out_.error = "line " + std::to_string(line(i < t_.size() ? t_[i].begin : s_.size())) + ": " + what;
  }
  std::string string_value(std::size_t i) const {
    std::string sc(text(i).substr(1, text(i).size() - 2));  // the lexer decoded require() strings; ES
    if (sc.find('\\') == std::string::npos) return sc;      // specifiers with escapes are refused below
    return {};
  }

  void match_brackets() {
    match_.assign(t_.size(), npos);
    parent_.assign(t_.size(), npos);
    std::vector<std::size_t> open;
    for (std::size_t i = 0; i < t_.size(); ++i) {
      parent_[i] = open.empty() ? npos : open.back();
      auto k = t_[i].kind;
      bool opens = k == Token::tmpl_open || (k == Token::punct && (punct(i, "(") || punct(i, "[") || punct(i, "{")));
      bool closes = k == Token::tmpl_close || (k == Token::punct && (punct(i, ")") || punct(i, "]") || punct(i, "}")));
      if ((closes || k == Token::tmpl_mid) && !open.empty()) {
        match_[open.back()] = i;
        match_[i] = open.back();
        open.pop_back();
        parent_[i] = open.empty() ? npos : open.back();
      }
      if (opens || k == Token::tmpl_mid) open.push_back(i);
    }
  }

  // --- import/export statements at the top level ---
  std::size_t end_of(std::size_t last) {  // a statement ending at token `last`, plus its ';'
    return punct(last + 1, ";") ? last + 1 : last;
  }
  void blank(std::size_t first, std::size_t last, std::string text = {}) {
    std::string_view r = s_.substr(t_[first].begin, t_[last].end - t_[first].begin);
    text.append(std::size_t(std::count(r.begin(), r.end(), '\n')), '\n');
    out_.edits.push_back({t_[first].begin, t_[last].end, std::move(text)});
    removed_.push_back({t_[first].begin, t_[last].end});
  }
  bool module_name(std::size_t i, std::string& name) {
    if (is_word(i)) {
      name = text(i);
      return true;
    }
    if (i < t_.size() && t_[i].kind == Token::string && text(i).find('\\') == std::string_view::npos) {
      name = text(i).substr(1, text(i).size() - 2);
      return true;
    }
    return false;
  }
  std::size_t request(std::size_t i) {  // a 'specifier' token: its request index
    std::string spec = string_value(i);
    if (t_[i].kind != Token::string || spec.empty()) {
      fail(i, "a module specifier must be a plain string literal");
      return 0;
    }
    for (std::size_t k = 0; k < out_.requests.size(); ++k)
      if (out_.requests[k].spec == spec) return k;
    out_.requests.push_back({spec, line(t_[i].begin), true});
    return out_.requests.size() - 1;
  }
  static std::string member(const std::string& name) {  // `.name`, or `["a b"]` for a string name
    bool plain = !name.empty() && !(name[0] >= '0' && name[0] <= '9');
    for (unsigned char c : name)
      plain = plain && (std::isalnum(c) || c == '_' || c == '$' || c >= 0x80);
    return plain ? "." + name : "[" + nlohmann::json(name).dump() + "]";
  }
  std::string ns_var(std::size_t req) const { return "__csgi_i" + std::to_string(req); }
  void bind(std::size_t i, const std::string& local, std::string expr, const std::string& spec = {},
            const std::string& imported = {}) {
    if (bindings_.count(local) || namespaces_.count(local)) fail(i, "'" + local + "' is imported twice");
    bindings_[local] = {std::move(expr), spec, imported};
  }
  void add_export(std::size_t i, const std::string& name) {
    if (!export_names_.insert(name).second) fail(i, "duplicate export '" + name + "'");
  }
  std::size_t from_clause(std::size_t j) {  // `from 'x'` at j; returns the string token or npos
    if (!word(j, "from") || j + 1 >= t_.size() || t_[j + 1].kind != Token::string) return npos;
    if (word(j + 2, "with") || word(j + 2, "assert")) {
      fail(j + 2, "import attributes (with { type: … }) are not supported");
      return npos;
    }
    return j + 1;
  }

  std::size_t statement(std::size_t i) {
    if (text(i) == "import") {
      if (punct(i + 1, "(") || punct(i + 1, ".")) return i;  // import() and import.meta: references()
      return import_statement(i);
    }
    return export_statement(i);
  }

  // Parses `{ a, b as c, "d" as e }` at j; calls fn(name, alias) for each; returns the index of '}'.
  template <class Fn>
  std::size_t specifiers(std::size_t j, Fn fn) {
    std::size_t close = match_[j];
    if (close == npos) return npos;
    for (std::size_t k = j + 1; k < close && !out_.error;) {
      std::string name, alias;
      if (!module_name(k, name)) {
        fail(k, "unexpected token in an import/export list");
        return npos;
      }
      alias = name;
      ++k;
      if (word(k, "as")) {
        if (!module_name(k + 1, alias)) {
          fail(k + 1, "unexpected token after 'as'");
          return npos;
        }
        k += 2;
      }
      fn(name, alias, k);
      if (punct(k, ",")) ++k;
      else if (k != close) {
        fail(k, "unexpected token in an import/export list");
        return npos;
      }
    }
    return close;
  }

  std::size_t import_statement(std::size_t i) {
    std::size_t j = i + 1;
    if (j < t_.size() && t_[j].kind == Token::string) {  // import 'x'
      request(j);
      if (word(j + 1, "with") || word(j + 1, "assert")) fail(j + 1, "import attributes are not supported");
      std::size_t e = end_of(j);
      blank(i, e);
      return e;
    }
    struct Pending {
      std::string local, imported;
      std::size_t at;
    };
    std::vector<Pending> named;
    std::string ns;
    if (is_word(j) && !word(j, "from")) {
      named.push_back({std::string(text(j)), "default", j});
      ++j;
      if (punct(j, ",")) ++j;
    } else if (word(j, "from") && word(j + 1, "from")) {  // import from from 'x'
      named.push_back({"from", "default", j});
      ++j;
    }
    if (punct(j, "*")) {
      if (!word(j + 1, "as") || !is_word(j + 2)) {
        fail(j, "expected '* as name'");
        return j;
      }
      ns = text(j + 2);
      j += 3;
    } else if (punct(j, "{")) {
      std::size_t close = specifiers(j, [&](const std::string& name, const std::string& alias, std::size_t at) {
        named.push_back({alias, name, at});
      });
      if (close == npos) return j;
      j = close + 1;
    }
    std::size_t str = from_clause(j);
    if (str == npos) {
      fail(j, "expected from '<module>' in an import declaration");
      return j;
    }
    std::size_t req = request(str);
    if (out_.error) return j;
    for (auto& p : named) {
      bind(p.at, p.local, ns_var(req) + member(p.imported), out_.requests[req].spec, p.imported);
      wanted_.push_back({out_.requests[req].spec, p.imported});
    }
    if (!ns.empty()) {
      if (bindings_.count(ns) || namespaces_.count(ns)) fail(j, "'" + ns + "' is imported twice");
      namespaces_[ns] = req;
    }
    std::size_t e = end_of(str);
    blank(i, e);
    return e;
  }

  std::size_t export_statement(std::size_t i) {
    std::size_t j = i + 1;
    if (punct(j, "*")) {  // export * from 'x' | export * as n from 'x'
      std::string as;
      if (word(j + 1, "as")) {
        if (!module_name(j + 2, as)) {
          fail(j + 2, "expected a name after 'export * as'");
          return j;
        }
        j += 2;
      }
      std::size_t str = from_clause(j + 1);
      if (str == npos) {
        fail(j, "expected from '<module>' after 'export *'");
        return j;
      }
      std::size_t req = request(str);
      if (out_.error) return j;
      if (as.empty()) stars_.push_back(out_.requests[req].spec);
      else {
        add_export(j, as);
        reexports_.push_back({as, out_.requests[req].spec, "*"});
      }
      std::size_t e = end_of(str);
      blank(i, e);
      return e;
    }
    if (punct(j, "{")) {
      std::vector<std::pair<std::string, std::string>> list;  // local, exported
      std::size_t close = specifiers(j, [&](const std::string& name, const std::string& alias, std::size_t) {
        list.push_back({name, alias});
      });
      if (close == npos) return j;
      std::size_t str = from_clause(close + 1);
      std::size_t last = close;
      if (str != npos) {
        std::size_t req = request(str);
        if (out_.error) return j;
        for (auto& [name, alias] : list) {
          add_export(j, alias);
          reexports_.push_back({alias, out_.requests[req].spec, name});
          wanted_.push_back({out_.requests[req].spec, name});
        }
        last = str;
      } else {
        for (auto& [name, alias] : list) {
          add_export(j, alias);
          locals_.push_back({alias, name});
        }
      }
      std::size_t e = end_of(last);
      blank(i, e);
      return e;
    }
    if (word(j, "default")) return export_default(i, j + 1);
    if (word(j, "var") || word(j, "let") || word(j, "const")) return export_declarators(i, j);
    std::size_t k = j;
    if (word(k, "async")) ++k;
    if (word(k, "function") || word(k, "class")) {
      ++k;
      if (punct(k, "*")) ++k;
      if (!is_word(k)) {
        fail(k, "expected a name after 'export function/class'");
        return k;
      }
      add_export(k, std::string(text(k)));
      locals_.push_back({std::string(text(k)), std::string(text(k))});
      blank(i, i);
      return i;
    }
    fail(j, "unexpected token after 'export'");
    return j;
  }

  std::size_t export_default(std::size_t i, std::size_t j) {
    add_export(i, "default");
    std::size_t k = j;
    if (word(k, "async") && word(k + 1, "function") && !newline_between(k, k + 1)) ++k;
    if (word(k, "function") || word(k, "class")) {
      std::size_t n = k + 1;
      if (punct(n, "*")) ++n;
      if (is_word(n) && !word(n, "extends")) {  // export default function f() {}: f, hoisted
        locals_.push_back({"default", std::string(text(n))});
        blank(i, j - 1);
        return j - 1;
      }
      locals_.push_back({"default", "__csgi_default"});
      blank(i, j - 1);  // `export default` goes; the declaration gets the name
      out_.edits.push_back({t_[n - 1].end, t_[n - 1].end, " __csgi_default"});
      if (word(k, "function")) default_function_ = true;
      return j - 1;
    }
    locals_.push_back({"default", "__csgi_default"});
    blank(i, j - 1, "const __csgi_default =");
    return j - 1;
  }

  std::size_t export_declarators(std::size_t i, std::size_t j) {
    blank(i, i);
    std::size_t k = j + 1;
    for (;;) {
      std::vector<std::size_t> names;
      std::size_t last = k;
      if ((punct(k, "{") || punct(k, "[")) && match_[k] != npos) {
        if (!pattern_names(k, names)) {
          fail(k, "this destructuring pattern in an export is not supported (export the names one by one)");
          return k;
        }
        last = match_[k];
      } else if (is_word(k)) {
        names.push_back(k);
      } else {
        fail(k, "expected a name in an exported declaration");
        return k;
      }
      for (auto n : names) {
        add_export(n, std::string(text(n)));
        locals_.push_back({std::string(text(n)), std::string(text(n))});
      }
      // Skip the initializer: to a ',' or ';' at the statement's depth, or the end of the statement.
      std::size_t m = last + 1;
      for (; m < t_.size(); ++m) {
        if (parent_[m] != npos) continue;
        if (punct(m, ",") || punct(m, ";")) break;
        if (m > last + 1 && newline_between(m - 1, m) && starts_statement(m - 1, m)) break;
      }
      if (!punct(m, ",")) return last;
      k = m + 1;
    }
  }

  // The names a destructuring pattern opening at `open` binds (`{ a, b: c, d = 1, ...e }`, `[f, , [g]]`).
  bool pattern_names(std::size_t open, std::vector<std::size_t>& names) const {
    std::size_t close = match_[open];
    bool object = punct(open, "{");
    for (std::size_t q = open + 1; q < close;) {
      if (punct(q, ",")) {
        ++q;
        continue;
      }
      bool rest = punct(q, "...");
      if (rest) ++q;
      std::size_t target = q;
      if (object && !rest) {
        std::size_t key_end = punct(q, "[") ? match_[q] : q;
        if (key_end == npos) return false;
        if (punct(key_end + 1, ":")) target = key_end + 2;
        else if (!is_word(q)) return false;
      }
      if ((punct(target, "{") || punct(target, "[")) && match_[target] != npos) {
        if (!pattern_names(target, names)) return false;
        q = match_[target] + 1;
      } else if (is_word(target)) {
        names.push_back(target);
        q = target + 1;
      } else {
        return false;
      }
      if (punct(q, "="))  // a default value: to the next ',' of this pattern
        while (q < close && !(punct(q, ",") && parent_[q] == open)) ++q;
      if (q < close && !punct(q, ",")) return false;
    }
    return true;
  }
  // After `prev` and a line break, whether token `m` cannot continue the expression (ASI applies).
  bool starts_statement(std::size_t prev, std::size_t m) const {
    if (!expression_end(prev)) return false;
    auto k = t_[m].kind;
    if (k == Token::punct) return punct(m, "{") || punct(m, "++") || punct(m, "--");
    if (k == Token::ident) return !(text(m) == "in" || text(m) == "instanceof" || text(m) == "of");
    return true;
  }
  bool expression_end(std::size_t p) const {
    switch (t_[p].kind) {
      case Token::ident: {
        static const std::set<std::string_view> ops{"return", "typeof", "instanceof", "in", "of", "new", "delete",
                                                    "void", "throw", "case", "do", "else", "yield", "await",
                                                    "extends", "default", "var", "let", "const"};
        return !ops.count(text(p)) || after_dot(p);
      }
      case Token::punct:
        return punct(p, ")") || punct(p, "]") || punct(p, "}") || punct(p, "++") || punct(p, "--");
      case Token::tmpl_open:
      case Token::tmpl_mid: return false;
      default: return true;
    }
  }

  // --- the references pass: imported names, import(), import.meta, top-level await ---
  bool inside_removed(std::size_t i, std::size_t& next_edit) const {
    while (next_edit < removed_.size() && removed_[next_edit].second <= t_[i].begin) ++next_edit;
    return next_edit < removed_.size() && removed_[next_edit].first <= t_[i].begin;
  }

  bool in_function(const std::vector<Level>& st) const {
    for (auto& l : st)
      if (l.function || l.arrow) return true;
    return false;
  }

  Level open_level(std::vector<Level>& st, std::size_t i) {
    Level& cur = st.back();
    Level l;
    l.open = i;
    l.params = cur.params && !cur.in_default;
    if (l.params) {
      l.pattern_decl = cur.pattern_decl;
      l.pattern_base = cur.pattern_base;
      l.pattern_params = cur.pattern_params;
    }
    std::size_t p = i == 0 ? npos : i - 1;
    auto declaring = [&] {  // `let {a, b} = …`, `const [a] = …`
      l.params = true;
      l.pattern_decl = cur.decl_word;
      l.pattern_base = st.size() - 1;
      l.pattern_params = npos;
    };
    if (t_[i].kind == Token::tmpl_open) {
      l.kind = Level::tmpl;
    } else if (punct(i, "(")) {
      l.kind = Level::paren;
      std::size_t close = match_[i];
      bool control = p != npos && is_word(p) && !after_dot(p) &&
                     (text(p) == "if" || text(p) == "while" || text(p) == "for" || text(p) == "with" ||
                      text(p) == "switch" || text(p) == "extends" || (text(p) == "await" && p > 0 && word(p - 1, "for")));
      if (close != npos && (punct(close + 1, "=>") || (punct(close + 1, "{") && !control))) {
        l.params = true;
        l.pattern_decl = {};
        l.pattern_base = npos;
        l.pattern_params = i;
      }
    } else if (punct(i, "[")) {
      l.kind = Level::bracket;
      if (cur.decl_binding) declaring();
      else if (cur.params && cur.kind == Level::object && p != npos && (punct(p, "{") || punct(p, ",")))
        l.params = false;  // a computed key of an object pattern: an expression
    } else {  // '{'
      if (cur.kind == Level::klass && p != npos && word(p, "static")) {  // a static block
        l.kind = Level::block;
        l.function = true;
      } else if (cur.class_pending) {
        l.kind = Level::klass;
        cur.class_pending = false;
      } else if (p != npos && (punct(p, "=>") || (punct(p, ")") && match_[p] != npos && paren_params_.count(match_[p])))) {
        l.kind = Level::block;
        l.function = true;
      } else if (p != npos && punct(p, ":")) {
        l.kind = colon_object_.count(p) ? Level::object : Level::block;
      } else {
        l.kind = t_[i].object ? Level::object : Level::block;
      }
      if (cur.decl_binding) declaring();
    }
    if (l.kind == Level::paren && l.params) paren_params_.insert(i);
    cur.decl_binding = false;
    return l;
  }

  void references() {
    std::sort(removed_.begin(), removed_.end());
    std::vector<Level> st(1);
    std::size_t next_edit = 0;
    for (std::size_t i = 0; i < t_.size() && !out_.error; ++i) {
      if (inside_removed(i, next_edit)) continue;
      auto k = t_[i].kind;
      Level& cur = st.back();
      if (k == Token::tmpl_open || punct(i, "(") || punct(i, "[") || punct(i, "{")) {
        Level l = open_level(st, i);
        st.push_back(l);
        continue;
      }
      if (k == Token::tmpl_close || punct(i, ")") || punct(i, "]") || punct(i, "}")) {
        if (st.size() > 1) st.pop_back();
        if (st.back().decl_binding) st.back().decl_binding = false;
        continue;
      }
      if (k == Token::tmpl_mid) continue;
      if (k == Token::punct) {
        punctuator(st, i);
        continue;
      }
      if (k != Token::ident) {
        cur.decl_binding = false;
        continue;
      }
      identifier(st, i);
    }
  }

  void punctuator(std::vector<Level>& st, std::size_t i) {
    Level& cur = st.back();
    std::string_view p = text(i);
    cur.decl_binding = false;
    if (p == "?") ++cur.ternary;
    else if (p == ":") {
      if (cur.ternary > 0) {
        --cur.ternary;
        colon_object_.insert(i);
      } else if (cur.kind == Level::object) {
        colon_object_.insert(i);
      } else {
        cur.case_label = false;
      }
    } else if (p == "=" && cur.params) {
      cur.in_default = true;
    } else if (p == ",") {
      cur.in_default = false;
      cur.arrow = false;
      if (cur.decl) cur.decl_binding = true;
    } else if (p == ";") {
      cur.arrow = false;
      cur.decl = false;
    } else if (p == "=>" && !punct(i + 1, "{")) {
      cur.arrow = true;
    }
  }

  void identifier(std::vector<Level>& st, std::size_t i) {
    Level& cur = st.back();
    std::string_view w = text(i);
    bool dot = after_dot(i);
    bool binding = cur.decl_binding;
    cur.decl_binding = false;
    if (dot) return;
    if (w.starts_with("__csgi")) return fail(i, "names starting with __csgi are reserved by the bundler");
    if (w == "var" || w == "let" || w == "const") {
      cur.decl = true;
      cur.decl_word = w;
      cur.decl_binding = true;
      return;
    }
    if ((w == "in" || w == "of") && cur.decl) cur.decl = false;
    if (w == "case") cur.case_label = true;
    if (w == "class" && (is_word(i + 1) || punct(i + 1, "{"))) cur.class_pending = true;  // not a key `class:`
    if (w == "import" && !member_name(st, i)) return dynamic_import(i);
    if (w == "await" && !member_name(st, i) && !in_function(st))
      return fail(i, "top-level await is not supported (use it inside an async function)");
    // A namespace import is a const binding of its own: JavaScript resolves it.
    if (bindings_.count(std::string(w)) == 0 || (!collecting_ && shadowed(w, i))) return;
    std::size_t p = i == 0 ? npos : i - 1;
    auto prev_is = [&](std::initializer_list<std::string_view> ws) {
      if (p == npos) return false;
      for (auto x : ws)
        if (text(p) == x) return true;
      return false;
    };
    const std::string redeclared = "'" + std::string(w) +
                                   "' is imported and also declared here in a way the bundler cannot scope "
                                   "(see docs/bundler.md; rename one of them)";
    if (member_name(st, i)) return;
    if (binding || (cur.params && !cur.in_default) || punct(i + 1, "=>")) {
      if (!collecting_ || !declare(st, i, binding)) return fail(i, redeclared);
      return;
    }
    if (prev_is({"function", "class"}) || (p != npos && punct(p, "*") && p > 0 && word(p - 1, "function"))) {
      if (!collecting_ || !declare_named(st, i)) return fail(i, redeclared);
      return;
    }
    if (prev_is({"break", "continue"})) return fail(i, redeclared);
    if (punct(i + 1, ":") && cur.kind != Level::object && cur.ternary == 0 && !cur.case_label)
      return fail(i, redeclared);
    if (collecting_) return;
    const std::string& expr = bindings_[std::string(w)].expr;
    if (cur.kind == Level::object && p != npos && (punct(p, "{") || punct(p, ",")) &&
        (punct(i + 1, ",") || punct(i + 1, "}") || punct(i + 1, "="))) {
      out_.edits.push_back({t_[i].begin, t_[i].end, std::string(w) + ": " + expr});  // shorthand
      return;
    }
    bool call = punct(i + 1, "(") || punct(i + 1, "?.") ||
                (i + 1 < t_.size() && (t_[i + 1].kind == Token::tmpl || t_[i + 1].kind == Token::tmpl_open));
    out_.edits.push_back({t_[i].begin, t_[i].end, call ? "(0, " + expr + ")" : expr});
  }

  bool shadowed(std::string_view w, std::size_t i) const {
    for (auto& sh : shadows_)
      if (sh.name == w && i >= sh.from && i <= sh.to) return true;
    return false;
  }

  // The end of the braced body of the function whose parameter list opens at `open` (npos: none).
  std::size_t body_end(std::size_t open) const {
    std::size_t close = match_[open];
    if (close == npos) return npos;
    if (punct(close + 1, "=>") && !punct(close + 2, "{")) return concise_end(close + 2);
    std::size_t b = punct(close + 1, "{") ? close + 1 : punct(close + 1, "=>") && punct(close + 2, "{") ? close + 2 : npos;
    return b == npos ? npos : match_[b];
  }

  // The last token of a concise arrow body starting at token `start`: an assignment expression, so it
  // ends before a ',' or ';' of its own bracket, before the bracket's close, or where a line break
  // ends the statement (an expression's end, then a name or literal that cannot continue it).
  // With `statement`, the end of an expression statement instead (its ';' included, a ',' inside it).
  std::size_t concise_end(std::size_t start, bool statement = false) const {
    for (std::size_t j = start; j < t_.size(); ++j) {
      bool closing = t_[j].kind == Token::tmpl_mid || t_[j].kind == Token::tmpl_close ||
                     ((punct(j, ")") || punct(j, "]") || punct(j, "}")));
      if (statement && punct(j, ";")) return j;
      if (j > start && (closing || (!statement && punct(j, ",")) || punct(j, ";"))) return j - 1;
      if (j > start && newline_between(j - 1, j) && expression_end(j - 1) && !continues(j)) return j - 1;
      if (match_[j] != npos && match_[j] > j) j = match_[j];
      if (j == npos || j >= t_.size()) return npos;
    }
    return t_.empty() ? npos : t_.size() - 1;
  }
  bool continues(std::size_t j) const {  // whether token j can go on with the expression before it
    switch (t_[j].kind) {
      case Token::ident: return text(j) == "in" || text(j) == "instanceof";
      case Token::string:
      case Token::number:
      case Token::priv: return false;
      case Token::punct: return !(punct(j, "++") || punct(j, "--") || punct(j, "{"));
      default: return true;  // a template (tagged), a regex (taken as '/'), …
    }
  }

  // The scope of a `var`/`let`/`const` declared at level `base` of the stack: the function body for
  // `var`, the block for `let`/`const` (or a `for (…) {…}`); false where it is not exact.
  bool decl_scope(const std::vector<Level>& st, std::size_t base, std::string_view word, std::size_t& from,
                  std::size_t& to) const {
    const Level& d = st[base];
    if (word == "var") {
      for (std::size_t k = base + 1; k-- > 0;)
        if (st[k].function && st[k].kind == Level::block) {
          from = st[k].open;
          to = match_[st[k].open];
          return to != npos;
        }
      return false;
    }
    if (d.kind == Level::block) {
      from = d.open;
      to = match_[d.open];
    } else if (d.kind == Level::paren && d.open > 0 && word_at_for(d.open) && match_[d.open] != npos) {
      std::size_t b = match_[d.open] + 1;
      from = d.open;
      to = statement_end(b);
    }
    return from != npos && to != npos;
  }
  // The last token of the statement starting at token b: a block, a `for`/`while`/`with`/`if … else`
  // over such statements, or a simple statement (see simple_statement); npos for any other.
  std::size_t statement_end(std::size_t b, int depth = 0) const {
    if (b >= t_.size() || depth > 64) return npos;
    if (punct(b, "{")) return match_[b];
    bool loop = word(b, "for") || word(b, "while") || word(b, "with");
    if ((loop || word(b, "if")) && !after_dot(b)) {
      std::size_t open = punct(b + 1, "(") ? b + 1 : word(b + 1, "await") && punct(b + 2, "(") ? b + 2 : npos;
      if (open == npos || match_[open] == npos) return npos;
      std::size_t end = statement_end(match_[open] + 1, depth + 1);
      if (end != npos && !loop && word(end + 1, "else")) end = statement_end(end + 2, depth + 1);
      return end;
    }
    return simple_statement(b) ? concise_end(b, true) : npos;
  }
  // A statement that ends at its own ';' (or line break): not a compound or labelled statement.
  bool simple_statement(std::size_t b) const {
    static const std::set<std::string_view> compound{"if", "for", "while", "do", "try", "switch", "with",
                                                     "function", "class", "let", "const", "var", "async"};
    if (b >= t_.size() || punct(b, "{") || punct(b, ";")) return false;
    return !(is_word(b) && (compound.count(text(b)) || punct(b + 1, ":")));
  }
  bool word_at_for(std::size_t open) const {
    return word(open - 1, "for") || (open > 1 && word(open - 1, "await") && word(open - 2, "for"));
  }

  // The name of a function or class at token i: a declaration in a block is scoped to that block (ES
  // modules are strict: block-level functions are block-scoped); a function expression's name to its
  // own parameters and body. The top level (a redeclared import), class expressions and a declaration
  // whose statement start is not certain are refused.
  bool declare_named(const std::vector<Level>& st, std::size_t i) {
    const Level& cur = st.back();
    std::size_t k = punct(i - 1, "*") ? i - 2 : i - 1;  // `function` or `class`
    std::size_t q = k == 0 ? npos : k - 1;
    if (q != npos && word(k, "function") && word(q, "async") && !newline_between(q, k)) q = q == 0 ? npos : q - 1;
    bool statement = q == npos || punct(q, "{") || punct(q, "}") || punct(q, ";") ||
                     (punct(q, ":") && !colon_object_.count(q));  // after `case …:` or a label
    std::size_t from = npos, to = npos;
    if (statement && cur.kind == Level::block && st.size() > 1) {
      from = cur.open;
      to = match_[cur.open];
    } else if (!statement && word(k, "function") && q != npos &&
               ((t_[q].kind == Token::punct && !punct(q, ")") && !punct(q, "]") && !punct(q, "++") &&
                 !punct(q, "--") && (!punct(q, ":") || colon_object_.count(q))) ||
                word(q, "return") || word(q, "typeof") || word(q, "void") || word(q, "new")) &&
               punct(i + 1, "(")) {
      from = i;
      to = body_end(i + 1);
    }
    if (from == npos || to == npos) return false;
    shadows_.push_back({std::string(text(i)), from, to});
    return true;
  }

  // Records the scope of a local declaration of an imported name at token i: a simple parameter (of a
  // function, method, catch or arrow with a braced body), a `var` (its function body), a `let`/`const`
  // (its block, or a `for (…) {…}`). False for any other form (patterns, default values, concise arrows).
  bool declare(const std::vector<Level>& st, std::size_t i, bool binding) {
    const Level& cur = st.back();
    std::size_t from = npos, to = npos;
    if (binding) {
      decl_scope(st, st.size() - 1, cur.decl_word, from, to);
    } else if (cur.params && !cur.in_default && !cur.pattern_decl.empty() && cur.pattern_base != npos) {
      decl_scope(st, cur.pattern_base, cur.pattern_decl, from, to);
    } else if (cur.params && !cur.in_default && cur.pattern_params != npos) {
      from = cur.pattern_params;
      to = body_end(cur.pattern_params);
    } else if (punct(i + 1, "=>")) {
      from = i;
      to = punct(i + 2, "{") ? match_[i + 2] : concise_end(i + 2);
    }
    if (from == npos || to == npos) return false;
    shadows_.push_back({std::string(text(i)), from, to});
    return true;
  }

  // A property name in an object literal or a class body (a key, a method, a field), not a reference.
  bool member_name(const std::vector<Level>& st, std::size_t i) const {
    const Level& cur = st.back();
    std::size_t p = i == 0 ? npos : i - 1;
    auto modifier = [&](std::size_t q) {
      return q != npos && is_word(q) &&
             (text(q) == "get" || text(q) == "set" || text(q) == "async" || text(q) == "static" ||
              text(q) == "accessor");
    };
    if (cur.kind == Level::object) {
      std::size_t q = p;
      if (q != npos && (modifier(q) || punct(q, "*"))) q = q == 0 ? npos : q - 1;
      // A method is `name(…) {`: a call `x()` in a block taken for an object literal stays a reference.
      bool method = punct(i + 1, "(") && match_[i + 1] != npos && punct(match_[i + 1] + 1, "{");
      if (q != npos && (punct(q, "{") || punct(q, ",")) && (punct(i + 1, ":") || method)) return true;
      return false;
    }
    if (cur.kind == Level::klass) {
      if (punct(i + 1, "(")) return true;
      if (p == npos || punct(p, "{") || punct(p, ";") || punct(p, "}") || punct(p, "*") || modifier(p)) return true;
      return newline_between(p, i) && expression_end(p);
    }
    return false;
  }

  void dynamic_import(std::size_t i) {
    if (punct(i + 1, "(")) {
      out_.edits.push_back({t_[i].begin, t_[i].end, "__csgi.import"});
    } else if (punct(i + 1, ".") && word(i + 2, "meta")) {
      auto gone = s_.substr(t_[i].begin, t_[i + 2].end - t_[i].begin);  // `import\n.meta` keeps its line
      out_.edits.push_back({t_[i].begin, t_[i + 2].end,
                            "__csgi.meta" + std::string(std::size_t(std::count(gone.begin(), gone.end(), '\n')), '\n')});
    } else if (!punct(i + 1, ":")) {  // `import:` is an object key
      fail(i, "'import' is only allowed as a top-level declaration, import(…) or import.meta");
    }
  }

  // --- the prefix and the loader's metadata ---
  void finish() {
    std::sort(out_.edits.begin(), out_.edits.end(),
              [](const EsmEdit& a, const EsmEdit& b) { return a.begin < b.begin; });
    std::string& pre = out_.prefix;
    pre = "'use strict';__csgi.e({";
    bool first = true;
    for (auto& [name, local] : locals_) {
      if (!first) pre += ',';
      first = false;
      auto b = bindings_.find(local);
      std::string expr = b != bindings_.end() ? b->second.expr : local;
      auto n = namespaces_.find(local);
      if (n != namespaces_.end()) expr = ns_var(n->second);
      pre += nlohmann::json(name).dump() + ":()=>" + expr;
    }
    pre += "});";
    if (default_function_) pre += "Object.defineProperty(__csgi_default,'name',{value:'default'});";
    for (std::size_t r = 0; r < out_.requests.size(); ++r)
      pre += (r ? "," : "const ") + ns_var(r) + "=__csgi.ns(" + std::to_string(r) + ")";
    if (!out_.requests.empty()) pre += ';';
    for (auto& [name, req] : namespaces_) pre += "const " + name + "=" + ns_var(req) + ";";
    pre += "yield;";
    out_.meta = meta_json();
    for (auto& [name, local] : locals_) {  // an export of an imported binding passes that binding on
      auto b = bindings_.find(local);
      auto n = namespaces_.find(local);
      if (b != bindings_.end() && !b->second.spec.empty()) out_.reexports.push_back({name, b->second.spec, b->second.imported});
      else if (n != namespaces_.end()) out_.reexports.push_back({name, out_.requests[n->second].spec, "*"});
      else {
        out_.local_names.push_back(name);
        out_.local_exports.push_back({name, local});
      }
    }
    for (auto& [local, b] : bindings_)
      if (!b.spec.empty()) out_.import_bindings.push_back({local, std::uint32_t(request_index(b.spec)), b.imported});
    for (auto& [local, req] : namespaces_) out_.import_bindings.push_back({local, std::uint32_t(req), "*"});
    for (auto& r : reexports_) {
      out_.reexports.push_back({r.name, r.spec, r.imported});
      if (r.imported == "*") out_.whole.push_back(r.spec);
    }
    out_.stars = stars_;
    out_.whole.insert(out_.whole.end(), stars_.begin(), stars_.end());
    for (auto& [name, req] : namespaces_) out_.whole.push_back(out_.requests[req].spec);
    out_.imported = wanted_;
  }

  std::size_t request_index(const std::string& spec) const {
    auto it = std::find_if(out_.requests.begin(), out_.requests.end(), [&](const Dependency& d) { return d.spec == spec; });
    return std::size_t(it - out_.requests.begin());
  }

  // The loader's table but its link checks (the bundler adds those: Bundler builds); a module it
  // imports is named by its index in `requests` (its `__csgi.ns(k)`).
  std::string meta_json() const {
    auto index = [&](const std::string& spec) {
      auto it = std::find_if(out_.requests.begin(), out_.requests.end(), [&](const Dependency& d) { return d.spec == spec; });
      return std::size_t(it - out_.requests.begin());
    };
    nlohmann::ordered_json meta;
    auto& x = meta["x"] = nlohmann::json::array();
    for (auto& l : locals_) x.push_back(l.first);
    auto& re = meta["r"] = nlohmann::json::array();
    for (auto& r : reexports_) re.push_back({r.name, index(r.spec), r.imported});
    auto& s = meta["s"] = nlohmann::json::array();
    for (auto& spec : stars_) s.push_back(index(spec));
    return meta.dump();
  }

  std::string_view s_;
  const std::vector<Token>& t_;
  std::vector<std::size_t> match_, parent_;
  EsmModule out_;
  std::map<std::string, Binding> bindings_;
  std::map<std::string, std::size_t> namespaces_;
  std::set<std::string> export_names_;
  std::vector<std::pair<std::string, std::string>> locals_;  // exported name, local expression
  std::vector<ReExport> reexports_;
  std::vector<std::string> stars_;
  std::vector<std::pair<std::string, std::string>> wanted_;  // (specifier, name) each import names
  std::vector<std::pair<std::uint32_t, std::uint32_t>> removed_;
  std::set<std::size_t> paren_params_, colon_object_;
  bool default_function_ = false;
  struct Shadow {
    std::string name;
    std::size_t from, to;  // token range where the name is a local
  };
  std::vector<Shadow> shadows_;
  bool collecting_ = true;
};

}  // namespace

EsmModule transform_esm(std::string_view source, const std::vector<Token>& tokens) {
  return Transform(source, tokens).run();
}

}  // namespace csgi::mw::bundler
