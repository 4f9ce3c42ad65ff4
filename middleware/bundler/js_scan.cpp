#include "csgi/middleware/bundler/detail/js_scan.hpp"

#include <array>
#include <cstring>

#include "csgi/core/text.hpp"
#include "csgi/middleware/bundler/detail/utf8.hpp"

namespace csgi::mw::bundler {

namespace {

enum class Tok : std::uint8_t { none, ident, keyword_re, punct, string, tmpl, tmpl_head, number, regex, priv };

bool is_ident_start(unsigned char c) noexcept {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == '$' || c == '\\' || c >= 0x80;
}
bool is_ident_part(unsigned char c) noexcept { return is_ident_start(c) || (c >= '0' && c <= '9'); }
bool is_digit(unsigned char c) noexcept { return c >= '0' && c <= '9'; }

// Keywords after which an expression (and so a regex literal) may start.
bool keyword_allows_regex(std::string_view w) noexcept {
  static constexpr std::array<std::string_view, 16> k{"return", "typeof", "instanceof", "in",   "of",
                                                      "new",    "delete", "void",       "throw", "case",
                                                      "do",     "else",   "yield",      "await", "extends",
                                                      "default"};
  for (auto x : k)
    if (x == w) return true;
  return false;
}

// Decodes the escapes of a string literal body (quotes excluded).
std::string decode_string(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c != '\\' || i + 1 >= s.size()) {
      out.push_back(c);
      continue;
    }
    char e = s[++i];
    switch (e) {
      case 'n': out.push_back('\n'); break;
      case 't': out.push_back('\t'); break;
      case 'r': out.push_back('\r'); break;
      case 'b': out.push_back('\b'); break;
      case 'f': out.push_back('\f'); break;
      case 'v': out.push_back('\v'); break;
      case '0': out.push_back('\0'); break;
      case '\r':
        if (i + 1 < s.size() && s[i + 1] == '\n') ++i;
        break;
      case '\n': break;
      case 'x':
        if (i + 2 < s.size() && hex_value(s[i + 1]) >= 0 && hex_value(s[i + 2]) >= 0) {
          append_utf8(out, std::uint32_t(hex_value(s[i + 1]) * 16 + hex_value(s[i + 2])));
          i += 2;
        } else {
          out.push_back('x');
        }
        break;
      case 'u': {
        std::uint32_t cp = 0;
        if (i + 1 < s.size() && s[i + 1] == '{') {
          std::size_t j = i + 2;
          while (j < s.size() && hex_value(s[j]) >= 0 && cp <= 0x10FFFF) cp = cp * 16 + std::uint32_t(hex_value(s[j++]));
          if (j < s.size() && s[j] == '}' && cp <= 0x10FFFF) {
            append_utf8(out, cp);
            i = j;
          } else {
            out.push_back('u');
          }
        } else if (i + 4 < s.size() && hex_value(s[i + 1]) >= 0 && hex_value(s[i + 2]) >= 0 && hex_value(s[i + 3]) >= 0 &&
                   hex_value(s[i + 4]) >= 0) {
          for (int k = 1; k <= 4; ++k) cp = cp * 16 + std::uint32_t(hex_value(s[i + k]));
          append_utf8(out, cp);
          i += 4;
        } else {
          out.push_back('u');
        }
        break;
      }
      default: out.push_back(e);
    }
  }
  return out;
}

class Lexer {
public:
  Lexer(std::string_view src, const ScanOptions& o)
      : s_(src), roots_(o.chain_roots), tokens_(o.tokens), comments_(o.comments) {}

