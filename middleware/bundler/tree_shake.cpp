#include "csgi/middleware/bundler/detail/tree_shake.hpp"

#include <algorithm>
#include <set>
#include <unordered_set>

namespace csgi::mw::bundler {

namespace {

constexpr std::size_t npos = ~std::size_t{0};

const std::unordered_set<std::string_view>& known_globals() {
  static const std::unordered_set<std::string_view> names = {"Object",
                                                             "Array",
                                                             "Symbol",
                                                             "Math",
                                                             "Number",
                                                             "String",
                                                             "Boolean",
                                                             "JSON",
                                                             "Date",
                                                             "RegExp",
                                                             "Map",
                                                             "Set",
                                                             "WeakMap",
                                                             "WeakSet",
                                                             "WeakRef",
                                                             "Promise",
                                                             "Error",
                                                             "TypeError",
                                                             "RangeError",
                                                             "SyntaxError",
                                                             "ReferenceError",
                                                             "Float32Array",
                                                             "Float64Array",
                                                             "Int8Array",
                                                             "Int16Array",
                                                             "Int32Array",
                                                             "Uint8Array",
                                                             "Uint8ClampedArray",
                                                             "Uint16Array",
                                                             "Uint32Array",
                                                             "BigInt64Array",
                                                             "BigUint64Array",
                                                             "ArrayBuffer",
                                                             "DataView",
                                                             "Infinity",
                                                             "NaN",
                                                             "undefined",
                                                             "globalThis",
                                                             "parseInt",
                                                             "parseFloat",
                                                             "isNaN",
                                                             "isFinite",
                                                             "Reflect",
                                                             "Proxy",
                                                             "BigInt",
                                                             "encodeURIComponent",
                                                             "decodeURIComponent",
                                                             "encodeURI",
                                                             "decodeURI",
                                                             "console",
                                                             "Function",
                                                             "Intl"};
  return names;
}

// Calls and constructions known to have no effect but their result (their arguments still count).
bool known_pure_call(std::string_view callee) {
  static const std::unordered_set<std::string_view> calls = {"Symbol", "Symbol.for", "Object.freeze", "Object.create",
                                                             "Array.isArray"};
  return calls.count(callee) > 0;
}
bool known_pure_new(std::string_view ctor) {
  static const std::unordered_set<std::string_view> ctors = {
      "Map",         "Set",         "WeakMap",    "WeakSet",    "Float32Array",      "Float64Array",
      "Int8Array",   "Int16Array",  "Int32Array", "Uint8Array", "Uint8ClampedArray", "Uint16Array",
      "Uint32Array", "ArrayBuffer", "Object",     "Array"};
  return ctors.count(ctor) > 0;
}

// Words that cannot end an expression: a line break after one is no statement boundary.
bool continues_expression(std::string_view w) {
  static const std::unordered_set<std::string_view> words = {
      "return", "typeof", "new",     "delete",  "void",     "in",     "of",    "instanceof", "else",
      "do",     "case",   "default", "extends", "yield",    "await",  "throw", "export",     "import",
      "const",  "let",    "var",     "async",   "function", "class",  "if",    "for",        "while",
      "with",   "switch", "try",     "catch",   "finally",  "static", "get",   "set"};
  return words.count(w) > 0;
}

class Shaker {
 public:
  Shaker(std::string_view s, const std::vector<Token>& t, const EsmModule& esm, const std::vector<DeadRange>& dead)
      : s_(s), t_(t), esm_(esm) {
    for (const auto& d : dead) dead_.push_back({d.begin, d.end});
  }

