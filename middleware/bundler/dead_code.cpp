#include "csgi/middleware/bundler/detail/dead_code.hpp"

#include <algorithm>
#include <initializer_list>
#include <set>

namespace csgi::mw::bundler {

namespace {

/// A token with the lexer's one-character punctuators joined into JavaScript's operators (`==`, `!=`).
struct Tk {
  Token::Kind kind;
  std::uint32_t begin, end;
  std::string_view text;
  bool object;  // a '{' the lexer took for an object literal
};

constexpr std::string_view kOps[] = {">>>=", "===", "!==", "**=", "<<=", ">>=", ">>>", "&&=", "||=", "?\?=", "...",
                                     "=>",   "==",  "!=",  "<=",  ">=",  "+=",  "-=",  "*=",  "/=",  "%=",   "&=",
                                     "|=",   "^=",  "**",  "<<",  ">>",  "?.",  "++",  "--",  "&&",  "||",   "??"};

std::vector<Tk> join_operators(std::string_view s, const std::vector<Token>& in) {
  std::vector<Tk> out;
  out.reserve(in.size());
  for (std::size_t i = 0; i < in.size();) {
    const Token& t = in[i];
    std::size_t j = i;
    if (t.kind == Token::punct) {
      // The longest operator made of adjacent punctuator tokens, ending where a token ends.
      for (const auto op : kOps) {
        if (s.substr(t.begin).starts_with(op)) {
          std::size_t k = i;
          while (k < in.size() && in[k].kind == Token::punct && in[k].end < t.begin + op.size() && k + 1 < in.size() &&
                 in[k + 1].begin == in[k].end)
            ++k;
          if (in[k].end == t.begin + op.size()) {
            j = k;
            break;
          }
        }
      }
    }
    out.push_back({t.kind, t.begin, in[j].end, s.substr(t.begin, in[j].end - t.begin), t.object});
    i = j + 1;
  }
  return out;
}

/// A compile-time value: a string, a boolean ("1"/"0"), a number (its text) or unknown.
struct Val {
  char type = '?';  // 's', 'b', 'n', '?'
  std::string v;
};

Val bool_val(bool b) {
  return {'b', b ? "1" : "0"};
}

Val literal(Token::Kind kind, std::string_view text) {
  if ((kind == Token::string || kind == Token::tmpl) && text.size() >= 2 && text.find('\\') == std::string_view::npos)
    return {'s', std::string(text.substr(1, text.size() - 2))};
  if (kind == Token::ident && (text == "true" || text == "false")) return bool_val(text == "true");
  if (kind == Token::number) return {'n', std::string(text)};
  return {};
}

Val define_value(std::string_view v) {
  while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
  while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
  if (v.size() >= 2 && (v.front() == '"' || v.front() == '\'') && v.back() == v.front() &&
      v.substr(1, v.size() - 2).find_first_of("\"'\\") == std::string_view::npos)
    return {'s', std::string(v.substr(1, v.size() - 2))};
  if (v == "true" || v == "false") return bool_val(v == "true");
  if (!v.empty() && std::all_of(v.begin(), v.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return {'n', std::string(v)};
  return {};
}

int truthy(const Val& v) {  // 1, 0, or -1 when unknown
  switch (v.type) {
    case 's':
      return v.v.empty() ? 0 : 1;
    case 'b':
      return v.v == "1" ? 1 : 0;
    case 'n':
      return v.v.find_first_not_of('0') == std::string::npos ? 0 : 1;
    default:
      return -1;
  }
}

class Analysis {
 public:
  Analysis(std::string_view s, std::vector<Tk> t, bool strict)
      : s_(s), t_(std::move(t)), fwd_(t_.size(), npos), bwd_(t_.size(), npos), strict_(strict) {}

  bool pair_brackets() {
    std::vector<std::size_t> open;
    for (std::size_t i = 0; i < t_.size(); ++i) {
      bool closes = is_closer(i) || t_[i].kind == Token::tmpl_mid;
      bool opens = is_opener(i) || t_[i].kind == Token::tmpl_mid;
      if (closes) {
        if (open.empty()) return false;
        fwd_[open.back()] = i;
        bwd_[i] = open.back();
        open.pop_back();
      }
      if (opens) open.push_back(i);
    }
    return open.empty();
  }

  void add_chain(std::size_t first, std::size_t last, Val v) {
    chains_[first] = {last, std::move(v)};
    chain_ends_.insert(last);
  }
  std::size_t index_of(std::uint32_t offset, bool end) const {
    auto it = std::lower_bound(t_.begin(), t_.end(), offset,
                               [end](const Tk& k, std::uint32_t o) { return (end ? k.end : k.begin) < o; });
    if (it == t_.end() || (end ? it->end : it->begin) != offset) return npos;
    return std::size_t(it - t_.begin());
  }

  std::vector<DeadRange> run() {
    for (std::size_t i = 0; i < t_.size(); ++i) {
      if (word(i, "if") && !(i && (punct(i - 1, ".") || punct(i - 1, "?."))) && punct(i + 1, "("))
        branch_if(i);
      else if (punct(i, "?") && may_end_constant(i - 1))
        branch_ternary(i);
      else if ((punct(i, "&&") || punct(i, "||")) && may_end_constant(i - 1))
        branch_logical(i);
    }
    std::sort(dead_.begin(), dead_.end(), [](const DeadRange& a, const DeadRange& b) {
      return a.begin != b.begin ? a.begin < b.begin : a.end > b.end;
    });
    return std::move(dead_);
  }

 private:
  /// Whether a constant test can end at token `k` (a cheap filter before looking for its start).
  bool may_end_constant(std::size_t k) const {
    if (k >= t_.size()) return false;
    const Tk& t = t_[k];
    return punct(k, ")") || t.kind == Token::string || t.kind == Token::tmpl || t.kind == Token::number ||
           word(k, "true") || word(k, "false") || chain_ends_.count(k) > 0;
  }
  bool punct(std::size_t i, std::string_view p) const {
    return i < t_.size() && t_[i].kind == Token::punct && t_[i].text == p;
  }
  bool word(std::size_t i, std::string_view w) const {
    return i < t_.size() && t_[i].kind == Token::ident && t_[i].text == w;
  }
  bool is_opener(std::size_t i) const {
    return t_[i].kind == Token::tmpl_open ||
           (t_[i].kind == Token::punct && (t_[i].text == "(" || t_[i].text == "[" || t_[i].text == "{"));
  }
  bool is_closer(std::size_t i) const {
    return t_[i].kind == Token::tmpl_close ||
           (t_[i].kind == Token::punct && (t_[i].text == ")" || t_[i].text == "]" || t_[i].text == "}"));
  }
  /// From an opener to its final closer (through a template's middle parts).
  std::size_t skip(std::size_t i) const {
    while (i < t_.size() && fwd_[i] != npos) i = fwd_[i];
    return i;
  }
  std::size_t skip_back(std::size_t i) const {
    while (i < t_.size() && bwd_[i] != npos) i = bwd_[i];
    return i;
  }
  bool line_break_before(std::size_t i) const {
    return i > 0 && s_.substr(t_[i - 1].end, t_[i].begin - t_[i - 1].end).find('\n') != std::string_view::npos;
  }
  void kill(std::size_t a, std::size_t b, DeadRange::Form form) {  // tokens [a, b)
    if (a < b && b <= t_.size()) dead_.push_back({t_[a].begin, t_[b - 1].end, form, hoists(a, b, form)});
  }
  DeadRange::Form branch_form(std::size_t a) const { return punct(a, "{") ? DeadRange::block : DeadRange::statement; }

  /// Whether tokens [a, b) declare a binding for the enclosing function (DeadRange::hoists). Nested
  /// function, method, arrow and class bodies are skipped; anything unsure counts as a declaration.
  bool hoists(std::size_t a, std::size_t b, DeadRange::Form form) const {
    std::vector<std::size_t> open;  // the brackets open at the current token, within the range
    for (std::size_t i = a; i < b; ++i) {
      const bool member = i > a && (punct(i - 1, ".") || punct(i - 1, "?."));
      const bool klass = word(i, "class") && (punct(i + 1, "{") || (i + 1 < b && t_[i + 1].kind == Token::ident));
      if (!member && (word(i, "var") || klass || word(i, "function"))) {
        std::size_t body = npos;
        if (word(i, "var")) return true;
        if (klass) {
          for (std::size_t k = i + 1; k < b && body == npos; k = is_opener(k) && !punct(k, "{") ? skip(k) + 1 : k + 1)
            if (punct(k, "{")) body = k;
        } else {
          if (!strict_ && !function_expression(i, a, form, open)) return true;
          std::size_t k = i + 1;
          if (punct(k, "*")) ++k;
          if (k < b && t_[k].kind == Token::ident) ++k;
          if (punct(k, "(") && fwd_[k] != npos && punct(fwd_[k] + 1, "{")) body = fwd_[k] + 1;
        }
        if (body == npos || fwd_[body] == npos || fwd_[body] >= b) return true;
        i = fwd_[body];
        continue;
      }
      if (punct(i, "{") && i > a &&
          (punct(i - 1, "=>") || (punct(i - 1, ")") && !line_break_before(i) && method_parameters(bwd_[i - 1])))) {
        i = fwd_[i];  // an arrow's or a method's body
        continue;
      }
      if (t_[i].kind == Token::tmpl_mid) continue;
      if (is_opener(i)) open.push_back(i);
      if (is_closer(i) && !open.empty()) open.pop_back();
    }
    return false;
  }
  /// Whether the `(` at `p` opens a method's parameters (`name(…) {` on one line), not the head of
  /// if/while/for/switch/catch/with, whose `{` is a block.
  bool method_parameters(std::size_t p) const {
    if (p == npos || p == 0) return false;
    static constexpr std::string_view heads[] = {"if", "while", "for", "switch", "catch", "with", "await"};
    for (auto h : heads)
      if (word(p - 1, h)) return false;
    const Tk& n = t_[p - 1];
    return n.kind == Token::ident || n.kind == Token::string || n.kind == Token::number || n.kind == Token::priv ||
           punct(p - 1, "]") || punct(p - 1, "*");
  }
  /// Whether the `function` at `i` (in a range starting at `a`) is an expression, not a declaration.
  bool function_expression(std::size_t i, std::size_t a, DeadRange::Form form,
                           const std::vector<std::size_t>& open) const {
    std::size_t p = i > a && word(i - 1, "async") ? i - 1 : i;
    if (p == a) return form == DeadRange::expression;
    --p;
    const Tk& t = t_[p];
    if (t.kind == Token::punct) {
      if (t.text == "{" || t.text == "}" || t.text == ";" || t.text == ")") return false;
      if (t.text == ":") return !open.empty() && (!punct(open.back(), "{") || t_[open.back()].object);
      return true;
    }
    static constexpr std::string_view before_expression[] = {"return", "typeof", "void",       "new", "delete",
                                                             "yield",  "await",  "instanceof", "in",  "of",
                                                             "case",   "throw",  "extends"};
    if (t.kind == Token::ident)
      for (auto w : before_expression)
        if (t.text == w) return true;
    return false;
  }

  /// The index just after the statement starting at `i`, or npos when its extent is not certain.
  std::size_t statement_end(std::size_t i, int depth = 0) const {
    if (i >= t_.size() || depth > 64) return npos;
    if (punct(i, "{")) return fwd_[i] == npos ? npos : fwd_[i] + 1;
    if (word(i, "if")) {
      if (!punct(i + 1, "(")) return npos;
      std::size_t k = statement_end(skip(i + 1) + 1, depth + 1);
      if (k != npos && word(k, "else")) return statement_end(k + 1, depth + 1);
      return k;
    }
    static constexpr std::string_view compound[] = {"for",  "while", "do",   "try",     "switch", "function", "class",
                                                    "with", "else",  "case", "default", "async",  "import",   "export"};
    for (auto w : compound)
      if (word(i, w)) return npos;
    if (punct(i + 1, ":") || t_[i].kind == Token::tmpl_mid || t_[i].kind == Token::tmpl_close) return npos;
    for (std::size_t k = i; k < t_.size(); ++k) {
      if (k > i && line_break_before(k)) return npos;  // a statement ended by a line break: not followed
      if (punct(k, ";")) return k + 1;
      if (punct(k, "}")) return k;
      if (is_closer(k) || t_[k].kind == Token::tmpl_mid) return npos;
      if (is_opener(k)) k = skip(k);
    }
    return t_.size();
  }

  void branch_if(std::size_t i) {
    std::size_t close = fwd_[i + 1];
    if (close == npos) return;
    int c = evaluate(i + 2, close);
    if (c < 0) return;
    std::size_t cons_end = statement_end(close + 1);
    if (cons_end == npos) return;
    const bool has_else = word(cons_end, "else");
    if (c == 0) {
      if (has_else)
        kill(close + 1, cons_end, branch_form(close + 1));
      else
        kill(i, cons_end, DeadRange::statement);  // the whole `if`: its test is a constant
    }
    if (c == 1 && has_else) {
      std::size_t alt_end = statement_end(cons_end + 1);
      if (alt_end != npos) kill(cons_end + 1, alt_end, branch_form(cons_end + 1));
    }
  }

  /// The first token of the left operand of the operator at `q`: back to an unmatched opener, `,`, `;`,
  /// `?`, `:`, `=>`, an assignment, a keyword that starts an expression, or an operator in `looser`
  /// (those that bind looser than the one at `q`).
  std::size_t operand_start(std::size_t q, std::initializer_list<std::string_view> looser) const {
    std::size_t b = q;
    while (b > 0) {
      std::size_t k = b - 1;
      const Tk& t = t_[k];
      if (is_closer(k)) {
        b = skip_back(k);
        continue;
      }
      if (is_opener(k) || t.kind == Token::tmpl_mid) break;
      if (t.kind == Token::punct &&
          (t.text == "," || t.text == ";" || t.text == "?" || t.text == ":" || t.text == "=>" || t.text == "..." ||
           std::find(looser.begin(), looser.end(), t.text) != looser.end() ||
           (t.text.back() == '=' && t.text != "==" && t.text != "===" && t.text != "!=" && t.text != "!==" &&
            t.text != "<=" && t.text != ">=")))
        break;
      if (t.kind == Token::ident && (t.text == "return" || t.text == "case" || t.text == "throw" || t.text == "yield" ||
                                     t.text == "await" || t.text == "else" || t.text == "in" || t.text == "of"))
        break;
      b = k;
    }
    return b;
  }

  /// `T && X` with T false, `T || X` with T true: X never runs. X runs to the next `,`, `;`, `?`, `:`,
  /// `??`, `||` (and for `&&`, `&&`) or closer of this bracket; a line break in it makes its end uncertain.
  void branch_logical(std::size_t op) {
    const bool both = t_[op].text == "&&";
    int c = evaluate(operand_start(op, both ? std::initializer_list<std::string_view>{"||", "??"}
                                            : std::initializer_list<std::string_view>{"??"}),
                     op);
    if (c < 0 || c == (both ? 1 : 0)) return;
    std::size_t k = op + 1;
    for (; k < t_.size(); ++k) {
      if (k > op + 1 && line_break_before(k)) return;
      if (is_closer(k) || t_[k].kind == Token::tmpl_mid || punct(k, ",") || punct(k, ";") || punct(k, "?") ||
          punct(k, ":") || punct(k, "??") || punct(k, "||") || (both && punct(k, "&&")))
        break;
      if (is_opener(k)) k = skip(k);
    }
    kill(op + 1, k, DeadRange::expression);
  }

  void branch_ternary(std::size_t q) {
    // The test: ?: binds looser than everything else.
    std::size_t b = operand_start(q, {});
    int c = evaluate(b, q);
    if (c < 0) return;
    // The consequent: up to the `:` that pairs with this `?`.
    std::size_t colon = npos;
    int nested = 0;
    for (std::size_t k = q + 1; k < t_.size(); ++k) {
      if (is_opener(k)) {
        k = skip(k);
        continue;
      }
      if (is_closer(k) || t_[k].kind == Token::tmpl_mid || punct(k, ",") || punct(k, ";")) return;
      if (punct(k, "?")) ++nested;
      if (punct(k, ":") && nested-- == 0) {
        colon = k;
        break;
      }
    }
    if (colon == npos) return;
    if (c == 0) {
      kill(q + 1, colon, DeadRange::expression);
      return;
    }
    // The alternate: to the next `,`, `;`, closer of this bracket or `:` not paired with a `?` of the
    // alternate; a line break in it makes its end uncertain.
    std::size_t k = colon + 1;
    nested = 0;
    for (; k < t_.size(); ++k) {
      if (k > colon + 1 && line_break_before(k)) return;
      if (is_closer(k) || t_[k].kind == Token::tmpl_mid || punct(k, ",") || punct(k, ";")) break;
      if (punct(k, "?")) ++nested;
      if (punct(k, ":") && nested-- == 0) break;
      if (is_opener(k)) k = skip(k);
    }
    kill(colon + 1, k, DeadRange::expression);
  }

  /// The truth of tokens [b, e) as a test: 1, 0, or -1 when not a constant.
  int evaluate(std::size_t b, std::size_t e) {
    i_ = b;
    e_ = e;
    failed_ = false;
    Val v = either();
    if (failed_ || i_ != e_) return -1;
    return truthy(v);
  }
  Val either() {
    Val l = both();
    while (!failed_ && i_ < e_ && punct(i_, "||")) {
      ++i_;
      int t = truthy(l);
      if (t == 1) {
        skip_operand(false);  // never evaluated: it may be anything
        continue;
      }
      Val r = both();
      l = t == 0 ? r : Val{};
    }
    return l;
  }
  Val both() {
    Val l = equality();
    while (!failed_ && i_ < e_ && punct(i_, "&&")) {
      ++i_;
      int t = truthy(l);
      if (t == 0) {
        skip_operand(true);
        continue;
      }
      Val r = equality();
      l = t == 1 ? r : Val{};
    }
    return l;
  }
  /// Skips the right operand of a `||` (`and`: of a `&&`) that short-circuits: to the next `||` (or
  /// `&&`) of this bracket or the end; an operator binding looser than `||` there fails the evaluation.
  void skip_operand(bool and_) {
    std::size_t from = i_;
    for (; i_ < e_; ++i_) {
      if (punct(i_, "||") || (and_ && punct(i_, "&&"))) break;
      const Tk& t = t_[i_];
      if (t.kind == Token::punct && (t.text == "?" || t.text == ":" || t.text == "," || t.text == ";" ||
                                     t.text == "??" || t.text == "=>" || t.text.back() == '=')) {
        if (t.text != "==" && t.text != "===" && t.text != "!=" && t.text != "!==" && t.text != "<=" &&
            t.text != ">=") {
          failed_ = true;
          return;
        }
      }
      if (is_opener(i_)) {
        i_ = skip(i_);
        if (i_ >= e_) break;
      }
    }
    if (i_ == from || i_ > e_) failed_ = true;
  }
  Val equality() {
    Val l = unary();
    while (!failed_ && i_ < e_ && (punct(i_, "===") || punct(i_, "!==") || punct(i_, "==") || punct(i_, "!="))) {
      std::string_view op = t_[i_++].text;
      Val r = unary();
      bool strict = op.size() == 3, negate = op[0] == '!';
      if (l.type == '?' || r.type == '?') {
        l = {};
      } else if (l.type != r.type) {
        l = strict ? bool_val(negate) : Val{};
      } else if (l.v == r.v) {
        l = bool_val(!negate);
      } else {
        l = l.type == 'n' ? Val{} : bool_val(negate);  // 1 vs 1.0: not compared as text
      }
    }
    return l;
  }
  Val unary() {
    if (i_ < e_ && punct(i_, "!")) {
      ++i_;
      int t = truthy(unary());
      return t < 0 ? Val{} : bool_val(t == 0);
    }
    return primary();
  }
  Val primary() {
    if (i_ >= e_) {
      failed_ = true;
      return {};
    }
    if (punct(i_, "(")) {
      std::size_t close = fwd_[i_];
      if (close == npos || close >= e_) {
        failed_ = true;
        return {};
      }
      std::size_t outer = e_;
      ++i_;
      e_ = close;
      Val v = either();
      if (i_ != close) failed_ = true;
      e_ = outer;
      i_ = close + 1;
      return v;
    }
    if (auto c = chains_.find(i_); c != chains_.end() && c->second.first < e_) {
      i_ = c->second.first + 1;
      return c->second.second;
    }
    Val v = literal(t_[i_].kind, t_[i_].text);
    if (v.type == '?') failed_ = true;
    ++i_;
    return v;
  }

  std::string_view s_;
  std::vector<Tk> t_;
  std::vector<std::size_t> fwd_, bwd_;  // bracket pairs: opener → its closer (or template middle) and back
  std::map<std::size_t, std::pair<std::size_t, Val>> chains_;  // first token → (last token, value)
  std::set<std::size_t> chain_ends_;
  std::vector<DeadRange> dead_;
  bool strict_;
  std::size_t i_ = 0, e_ = 0;
  bool failed_ = false;
};

}  // namespace

std::vector<DeadRange> dead_ranges(std::string_view source, const std::vector<Token>& tokens,
                                   const std::vector<MemberChain>& chains, const Defines& defines, bool strict) {
  bool any = false;
  for (const auto& c : chains) any = any || defines.count(c.path);
  if (!any) return {};
  Analysis a(source, join_operators(source, tokens), strict);
  if (!a.pair_brackets()) return {};
  for (const auto& c : chains) {
    auto d = defines.find(c.path);
    if (d == defines.end()) continue;
    Val v = define_value(d->second);
    std::size_t first = a.index_of(std::uint32_t(c.begin), false),
                last = a.index_of(std::uint32_t(c.ends.back()), true);
    if (v.type != '?' && first != npos && last != npos) a.add_chain(first, last, std::move(v));
  }
  return a.run();
}

std::optional<std::string> dead_replacement(std::string_view source, const DeadRange& r) {
  if (r.hoists || r.end > source.size() || r.begin > r.end) return std::nullopt;
  std::string_view gone = source.substr(r.begin, r.end - r.begin);
  if (gone.find("\xE2\x80\xA8") != std::string_view::npos || gone.find("\xE2\x80\xA9") != std::string_view::npos)
    return std::nullopt;
  std::size_t breaks = 0;
  for (std::size_t i = 0; i < gone.size(); ++i) {
    if (gone[i] == '\r' && (i + 1 == gone.size() || gone[i + 1] != '\n')) return std::nullopt;
    breaks += gone[i] == '\n';
  }
  switch (r.form) {
    case DeadRange::block:
      return "{" + std::string(breaks, '\n') + "}";
    case DeadRange::statement:
      return ";" + std::string(breaks, '\n');
    default:
      return "0" + std::string(breaks, '\n');
  }
}

}  // namespace csgi::mw::bundler