  ScanResult run() {
    if (s_.size() >= 2 && s_[0] == '#' && s_[1] == '!') skip_line();
    while (!res_.error) {
      std::size_t gap = p_;
      skip_space_and_comments();
      if (comments_ && !res_.error && p_ > gap && layout(s_.substr(gap, p_ - gap)))
        res_.comments.emplace_back(std::uint32_t(gap), std::uint32_t(p_));
      if (res_.error || p_ >= s_.size()) break;
      lex_token();
    }
    if (chain_state_ != 0) end_chain(Tok::none, s_.size(), {});
    if (!res_.error && !braces_.empty()) {
      Brace b = braces_.back();
      fail_at(s_.size(), b.kind == Brace::tmpl ? "unterminated template literal (open ${ at line " +
                                                     std::to_string(line_of(b.offset)) + ")"
                                               : "unexpected end of input: '{' opened at line " +
                                                     std::to_string(line_of(b.offset)) + " is never closed");
    }
    return std::move(res_);
  }

private:
  // A stretch between tokens holding a comment, or more than line breaks and a single space.
  static bool layout(std::string_view gap) {
    if (gap.find('/') != std::string_view::npos) return true;
    if (gap.find('\n') == std::string_view::npos) return false;
    return gap.find_first_not_of('\n') != std::string_view::npos;
  }

  struct Brace {
    enum Kind : std::uint8_t { block, object, tmpl } kind;
    std::size_t offset;
  };
  struct Paren {
    bool control = false;        // opened by if/while/for/with: a regex may follow its ')'
    bool has_require = false;    // holds a bare `require` binding-looking identifier
  };

  // --- errors and positions ---
  std::uint32_t line_of(std::size_t off) {
    if (off < line_pos_) {
      line_pos_ = 0;
      line_no_ = 1;
    }
    for (; line_pos_ < off && line_pos_ < s_.size(); ++line_pos_)
      if (s_[line_pos_] == '\n') ++line_no_;
    return line_no_;
  }
  void fail_at(std::size_t off, const std::string& what) {
    if (res_.error) return;
    std::size_t ls = off;
    while (ls > 0 && s_[ls - 1] != '\n') --ls;
    res_.error = "line " + std::to_string(line_of(off)) + ", column " + std::to_string(off - ls + 1) + ": " + what;
  }