  std::optional<ShakeTable> run() {
    if (!match()) return std::nullopt;
    if (!dead_.empty()) {
      dead_tok_.assign(t_.size(), false);
      for (const auto& [b, e] : dead_) {
        auto it =
            std::lower_bound(t_.begin(), t_.end(), b, [](const Token& t, std::uint32_t at) { return t.begin < at; });
        for (; it != t_.end() && it->begin < e; ++it) dead_tok_[std::size_t(it - t_.begin())] = true;
      }
    }
    for (const auto& b : esm_.import_bindings) imports_[b.local] = &b;
    for (std::size_t i = 0; i < t_.size(); ++i)
      if (t_[i].kind == Token::ident && text(i) == "eval") return std::nullopt;
    judge_ = false;
    split();  // once for the names every declaration binds (references to them have no effect) …
    collect_declared();
    find_reassigned();
    statements_.clear();
    judge_ = true;
    split();  // … and again to judge the declarations
    // A name declared by two statements (var twice, or a unit and the rest) is not shaken; a `var` in
    // a nested statement binds at the top level too.
    std::unordered_map<std::string, int> count;
    for (const auto& st : statements_)
      for (const auto& n : st.names) ++count[n];
    for (std::size_t i = 0; i + 1 < t_.size(); ++i)
      if (depth_[i] > 0 && word(i, "var") && t_[i + 1].kind == Token::ident) ++count[std::string(text(i + 1))];
    ShakeTable out;
    std::vector<std::size_t> unit_of_statement(statements_.size(), 0);
    for (std::size_t k = 0; k < statements_.size(); ++k) {
      auto& st = statements_[k];
      if (!st.droppable || st.names.empty()) continue;
      if (std::any_of(st.names.begin(), st.names.end(), [&](const std::string& n) { return count[n] > 1; })) continue;
      std::string_view range = s_.substr(st.unit.begin, st.unit.end - st.unit.begin);
      if (has_odd_line_break(range)) continue;
      out.units.push_back(st.unit);
      unit_of_statement[k] = out.units.size();
      for (const auto& n : st.names) out.unit_of[n] = std::uint32_t(out.units.size());
    }
    if (out.units.empty()) return std::nullopt;
    out.uses.resize(out.units.size() + 1);
    out.imports.resize(out.units.size() + 1);
    // Which unit each token belongs to (0: the rest), and the tokens that are no references at all.
    std::vector<std::uint32_t> owner(t_.size(), 0);
    for (std::size_t k = 0; k < statements_.size(); ++k) {
      const auto& st = statements_[k];
      for (std::size_t i = st.first; i <= st.last && i < t_.size(); ++i) {
        owner[i] = std::uint32_t(unit_of_statement[k]);
        if (st.no_references) owner[i] = ~std::uint32_t{0};
      }
    }
    for (std::size_t i = 0; i < t_.size(); ++i) {
      if (owner[i] == ~std::uint32_t{0} || t_[i].kind != Token::ident || dead(i) || !reference(i)) continue;
      std::uint32_t u = owner[i];
      std::string name(text(i));
      if (auto it = out.unit_of.find(name); it != out.unit_of.end()) {
        if (it->second != u) out.uses[u].push_back(it->second);
        continue;
      }
      auto b = imports_.find(name);
      if (b == imports_.end()) continue;
      std::string imported = b->second->imported;
      if (imported == "*" && punct(i + 1, ".") && i + 2 < t_.size() && t_[i + 2].kind == Token::ident)
        imported = text(i + 2);  // NS.name reads one export
      out.imports[u].push_back({b->second->request, std::move(imported)});
    }
    for (auto& v : out.uses) {
      std::sort(v.begin(), v.end());
      v.erase(std::unique(v.begin(), v.end()), v.end());
    }
    for (auto& v : out.imports) {
      std::sort(v.begin(), v.end());
      v.erase(std::unique(v.begin(), v.end()), v.end());
    }
    return out;
  }

 private:
  struct Statement {
    std::size_t first = 0, last = 0;  // token indexes
    std::vector<std::string> names;
    bool droppable = false;
    bool no_references = false;  // import declarations, export lists: bindings named, not read
    ShakeUnit unit;
  };

