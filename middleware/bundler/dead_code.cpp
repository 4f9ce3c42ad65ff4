#include "csgi/middleware/bundler/dead_code.hpp"

#include <algorithm>

namespace csgi::mw::bundler {

namespace {

constexpr std::size_t npos = ~std::size_t{0};

/// A token with the lexer's one-character punctuators joined into JavaScript's operators (`==`, `!=`).
struct Tk {
  Token::Kind kind;
  std::uint32_t begin, end;
  std::string_view text;
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
    out.push_back({t.kind, t.begin, in[j].end, s.substr(t.begin, in[j].end - t.begin)});
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
  Analysis(std::string_view s, std::vector<Tk> t)
      : s_(s), t_(std::move(t)), fwd_(t_.size(), npos), bwd_(t_.size(), npos) {}

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

  void add_chain(std::size_t first, std::size_t last, Val v) { chains_[first] = {last, std::move(v)}; }
  std::size_t index_of(std::uint32_t offset, bool end) const {
    auto it = std::lower_bound(t_.begin(), t_.end(), offset,
                               [end](const Tk& k, std::uint32_t o) { return (end ? k.end : k.begin) < o; });
    if (it == t_.end() || (end ? it->end : it->begin) != offset) return npos;
    return std::size_t(it - t_.begin());
  }

  std::vector<std::pair<std::uint32_t, std::uint32_t>> run() {
    for (std::size_t i = 0; i < t_.size(); ++i) {
      if (word(i, "if") && !(i && (punct(i - 1, ".") || punct(i - 1, "?."))) && punct(i + 1, "("))
        branch_if(i);
      else if (punct(i, "?"))
        branch_ternary(i);
    }
    std::sort(dead_.begin(), dead_.end());
    return std::move(dead_);
  }

 private:
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
  void kill(std::size_t a, std::size_t b) {  // tokens [a, b)
    if (a < b && b <= t_.size()) dead_.emplace_back(t_[a].begin, t_[b - 1].end);
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
    if (c == 0) kill(close + 1, cons_end);
    if (c == 1 && word(cons_end, "else")) {
      std::size_t alt_end = statement_end(cons_end + 1);
      if (alt_end != npos) kill(cons_end + 1, alt_end);
    }
  }

  void branch_ternary(std::size_t q) {
    // The test: back to an unmatched opener, `,`, `;`, `?`, `:`, `=>`, an assignment or a keyword that
    // starts an expression; ?: binds looser than everything else.
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
           (t.text.back() == '=' && t.text != "==" && t.text != "===" && t.text != "!=" && t.text != "!==" &&
            t.text != "<=" && t.text != ">=")))
        break;
      if (t.kind == Token::ident && (t.text == "return" || t.text == "case" || t.text == "throw" || t.text == "yield" ||
                                     t.text == "await" || t.text == "else" || t.text == "in" || t.text == "of"))
        break;
      b = k;
    }
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
      kill(q + 1, colon);
      return;
    }
    // The alternate: to the next `,`, `;`, `:` or closer of this bracket; a line break in it makes its
    // end uncertain.
    std::size_t k = colon + 1;
    for (; k < t_.size(); ++k) {
      if (k > colon + 1 && line_break_before(k)) return;
      if (is_closer(k) || t_[k].kind == Token::tmpl_mid || punct(k, ",") || punct(k, ";") || punct(k, ":")) break;
      if (is_opener(k)) k = skip(k);
    }
    kill(colon + 1, k);
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
      Val r = both();
      int t = truthy(l);
      l = t == 1 ? l : t == 0 ? r : Val{};
    }
    return l;
  }
  Val both() {
    Val l = equality();
    while (!failed_ && i_ < e_ && punct(i_, "&&")) {
      ++i_;
      Val r = equality();
      int t = truthy(l);
      l = t == 0 ? l : t == 1 ? r : Val{};
    }
    return l;
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
  std::vector<std::pair<std::uint32_t, std::uint32_t>> dead_;
  std::size_t i_ = 0, e_ = 0;
  bool failed_ = false;
};

}  // namespace

std::vector<std::pair<std::uint32_t, std::uint32_t>> dead_ranges(std::string_view source,
                                                                 const std::vector<Token>& tokens,
                                                                 const std::vector<MemberChain>& chains,
                                                                 const Defines& defines) {
  bool any = false;
  for (const auto& c : chains) any = any || defines.count(c.path);
  if (!any) return {};
  Analysis a(source, join_operators(source, tokens));
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

}  // namespace csgi::mw::bundler