  // --- whitespace and comments ---
  void skip_line() {
    while (p_ < s_.size() && s_[p_] != '\n') ++p_;
  }
  void skip_space_and_comments() {
    while (p_ < s_.size()) {
      unsigned char c = static_cast<unsigned char>(s_[p_]);
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f') {
        ++p_;
      } else if (c == 0xC2 && p_ + 1 < s_.size() && static_cast<unsigned char>(s_[p_ + 1]) == 0xA0) {
        p_ += 2;  // NBSP
      } else if (c == 0xE2 && p_ + 2 < s_.size() && static_cast<unsigned char>(s_[p_ + 1]) == 0x80 &&
                 (static_cast<unsigned char>(s_[p_ + 2]) == 0xA8 || static_cast<unsigned char>(s_[p_ + 2]) == 0xA9)) {
        p_ += 3;  // LS, PS
      } else if (c == 0xEF && p_ + 2 < s_.size() && static_cast<unsigned char>(s_[p_ + 1]) == 0xBB &&
                 static_cast<unsigned char>(s_[p_ + 2]) == 0xBF) {
        p_ += 3;  // BOM
      } else if (c == '/' && p_ + 1 < s_.size() && s_[p_ + 1] == '/') {
        skip_line();
      } else if (c == '/' && p_ + 1 < s_.size() && s_[p_ + 1] == '*') {
        std::size_t start = p_;
        std::size_t e = s_.find("*/", p_ + 2);
        if (e == std::string_view::npos) {
          fail_at(start, "unterminated comment");
          p_ = s_.size();
          return;
        }
        p_ = e + 2;
      } else {
        return;
      }
    }
  }

  // --- the regex/division decision ---
  bool regex_allowed() const noexcept {
    switch (prev_) {
      case Tok::none: return true;
      case Tok::keyword_re: return true;
      case Tok::ident:
      case Tok::number:
      case Tok::string:
      case Tok::tmpl:
      case Tok::regex:
      case Tok::priv: return false;
      case Tok::punct:
        if (prev_punct_ == ")") return last_paren_control_;
        if (prev_punct_ == "]") return false;
        if (prev_punct_ == "}") return last_brace_block_;
        if (prev_punct_ == "++" || prev_punct_ == "--") return false;
        return true;
      default: return false;
    }
  }
  // A '{' opens a block (not an object literal) after these.
  bool brace_is_block() const noexcept {
    if (prev_ == Tok::none) return true;
    if (prev_ == Tok::keyword_re) return prev_word_ == "else" || prev_word_ == "do";
    if (prev_ == Tok::ident) return prev_word_ == "try" || prev_word_ == "finally" || prev_word_ == "catch";
    if (prev_ != Tok::punct) return false;
    return prev_punct_ == ";" || prev_punct_ == "{" || prev_punct_ == "}" || prev_punct_ == ")" || prev_punct_ == "=>";
  }

  void set_prev(Tok t, std::string_view punct = {}, std::string_view word = {}) {
    prev_ = t;
    prev_punct_ = punct;
    prev_word_ = word;
  }

  // --- tokens ---
  void lex_token() {
    std::size_t start = p_;
    unsigned char c = static_cast<unsigned char>(s_[p_]);
    if (c == '\'' || c == '"') {
      std::string_view body;
      if (!lex_string(body)) return;
      feed(Tok::string, start, {}, body);
      return;
    }
    if (c == '`') {
      ++p_;
      lex_template_part(start, true);
      return;
    }
    if (is_digit(c) || (c == '.' && p_ + 1 < s_.size() && is_digit(static_cast<unsigned char>(s_[p_ + 1])))) {
      lex_number();
      feed(Tok::number, start);
      return;
    }
    if (c == '#' && p_ + 1 < s_.size() && is_ident_start(static_cast<unsigned char>(s_[p_ + 1]))) {
      ++p_;
      while (p_ < s_.size() && is_ident_part(static_cast<unsigned char>(s_[p_]))) ++p_;
      feed(Tok::priv, start);
      return;
    }
    if (is_ident_start(c)) {
      if (c == '\\' && !(p_ + 1 < s_.size() && s_[p_ + 1] == 'u')) {
        fail_at(p_, "unexpected '\\'");
        return;
      }
      while (p_ < s_.size() && is_ident_part(static_cast<unsigned char>(s_[p_]))) {
        if (s_[p_] == '\\') p_ += 2;  // \uXXXX escape in an identifier
        else ++p_;
      }
      if (p_ > s_.size()) p_ = s_.size();
      feed(Tok::ident, start, {}, s_.substr(start, p_ - start));
      return;
    }
    if (c == '/') {
      if (regex_allowed()) {
        if (!lex_regex()) return;
        feed(Tok::regex, start);
      } else {
        ++p_;
        if (p_ < s_.size() && s_[p_] == '=') ++p_;
        feed(Tok::punct, start, "/");
      }
      return;
    }
    lex_punct(start);
  }

  bool lex_string(std::string_view& body) {
    char q = s_[p_];
    std::size_t start = p_++;
    while (p_ < s_.size()) {
      char c = s_[p_];
      if (c == q) {
        body = s_.substr(start + 1, p_ - start - 1);
        ++p_;
        return true;
      }
      if (c == '\\') {
        p_ += 2;
        continue;
      }
      if (c == '\n' || c == '\r') break;
      ++p_;
    }
    fail_at(start, "unterminated string literal");
    return false;
  }

  // Scans template text from p_ (just after '`' or a substitution's '}') to the closing '`' or the next
  // '${'. `head` is true at the template's start.
  void lex_template_part(std::size_t tok_start, bool head) {
    std::size_t text_start = p_;
    while (p_ < s_.size()) {
      char c = s_[p_];
      if (c == '\\') {
        p_ += 2;
        continue;
      }
      if (c == '`') {
        std::string_view text = s_.substr(text_start, p_ - text_start);
        ++p_;
        // A whole template without substitutions is a literal; the tail of one is an expression's end.
        feed(Tok::tmpl, tok_start, {}, head ? text : std::string_view{}, head);
        return;
      }
      if (c == '$' && p_ + 1 < s_.size() && s_[p_ + 1] == '{') {
        braces_.push_back({Brace::tmpl, p_});
        p_ += 2;
        feed(Tok::tmpl_head, tok_start);
        set_prev(Tok::punct, "${");
        return;
      }
      ++p_;
    }
    fail_at(tok_start, "unterminated template literal");
  }

  bool lex_regex() {
    std::size_t start = p_++;
    bool in_class = false;
    while (p_ < s_.size()) {
      char c = s_[p_];
      if (c == '\n' || c == '\r') break;
      if (c == '\\') {
        p_ += 2;
        continue;
      }
      if (c == '[') in_class = true;
      else if (c == ']') in_class = false;
      else if (c == '/' && !in_class) {
        ++p_;
        while (p_ < s_.size() && is_ident_part(static_cast<unsigned char>(s_[p_]))) ++p_;
        return true;
      }
      ++p_;
    }
    fail_at(start, "unterminated regular expression literal");
    return false;
  }

  void lex_number() {
    bool hex = s_[p_] == '0' && p_ + 1 < s_.size() && (s_[p_ + 1] == 'x' || s_[p_ + 1] == 'X');
    while (p_ < s_.size()) {
      char c = s_[p_];
      if (is_ident_part(static_cast<unsigned char>(c)) || c == '.') {
        ++p_;
        if (!hex && (c == 'e' || c == 'E') && p_ < s_.size() && (s_[p_] == '+' || s_[p_] == '-')) ++p_;
      } else {
        break;
      }
    }
  }

  void lex_punct(std::size_t start) {
    static constexpr std::array<std::string_view, 12> multi{">>>=", "...", "===", "!==", "**=", "=>", "?.",
                                                            "++",   "--",  "&&",  "||",  "??"};
    std::string_view rest = s_.substr(p_);
    for (auto m : multi) {
      if (rest.starts_with(m)) {
        if (m == "?." && rest.size() > 2 && is_digit(static_cast<unsigned char>(rest[2]))) continue;
        p_ += m.size();
        feed(Tok::punct, start, m);
        return;
      }
    }
    char c = s_[p_++];
    static constexpr std::string_view singles = "{}()[];,<>+-*%&|^!~?:=.@";
    std::size_t k = singles.find(c);
    if (k == std::string_view::npos) {
      p_ = start;
      fail_at(start, std::string("unexpected character '") + c + "'");
      return;
    }
    feed(Tok::punct, start, singles.substr(k, 1));
  }

  // --- the token consumer: structure, regex context, require detection ---
  void feed(Tok t, std::size_t start, std::string_view punct = {}, std::string_view text = {}, bool whole_template = false) {
    if (tokens_) record(t, start, whole_template);
    bool after_dot = prev_ == Tok::punct && (prev_punct_ == "." || prev_punct_ == "?.");
    bool prev_free_require = prev_ == Tok::ident && prev_word_ == "require" && !prev_was_property_;
    // A parameter named `require` follows '(', ',' or '...'; after '=' it is a default value (a reference).
    bool prev_require_param = prev_free_require && require_param_position_;

    // The matchers see every token first, with the previous token still in prev_.
    match_require(t, start, punct, text, whole_template);
    match_esm(t, start, punct, text, after_dot);
    if (!roots_.empty()) match_chain(t, start, punct, text, after_dot);

    // A parameter list holding `require` followed by a body: `require` is a local inside that body.
    bool params_before = prev_ == Tok::punct && prev_punct_ == ")" && last_paren_require_;
    if (t == Tok::punct && punct == "=>" && (params_before || prev_free_require)) pending_shadow_ = true;
    else if (t == Tok::punct && punct == "{" && params_before) pending_shadow_ = true;
    else if (!(t == Tok::punct && punct == "{")) pending_shadow_ = pending_shadow_ && t == Tok::punct && punct == "=>";

    if (t == Tok::punct) {
      if (punct == "{") {
        bool block = brace_is_block();
        braces_.push_back({block ? Brace::block : Brace::object, start});
        if (tokens_) tokens_->back().object = !block;
        if (pending_shadow_) shadows_.push_back(braces_.size());
        pending_shadow_ = false;
      } else if (punct == "}") {
        if (braces_.empty()) {
          fail_at(start, "unbalanced '}'");
          return;
        }
        Brace b = braces_.back();
        braces_.pop_back();
        while (!shadows_.empty() && shadows_.back() > braces_.size()) shadows_.pop_back();
        if (b.kind == Brace::tmpl) {
          if (tokens_) tokens_->pop_back();  // the '}' is part of the template token that follows
          lex_template_part(start, false);
          return;
        }
        last_brace_block_ = b.kind == Brace::block;
      } else if (punct == "(") {
        Paren pr;
        pr.control = prev_ == Tok::ident && !prev_was_property_ &&
                     (prev_word_ == "if" || prev_word_ == "while" || prev_word_ == "for" || prev_word_ == "with" ||
                      prev_word_ == "switch");
        parens_.push_back(pr);
      } else if (punct == ")") {
        last_paren_control_ = false;
        last_paren_require_ = false;
        if (!parens_.empty()) {
          Paren pr = parens_.back();
          parens_.pop_back();
          last_paren_control_ = pr.control;
          last_paren_require_ = (pr.has_require || prev_require_param) && !pr.control;
        }
      } else if ((punct == "," || punct == "=") && prev_require_param && !parens_.empty()) {
        parens_.back().has_require = true;  // `(a, require, b)`, `(require = x)`
      }
      set_prev(Tok::punct, punct);
      prev_was_property_ = false;
      return;
    }

    if (t == Tok::ident) {
      std::string_view w = text;
      require_param_position_ = prev_ == Tok::punct && (prev_punct_ == "(" || prev_punct_ == "," || prev_punct_ == "...");
      if (!after_dot) {
        // A local `require` until the end of the enclosing block. A top-level `var require` of a
        // CommonJS file redeclares the module wrapper's parameter: it holds the real require until
        // assigned (and a wrapper assigned to it usually calls that), so its requires stay dependencies.
        bool wrapper_var = prev_word_ == "var" && braces_.empty() && !res_.esm_line;
        if (w == "require" && prev_ == Tok::ident && !prev_was_property_ && !wrapper_var &&
            (prev_word_ == "var" || prev_word_ == "let" || prev_word_ == "const" || prev_word_ == "function"))
          shadows_.push_back(braces_.size());
        prev_was_property_ = false;
        if (keyword_allows_regex(w)) {
          set_prev(Tok::keyword_re, {}, w);
          return;
        }
      } else {
        prev_was_property_ = true;
      }
      set_prev(Tok::ident, {}, w);
      return;
    }
    prev_was_property_ = false;
    if (t == Tok::tmpl_head) return;  // lex_template_part sets prev_ to "${"
    set_prev(t);
  }

  void record(Tok t, std::size_t start, bool whole_template) {
    Token::Kind k = Token::punct;
    bool cont = start < s_.size() && s_[start] == '}';  // a template part after a substitution
    switch (t) {
      case Tok::ident: k = Token::ident; break;
      case Tok::string: k = Token::string; break;
      case Tok::tmpl: k = whole_template ? Token::tmpl : Token::tmpl_close; break;
      case Tok::tmpl_head: k = cont ? Token::tmpl_mid : Token::tmpl_open; break;
      case Tok::number: k = Token::number; break;
      case Tok::regex: k = Token::regex; break;
      case Tok::priv: k = Token::priv; break;
      default: k = Token::punct;
    }
    tokens_->push_back({k, std::uint32_t(start), std::uint32_t(p_), false});
  }

  bool require_is_free() const noexcept { return shadows_.empty(); }

  void match_require(Tok t, std::size_t start, std::string_view punct, std::string_view text, bool whole_template) {
    switch (rq_state_) {
      case 0:
        if (t == Tok::ident && text == "require" && !(prev_ == Tok::punct && (prev_punct_ == "." || prev_punct_ == "?.")) &&
            require_is_free() && !(prev_ == Tok::ident && (prev_word_ == "var" || prev_word_ == "let" ||
                                                           prev_word_ == "const" || prev_word_ == "function"))) {
          rq_state_ = 1;
          rq_start_ = start;
        }
        return;
      case 1:
        rq_state_ = (t == Tok::punct && punct == "(") ? 2 : 0;
        return;
      case 2:
        if (t == Tok::string || (t == Tok::tmpl && whole_template)) {
          rq_spec_ = t == Tok::string ? decode_string(text) : std::string(text);
          rq_state_ = 3;
          return;
        }
        res_.unbundled.push_back({line_of(rq_start_), t == Tok::punct && punct == ")" ? "require()" : "require(expr)"});
        rq_state_ = 0;
        return;
      case 3:
        if (t == Tok::punct && punct == ")") {
          res_.deps.push_back({std::move(rq_spec_), line_of(rq_start_), false, std::uint32_t(rq_start_)});
        } else if (t == Tok::punct && punct == ",") {
          res_.unbundled.push_back({line_of(rq_start_), "require('" + rq_spec_ + "', ...)"});
        } else {
          res_.unbundled.push_back({line_of(rq_start_), "require(expr)"});
        }
        rq_spec_.clear();
        rq_state_ = 0;
        return;
    }
  }

  void match_esm(Tok t, std::size_t start, std::string_view punct, std::string_view text, bool after_dot) {
    if (esm_state_ == 1) {  // just saw import/export
      esm_state_ = 0;
      // A property or method name (`{import: 1}`, `async export() {}`, `export = 1` in a class body).
      if (t == Tok::punct && (punct == ":" || punct == "=" || punct == "," || punct == "}" || punct == ";" ||
                              punct == ")"))
        return;
      if (t == Tok::punct && punct == "(") {
        if (esm_word_ == "import") res_.unbundled.push_back({line_of(esm_start_), "import()"});
        return;
      }
      if (!res_.esm_line) res_.esm_line = line_of(esm_start_);
      if (t == Tok::string) {
        res_.esm_imports.push_back({decode_string(text), line_of(start)});
        return;
      }
      if (esm_word_ == "import" && t == Tok::punct && punct == ".") return;  // import.meta
      esm_state_ = 2;                                                        // look for `from '…'`
      return;
    }
    if (esm_state_ == 2) {
      if (t == Tok::ident && text == "from") {
        esm_state_ = 3;
      } else if (t == Tok::punct && punct == ";") {
        esm_state_ = 0;
      } else if (t == Tok::ident && (text == "function" || text == "class" || text == "const" || text == "let" ||
                                     text == "var" || text == "default")) {
        esm_state_ = 0;  // export declaration: no specifier
      }
      return;
    }
    if (esm_state_ == 3) {
      if (t == Tok::string) res_.esm_imports.push_back({decode_string(text), line_of(start)});
      esm_state_ = 0;
      return;
    }
    if (t == Tok::ident && !after_dot && (text == "import" || text == "export")) {
      esm_state_ = 1;
      esm_word_ = text;
      esm_start_ = start;
    }
  }

  // An assignment operator (`=`, `+=`, `>>>=`, `??=`…) or `++`/`--` starts at `pos` (the lexer gives
  // compound operators as two tokens).
  bool assignment_at(std::size_t pos) const noexcept {
    std::string_view r = s_.substr(pos);
    if (r.starts_with("=")) return !(r.starts_with("==") || r.starts_with("=>"));
    static constexpr std::array<std::string_view, 17> ops{">>>=", ">>=", "<<=", "**=", "&&=", "||=", "?\?=", "+=", "-=",
                                                          "*=",   "/=",  "%=",  "&=",  "|=",  "^=",  "++", "--"};
    for (auto op : ops)
      if (r.starts_with(op)) return true;
    return false;
  }

  // Member chains for defines: 0 idle, 1 after a name (a '.' may follow), 2 after the '.'.
  void match_chain(Tok t, std::size_t start, std::string_view punct, std::string_view text, bool after_dot) {
    if (chain_state_ == 1 && t == Tok::punct && punct == ".") {
      chain_state_ = 2;
      return;
    }
    if (chain_state_ == 2 && t == Tok::ident) {
      chain_.path.append(".").append(text);
      chain_.ends.push_back(start + text.size());
      chain_state_ = 1;
      return;
    }
    if (chain_state_ != 0) end_chain(t, start, punct);
    if (t != Tok::ident || after_dot) return;
    bool root = false;
    for (const auto& r : roots_) root = root || r == text;
    if (!root) return;
    if (prev_ == Tok::ident && (prev_word_ == "var" || prev_word_ == "let" || prev_word_ == "const" ||
                                prev_word_ == "function" || prev_word_ == "class"))
      return;  // a declaration of the name, not a use
    if ((prev_ == Tok::keyword_re && prev_word_ == "delete") ||
        (prev_ == Tok::punct && (prev_punct_ == "++" || prev_punct_ == "--")))
      return;
    chain_ = MemberChain{start, {start + text.size()}, std::string(text)};
    chain_state_ = 1;
    chain_key_ = prev_ == Tok::punct && (prev_punct_ == "{" || prev_punct_ == ",") && !braces_.empty() &&
                 braces_.back().kind == Brace::object;
  }
  // Closes the chain before token `t` (a dangling '.' is dropped); an assignment target is not kept.
  void end_chain(Tok t, std::size_t start, std::string_view punct) {
    bool dangling_dot = chain_state_ == 2;
    chain_state_ = 0;
    bool assigned = !dangling_dot && t == Tok::punct && assignment_at(start);
    // A lone name as an object literal's key, shorthand property or method name is no reference.
    bool key = chain_key_ && chain_.ends.size() == 1 && t == Tok::punct &&
               (punct == ":" || punct == "," || punct == "}" || punct == "(");
    if (!assigned && !key) res_.chains.push_back(std::move(chain_));
    chain_ = {};
  }

  std::string_view s_;
  std::size_t p_ = 0;
  ScanResult res_;
  std::size_t line_pos_ = 0;
  std::uint32_t line_no_ = 1;

  Tok prev_ = Tok::none;
  std::string_view prev_punct_;
  std::string_view prev_word_;
  bool last_paren_control_ = false;
  bool last_paren_require_ = false;
  bool last_brace_block_ = true;
  bool pending_shadow_ = false;
  bool require_param_position_ = false;  // the last identifier followed '(', ',' or '...'

  bool prev_was_property_ = false;
  std::vector<Brace> braces_;
  std::vector<Paren> parens_;
  std::vector<std::size_t> shadows_;  // brace depths inside which `require` is a local

  int rq_state_ = 0;
  std::size_t rq_start_ = 0;
  std::string rq_spec_;

  int esm_state_ = 0;
  std::string_view esm_word_;
  std::size_t esm_start_ = 0;

  const std::vector<std::string>& roots_;
  std::vector<Token>* tokens_;
  bool comments_ = false;
  int chain_state_ = 0;
  bool chain_key_ = false;
  MemberChain chain_;
};

}  // namespace

ScanResult scan(std::string_view source, const ScanOptions& options) { return Lexer(source, options).run(); }

}  // namespace csgi::mw::bundler