  std::string_view text(std::size_t i) const { return s_.substr(t_[i].begin, t_[i].end - t_[i].begin); }
  bool punct(std::size_t i, std::string_view p) const {
    return i < t_.size() && t_[i].kind == Token::punct && text(i) == p;
  }
  bool word(std::size_t i, std::string_view w) const {
    return i < t_.size() && t_[i].kind == Token::ident && text(i) == w;
  }
  bool newline_between(std::size_t a, std::size_t b) const {
    return s_.substr(t_[a].end, t_[b].begin - t_[a].end).find('\n') != std::string_view::npos;
  }
  static bool has_odd_line_break(std::string_view r) {
    for (std::size_t i = 0; i < r.size(); ++i) {
      if (r[i] == '\r' && (i + 1 == r.size() || r[i + 1] != '\n')) return true;
      if (r.substr(i).starts_with("\xE2\x80\xA8") || r.substr(i).starts_with("\xE2\x80\xA9")) return true;
    }
    return false;
  }
  bool dead(std::size_t i) const { return !dead_tok_.empty() && dead_tok_[i]; }
  std::size_t dead_end(std::size_t i) const {  // the last token inside the dead range holding token i
    std::uint32_t end = 0;
    for (const auto& [b, e] : dead_)
      if (t_[i].begin >= b && t_[i].begin < e) end = std::max(end, e);
    std::size_t j = i;
    while (j + 1 < t_.size() && t_[j + 1].begin < end) ++j;
    return j;
  }
  bool pure_annotation(std::size_t i) const {  // a /* @__PURE__ */ right before token i
    std::uint32_t from = i ? t_[i - 1].end : 0;
    std::string_view gap = s_.substr(from, t_[i].begin - from);
    return gap.find("@__PURE__") != std::string_view::npos || gap.find("#__PURE__") != std::string_view::npos;
  }

  // The names the module assigns to (or updates) anywhere, but where a top-level declarator binds
  // them: a unit reading one when it is made would read another value if it runs later.
  void find_reassigned() {
    auto assigns = [&](std::size_t i) {
      if (i >= t_.size() || t_[i].kind != Token::punct) return false;
      std::string_view p = text(i);
      if (p == "++" || p == "--") return true;
      if (p.empty() || p.back() != '=' || p == "==" || p == "===" || p == "!=" || p == "!==" || p == "<=" || p == ">=")
        return false;
      return true;
    };
    for (std::size_t i = 0; i < t_.size(); ++i) {
      const Token& t = t_[i];
      if (t.kind == Token::ident) {
        if (i > 0 && (punct(i - 1, ".") || punct(i - 1, "?."))) continue;
        bool declarator =
            declarators_.count(i) || (i > 0 && (word(i - 1, "var") || word(i - 1, "let") || word(i - 1, "const")));
        bool write = assigns(i + 1) || (i > 0 && (punct(i - 1, "++") || punct(i - 1, "--"))) || word(i + 1, "of") ||
                     word(i + 1, "in");
        if (write && !(declarator && punct(i + 1, "="))) reassigned_.insert(std::string(text(i)));
        continue;
      }
      // A destructuring assignment `[a, b] = …` / `({ a } = …)`: every name inside may be written.
      if ((punct(i, "]") || punct(i, "}")) && punct(i + 1, "=") && match_[i] != npos) {
        std::size_t open = match_[i];
        bool declaration = open > 0 && (word(open - 1, "var") || word(open - 1, "let") || word(open - 1, "const"));
        for (std::size_t j = open + 1; j < i && !declaration; ++j)
          if (t_[j].kind == Token::ident) reassigned_.insert(std::string(text(j)));
      }
    }
  }

  // Brackets: match_[open] = close and back; templates' `${ … }` pair up as brackets too.
  bool match() {
    match_.assign(t_.size(), npos);
    parent_.assign(t_.size(), npos);
    depth_.assign(t_.size(), 0);
    std::vector<std::size_t> open;
    for (std::size_t i = 0; i < t_.size(); ++i) {
      const Token& t = t_[i];
      bool closes = (t.kind == Token::punct && (text(i) == ")" || text(i) == "]" || text(i) == "}")) ||
                    t.kind == Token::tmpl_mid || t.kind == Token::tmpl_close;
      if (closes) {
        if (open.empty()) return false;
        match_[open.back()] = i;
        match_[i] = open.back();
        open.pop_back();
      }
      depth_[i] = std::uint32_t(open.size());
      if (!open.empty()) parent_[i] = open.back();
      bool opens = (t.kind == Token::punct && (text(i) == "(" || text(i) == "[" || text(i) == "{")) ||
                   t.kind == Token::tmpl_open || t.kind == Token::tmpl_mid;
      if (opens) open.push_back(i);
    }
    return open.empty();
  }

  // Can token i end an expression (so that a line break after it may end the statement)?
  bool ends_expression(std::size_t i) const {
    const Token& t = t_[i];
    switch (t.kind) {
      case Token::ident:
        return !continues_expression(text(i));
      case Token::punct: {
        std::string_view p = text(i);
        if (p == "]" || p == "}" || p == "++" || p == "--") return true;
        if (p != ")") return false;
        std::size_t o = match_[i];  // the head of if/for/while/with: the statement goes on
        return !(o != npos && o > 0 &&
                 (word(o - 1, "if") || word(o - 1, "for") || word(o - 1, "while") || word(o - 1, "with")));
      }
      default:
        return true;
    }
  }
  // Does a new top-level statement start at token i (at depth 0)?
  bool statement_start(std::size_t i) const {
    if (i == 0) return true;
    if (punct(i - 1, ";") || punct(i - 1, "}")) return true;
    return newline_between(i - 1, i) && ends_expression(i - 1);
  }
  // Does the line break before token i end a declaration's last declarator (automatic semicolon)?
  bool asi_before(std::size_t i) const {
    if (!newline_between(i - 1, i) || !ends_expression(i - 1)) return false;
    const Token& t = t_[i];
    if (t.kind == Token::ident) return !(text(i) == "in" || text(i) == "of" || text(i) == "instanceof");
    if (t.kind == Token::string || t.kind == Token::number || t.kind == Token::priv) return true;
    return punct(i, "{") || punct(i, "++") || punct(i, "--");
  }

  // Splits the top level into statements; only declarations get exact ranges.
  void split() {
    line_ = 1;
    line_at_ = 0;
    std::size_t i = 0;
    while (i < t_.size()) {
      if (depth_[i] != 0) {
        ++i;
        continue;
      }
      Statement st;
      st.first = i;
      std::size_t last = declaration(i, st);
      if (last == npos) {  // some other statement: up to the next declaration's start
        std::size_t j = i + 1;
        while (j < t_.size() && !(depth_[j] == 0 && starts_declaration(j) && statement_start(j))) ++j;
        st.last = j - 1;
        st.droppable = false;
        statements_.push_back(std::move(st));
        i = j;
        continue;
      }
      st.last = last;
      st.unit.begin = t_[st.first].begin;
      st.unit.end = t_[last].end;
      line_ += std::uint32_t(std::count(s_.begin() + line_at_, s_.begin() + st.unit.begin, '\n'));
      line_at_ = st.unit.begin;
      st.unit.line = line_;
      st.unit.names = st.names;
      statements_.push_back(std::move(st));
      i = last + 1;
    }
  }
  bool starts_declaration(std::size_t i) const {
    if (t_[i].kind != Token::ident) return false;
    std::string_view w = text(i);
    if (w == "async") return word(i + 1, "function") && !newline_between(i, i + 1);
    if (w == "import") return !(punct(i + 1, "(") || punct(i + 1, "."));
    return w == "function" || w == "class" || w == "const" || w == "let" || w == "var" || w == "export";
  }

  // A declaration, import or export at token i: fills `st`, returns its last token; npos otherwise.
  std::size_t declaration(std::size_t i, Statement& st) {
    if (!starts_declaration(i)) return npos;
    std::string_view w = text(i);
    if (w == "import") {  // bindings, no references: up to its specifier string (and `;`)
      std::size_t j = i + 1;
      while (j < t_.size() && !(depth_[j] == 0 && (t_[j].kind == Token::string || punct(j, ";")))) ++j;
      if (j >= t_.size() || t_[j].kind != Token::string) return npos;
      if (punct(j + 1, ";")) ++j;
      st.no_references = true;
      return j;
    }
    if (w == "export") {
      std::size_t j = i + 1;
      if (punct(j, "*") || punct(j, "{")) {  // export lists and re-exports: no references
        std::size_t k = punct(j, "{") ? match_[j] : j;
        if (k == npos) return npos;
        if (word(k + 1, "from") || (punct(j, "*") && !punct(k + 1, ";"))) {
          while (k < t_.size() && !(depth_[k] == 0 && (t_[k].kind == Token::string || punct(k, ";")))) ++k;
          if (k >= t_.size() || t_[k].kind != Token::string) return npos;
        }
        if (punct(k + 1, ";")) ++k;
        st.no_references = true;
        return k;
      }
      if (word(j, "default")) return export_default(i, j + 1, st);
      return declaration_body(j, st);
    }
    return declaration_body(i, st);
  }

  std::size_t export_default(std::size_t i, std::size_t j, Statement& st) {
    std::size_t k = j;
    if (word(k, "async") && word(k + 1, "function") && !newline_between(k, k + 1)) ++k;
    if (word(k, "function") || word(k, "class")) {
      std::size_t n = k + 1;
      if (punct(n, "*")) ++n;
      bool named = n < t_.size() && t_[n].kind == Token::ident && !word(n, "extends");
      if (word(k, "function") && !named) return npos;  // its name is set by the module's prefix: kept
      std::size_t last = word(k, "function") ? function_end(k) : class_end(k);
      if (last == npos) return npos;
      st.names.push_back(named ? std::string(text(n)) : "__csgi_default");
      st.unit.kind = word(k, "function") ? ShakeUnit::function : ShakeUnit::klass;
      st.droppable = word(k, "function") || class_pure(k, last);
      return last;
    }
    // export default <expression>: `const __csgi_default = <expression>` in the bundle
    std::size_t last = expression_end(j);
    if (last == npos || last < j) return npos;
    st.names.push_back("__csgi_default");
    st.unit.kind = ShakeUnit::declarators;
    std::size_t e = punct(last, ";") ? last - 1 : last;
    st.droppable = pure(j, e + 1);
    (void)i;
    return last;
  }

  std::size_t declaration_body(std::size_t i, Statement& st) {
    std::size_t k = i;
    if (word(k, "async")) ++k;
    if (word(k, "function")) {
      std::size_t n = k + 1;
      if (punct(n, "*")) ++n;
      if (n >= t_.size() || t_[n].kind != Token::ident) return npos;
      std::size_t last = function_end(k);
      if (last == npos) return npos;
      st.names.push_back(std::string(text(n)));
      st.unit.kind = ShakeUnit::function;
      st.droppable = true;
      return last;
    }
    if (word(k, "class")) {
      if (k + 1 >= t_.size() || t_[k + 1].kind != Token::ident || word(k + 1, "extends")) return npos;
      std::size_t last = class_end(k);
      if (last == npos) return npos;
      st.names.push_back(std::string(text(k + 1)));
      st.unit.kind = ShakeUnit::klass;
      st.droppable = class_pure(k, last);
      return last;
    }
    if (!(word(k, "var") || word(k, "let") || word(k, "const"))) return npos;
    st.unit.kind = ShakeUnit::declarators;
    st.droppable = true;
    std::size_t j = k + 1;
    for (;;) {
      if (j >= t_.size()) return npos;
      if (t_[j].kind == Token::ident) {
        st.names.push_back(std::string(text(j)));
        declarators_.insert(j);
        ++j;
      } else if ((punct(j, "{") || punct(j, "[")) && match_[j] != npos) {
        st.droppable = false;  // a pattern: its names are bound, but the statement stays
        pattern_names(j, st.names);
        j = match_[j] + 1;
      } else {
        return npos;
      }
      if (punct(j, "=")) {
        std::size_t init = j + 1, e = init;
        while (e < t_.size() && !(depth_[e] == 0 && (punct(e, ",") || punct(e, ";") || (e > init && asi_before(e)))))
          ++e;
        if (e == init) return npos;
        if (!pure(init, e)) st.droppable = false;
        j = e;
      }
      if (punct(j, ",")) {
        ++j;
        continue;
      }
      if (punct(j, ";")) return j;
      if (j >= t_.size() || (j > k && asi_before(j))) return j - 1;
      return npos;
    }
  }

  void pattern_names(std::size_t open, std::vector<std::string>& names) const {
    for (std::size_t i = open + 1; i < match_[open]; ++i) {  // over-approximates: every identifier
      if (t_[i].kind == Token::ident && !punct(i - 1, ".")) names.push_back(std::string(text(i)));
    }
  }

  // The last token of `function [*] [name] (…) {…}` starting at the `function` token.
  std::size_t function_end(std::size_t f) const {
    std::size_t j = f + 1;
    if (punct(j, "*")) ++j;
    if (j < t_.size() && t_[j].kind == Token::ident) ++j;
    if (!punct(j, "(") || match_[j] == npos || !punct(match_[j] + 1, "{")) return npos;
    return match_[match_[j] + 1];
  }
  // The last token of `class [name] [extends …] {…}`: the first `{` at the class's depth after the head.
  std::size_t class_end(std::size_t c) const {
    std::size_t j = c + 1;
    while (j < t_.size() && !(depth_[j] == depth_[c] && punct(j, "{"))) {
      if (depth_[j] < depth_[c]) return npos;
      if (depth_[j] == depth_[c] && (punct(j, ";") || (j != c + 1 && (word(j, "class") || word(j, "function")))))
        return npos;
      ++j;
    }
    if (j >= t_.size()) return npos;
    return match_[j];
  }
  // The last token of an expression statement starting at j (its `;`, or the token before an
  // automatic semicolon).
  std::size_t expression_end(std::size_t j) const {
    std::size_t e = j;
    while (e < t_.size() && !(depth_[e] == depth_[j] && (punct(e, ";") || (e > j && asi_before(e))))) ++e;
    if (e >= t_.size()) return t_.size() - 1;
    return punct(e, ";") ? e : e - 1;
  }

  // A class (from its `class` token to its closing brace) whose definition runs nothing of the module.
  bool class_pure(std::size_t c, std::size_t close) const {
    if (!judge_) return false;
    std::size_t j = c + 1;
    std::size_t body = c + 1;
    while (body < close && !(depth_[body] == depth_[c] && punct(body, "{"))) ++body;
    if (body >= close) return false;
    for (; j < body; ++j)
      if (word(j, "extends") && !pure(j + 1, body)) return false;
    const std::uint32_t d = depth_[body] + 1;
    for (std::size_t i = body + 1; i < close; ++i) {
      if (depth_[i] != d) continue;
      if (punct(i, "@")) return false;
      if (word(i, "static")) {
        std::size_t n = i + 1;
        if (punct(n, "(") || punct(n, "=") || punct(n, ";")) continue;  // a member named `static`
        if (punct(n, "{")) return false;                                // a static block
        while (word(n, "async") || word(n, "get") || word(n, "set") || punct(n, "*")) {
          if (punct(n + 1, "(")) break;  // a static method named get/set/async
          ++n;
        }
        if (punct(n, "[")) {
          if (match_[n] == npos || !pure(n + 1, match_[n])) return false;
          n = match_[n];
        }
        if (!punct(n + 1, "(")) return false;  // a static field: its initializer runs now
        continue;
      }
      if (punct(i, "[") && (punct(i - 1, "{") || punct(i - 1, ";") || punct(i - 1, "}") || punct(i - 1, "*") ||
                            word(i - 1, "get") || word(i - 1, "set") || word(i - 1, "async"))) {
        if (match_[i] == npos || !pure(i + 1, match_[i])) return false;  // a computed key
      }
    }
    return true;
  }

  bool callee_like(std::size_t i) const {  // can token i end a callee or an object (call, member, tag)?
    const Token& t = t_[i];
    if (t.kind == Token::ident) return !continues_expression(text(i)) && text(i) != "typeof" && text(i) != "void";
    if (t.kind == Token::punct) return text(i) == ")" || text(i) == "]" || text(i) == "}";  // `function(){}()`
    return t.kind == Token::tmpl || t.kind == Token::tmpl_close || t.kind == Token::string;
  }
  bool known_binding(std::string_view name) const {
    return imports_.count(std::string(name)) || declared_.count(std::string(name)) || known_globals().count(name);
  }
  bool in_object(std::size_t i) const {  // is token i directly inside an object literal's braces?
    std::size_t p = parent_[i];
    return p != npos && punct(p, "{") && t_[p].object;
  }
  bool object_key(std::size_t i) const {  // `{ key: …` or `, key: …` in an object literal
    return punct(i + 1, ":") && i > 0 && (punct(i - 1, "{") || punct(i - 1, ",")) && in_object(i);
  }
  // The dotted name ending at token i (`Symbol.for`), or "" when it is not a plain chain of names.
  std::string dotted_before(std::size_t a, std::size_t i) const {
    std::string out;
    std::size_t j = i;
    for (;;) {
      if (t_[j].kind != Token::ident) return {};
      out.insert(0, text(j));
      if (j >= a + 2 && punct(j - 1, ".")) {
        out.insert(0, ".");
        j -= 2;
        continue;
      }
      return out;
    }
  }

  // Does evaluating the tokens [a, b) do nothing but produce a value?
  bool pure(std::size_t a, std::size_t b) const {
    if (!judge_) return false;
    bool pending = false;                 // a PURE annotation waits for its call
    std::size_t constructor_args = npos;  // the `(` after `new Map`
    for (std::size_t i = a; i < b; ++i) {
      if (dead(i)) {
        i = dead_end(i);
        continue;
      }
      if (pure_annotation(i)) pending = true;
      const Token& t = t_[i];
      const bool after_dot = i > a && (punct(i - 1, ".") || punct(i - 1, "?."));
      switch (t.kind) {
        case Token::string:
        case Token::number:
        case Token::regex:
        case Token::tmpl_mid:
        case Token::tmpl_close:
          continue;
        case Token::tmpl:
        case Token::tmpl_open:
          if (i > a && callee_like(i - 1) && !pending) return false;  // a tagged template: a call
          continue;
        case Token::priv:
          return false;
        case Token::ident: {
          std::string_view w = text(i);
          if (after_dot) continue;      // the member access was judged at its '.'
          if (object_key(i)) continue;  // `{ function: f }`: a key, whatever the word
          if (w == "function" || (w == "async" && word(i + 1, "function"))) {
            if (w == "async") ++i;
            std::size_t e = function_end(i);
            if (e == npos) return false;
            i = e;
            continue;
          }
          if (w == "class") {
            std::size_t e = class_end(i);
            if (e == npos || !class_pure(i, e)) return false;
            i = e;
            continue;
          }
          if (w == "async") continue;  // an async arrow: its parameters and `=>` follow
          if (w == "new") {
            if (pending) continue;
            std::string ctor = i + 1 < b ? std::string(text(i + 1)) : std::string();
            if (!known_pure_new(ctor) || (i + 2 < b && !punct(i + 2, "(") && !punct(i + 2, ",") && !punct(i + 2, ")") &&
                                          !punct(i + 2, "]") && !punct(i + 2, "}")))
              return false;
            if (punct(i + 2, "(")) constructor_args = i + 2;
            ++i;
            continue;
          }
          if (w == "true" || w == "false" || w == "null" || w == "this" || w == "typeof" || w == "void") continue;
          if (w == "delete" || w == "await" || w == "yield" || w == "import" || w == "super" || w == "in" ||
              w == "instanceof")
            return false;
          if (punct(i + 1, "=>")) continue;  // an arrow's parameter
          if (in_object(i) && (punct(i + 1, "(") || word(i - 1, "get") || word(i - 1, "set"))) continue;
          if (i > a && word(i - 1, "typeof")) continue;  // typeof an unbound name does not throw
          if (!known_binding(w)) return false;
          if (reassigned_.count(std::string(w))) return false;  // read now, it may differ when run later
          continue;
        }
        case Token::punct: {
          std::string_view p = text(i);
          if (p == "(") {
            std::size_t close = match_[i];
            if (close == npos) return false;
            bool method =
                in_object(i) && i > a && (t_[i - 1].kind == Token::ident || punct(i - 1, "]")) && punct(close + 1, "{");
            if (method) {  // an object literal's method: not run now
              i = match_[close + 1];
              continue;
            }
            if (punct(close + 1, "=>")) {  // an arrow's parameters: not run now
              i = close;
              continue;
            }
            if (i == constructor_args) continue;
            if (i > a && callee_like(i - 1)) {  // a call
              if (pending) {
                pending = false;
                continue;
              }
              std::string callee = dotted_before(a, i - 1);
              if (callee.empty() || !known_pure_call(callee)) return false;
            }
            continue;
          }
          if (p == "[") {
            if (i > a && callee_like(i - 1)) return false;  // a computed member access
            continue;
          }
          if (p == "." || p == "?.") {
            if (pending) continue;  // the callee of an annotated call
            std::string root = dotted_before(a, i - 1);
            auto dot = root.find('.');
            if (root.empty() || !known_globals().count(root.substr(0, dot))) return false;
            if (!(root.substr(0, dot) == "Math" || root.substr(0, dot) == "Symbol" || root.substr(0, dot) == "Number" ||
                  root.substr(0, dot) == "Object" || root.substr(0, dot) == "Array" ||
                  root.substr(0, dot) == "String" || root.substr(0, dot) == "JSON"))
              return false;
            continue;
          }
          if (p == "=>") {
            if (punct(i + 1, "{")) {
              i = match_[i + 1];
              if (i == npos) return false;
              continue;
            }
            std::size_t j = i + 1;  // a concise body: to the end of the assignment expression
            while (j < b && !(depth_[j] == depth_[i] && (punct(j, ",") || punct(j, ";"))) && depth_[j] >= depth_[i])
              ++j;
            i = j - 1;
            continue;
          }
          if (p == "..." || p == "++" || p == "--" || p == "@") return false;
          if (p.size() >= 1 && p.back() == '=' && p != "==" && p != "===" && p != "!=" && p != "!==" && p != "<=" &&
              p != ">=")
            return false;  // an assignment
          continue;
        }
      }
    }
    return true;
  }

  std::string_view s_;
  const std::vector<Token>& t_;
  const EsmModule& esm_;
  std::vector<std::pair<std::uint32_t, std::uint32_t>> dead_;
  std::vector<bool> dead_tok_;
  std::uint32_t line_ = 1, line_at_ = 0;
  bool judge_ = true;
  std::unordered_set<std::size_t> declarators_;  // tokens naming a top-level declarator (split())
  std::unordered_set<std::string>
      reassigned_;  // names assigned somewhere besides their declaration  // split() judges side effects (not on the
                    // pass that only collects names)  // split(): the line at offset line_at_
  std::vector<std::size_t> parent_;
  std::vector<std::size_t> match_;
  std::vector<std::uint32_t> depth_;
  std::vector<Statement> statements_;
  std::unordered_map<std::string, const EsmModule::ImportBinding*> imports_;
  std::unordered_set<std::string> declared_;

 public:
  // The names every top-level declaration binds (for the purity of references), after split().
  void collect_declared() {
    for (const auto& st : statements_)
      for (const auto& n : st.names) declared_.insert(n);
  }
  bool reference(std::size_t i) const {  // an identifier token that reads a binding
    std::string_view w = text(i);
    if (i > 0 && (punct(i - 1, ".") || punct(i - 1, "?."))) return false;
    if (object_key(i)) return false;
    return !(w == "this" || w == "true" || w == "false" || w == "null" || w == "typeof" || w == "new");
  }
};

}  // namespace

std::optional<ShakeTable> shake_table(std::string_view source, const std::vector<Token>& tokens, const EsmModule& esm,
                                      const std::vector<DeadRange>& dead) {
  if (esm.error) return std::nullopt;
  return Shaker(source, tokens, esm, dead).run();
}

std::string unit_assignment(const ShakeUnit& unit, std::string_view text) {
  std::string out;
  if (unit.kind == ShakeUnit::declarators) {
    std::size_t at = text.find_first_not_of(" \t\n");
    out.assign(text);
    if (at != std::string_view::npos) {
      std::size_t n = text.substr(at).starts_with("const") ? 5 : 3;  // const, let, var
      out.replace(at, n, std::string(n, ' '));
    }
  } else {
    out = unit.names.front() + "=" + std::string(text);
  }
  out += ";";
  return out;
}

std::string unit_placeholder(const ShakeUnit& unit, std::string_view source) {
  std::string out = "let ";
  for (std::size_t i = 0; i < unit.names.size(); ++i) {
    if (i) out += ',';
    out += unit.names[i];
  }
  out += ';';
  std::string_view r = source.substr(unit.begin, unit.end - unit.begin);
  out.append(std::size_t(std::count(r.begin(), r.end(), '\n')), '\n');
  return out;
}

}  // namespace csgi::mw::bundler
