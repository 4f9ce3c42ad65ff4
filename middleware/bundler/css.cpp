#include "csgi/middleware/bundler/detail/css.hpp"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <functional>

#include <nlohmann/json.hpp>

#include "csgi/core/percent.hpp"
#include "csgi/middleware/bundler/detail/utf8.hpp"

namespace csgi::mw::bundler {

namespace {

bool ident_char(unsigned char c) noexcept {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
         c >= 0x80 || c == '\\';
}

bool ident_start(std::string_view s, std::size_t i) noexcept {
  if (i >= s.size()) return false;
  unsigned char c = static_cast<unsigned char>(s[i]);
  if (c == '-') return i + 1 < s.size() && (s[i + 1] == '-' || (s[i + 1] != '-' && ident_start(s, i + 1)));
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c >= 0x80 || (c == '\\' && i + 1 < s.size());
}

// The end of the identifier starting at i (escapes included).
std::size_t ident_end(std::string_view s, std::size_t i) noexcept {
  while (i < s.size() && ident_char(static_cast<unsigned char>(s[i]))) i += s[i] == '\\' && i + 1 < s.size() ? 2 : 1;
  return i;
}

// The index after the string or comment starting at i, or i when none starts there.
std::size_t skip_opaque(std::string_view s, std::size_t i) noexcept {
  if (s[i] == '"' || s[i] == '\'') {
    char q = s[i++];
    while (i < s.size() && s[i] != q && s[i] != '\n') i += s[i] == '\\' ? 2 : 1;
    return std::min(i + 1, s.size());
  }
  if (s.substr(i, 2) == "/*") {
    auto end = s.find("*/", i + 2);
    return end == std::string_view::npos ? s.size() : end + 2;
  }
  return i;
}

// CSS escapes (`\` + 1–6 hex digits and one optional white space, or `\` + a character) resolved.
std::string unescape(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\\' || i + 1 == s.size()) {
      out.push_back(s[i]);
      continue;
    }
    std::size_t j = i + 1;
    std::uint32_t cp = 0;
    while (j < s.size() && j < i + 7 && std::isxdigit(static_cast<unsigned char>(s[j])))
      cp = cp * 16 + std::uint32_t(hex_value(s[j++]));
    if (j == i + 1) {
      if (s[j] != '\n') out.push_back(s[j]);
      i = j;
      continue;
    }
    if (j < s.size() && (s[j] == ' ' || s[j] == '\t' || s[j] == '\n')) ++j;
    append_utf8(out, cp == 0 ? 0xFFFD : cp);
    i = j - 1;
  }
  return out;
}

// `s` as the inside of a double-quoted CSS string.
std::string css_string_text(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out.push_back('\\');
    if (c == '\n') {
      out += "\\a ";
      continue;
    }
    out.push_back(c);
  }
  return out;
}

// The root-relative path `rel` (percent-decoded already) names from the file at `path`, or "" when it
// climbs above the root or names nothing.
std::string join_relative(std::string_view path, std::string_view rel) {
  std::vector<std::string_view> parts;
  auto dir_end = path.rfind('/');
  std::string_view dir = dir_end == std::string_view::npos ? std::string_view() : path.substr(0, dir_end);
  for (std::string_view from : {dir, rel}) {
    std::size_t i = 0;
    while (i <= from.size()) {
      auto j = std::min(from.find('/', i), from.size());
      std::string_view seg = from.substr(i, j - i);
      if (seg == "..") {
        if (parts.empty()) return {};
        parts.pop_back();
      } else if (!seg.empty() && seg != ".") {
        parts.push_back(seg);
      }
      i = j + 1;
    }
  }
  std::string joined;
  for (auto p : parts) (joined.empty() ? joined : joined += '/') += p;
  return joined;
}

// True for a URL relative to the stylesheet: not empty, no scheme, not `/…`, `#…` or `?…`.
bool relative_url(std::string_view url) noexcept {
  if (url.empty() || url[0] == '/' || url[0] == '#' || url[0] == '?') return false;
  auto colon = url.find(':');
  auto slash = url.find_first_of("/?#");
  return colon == std::string_view::npos || (slash != std::string_view::npos && slash < colon);
}

// The asset path (below the mount, escaped for a CSS string) a url() value names, or "" when it stays.
std::string asset_of(std::string_view url, std::string_view path) {
  if (!relative_url(url)) return {};
  auto cut = url.find_first_of("?#");
  std::string joined = join_relative(path, percent_decode_lenient(url.substr(0, cut)));
  if (joined.empty()) return {};
  std::string out = "/~asset/" + percent_encode(joined, uri::unreserved_slash);
  if (cut != std::string_view::npos) out += css_string_text(url.substr(cut));
  return out;
}

// A stylesheet URL as a module specifier: "b.css" is relative in CSS, a package name in JavaScript.
std::string specifier_of(std::string_view url) {
  return url.starts_with("./") || url.starts_with("../") ? std::string(url) : "./" + std::string(url);
}

bool iequals(std::string_view a, std::string_view b) noexcept {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

std::string scoped_name(std::string_view path, std::string_view local) {
  auto slash = path.rfind('/');
  std::string_view file = path.substr(slash == std::string_view::npos ? 0 : slash + 1);
  file = file.substr(0, file.size() - std::min(file.size(), std::string_view(".module.css").size()));
  std::string stem;
  for (char c : file) stem.push_back(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' ? c : '_');
  if (stem.empty() || !std::isalpha(static_cast<unsigned char>(stem[0]))) stem.insert(0, "_");
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char c : path) h = (h ^ c) * 1099511628211ull;
  char buf[8];
  std::snprintf(buf, sizeof buf, "%06llx", static_cast<unsigned long long>(h & 0xFFFFFF));
  return stem + "_" + std::string(local) + "_" + buf;
}

bool js_identifier(std::string_view s) noexcept {
  static constexpr std::string_view reserved[] = {
      "arguments", "await", "break", "case", "catch", "class", "const", "continue", "debugger", "default", "delete",
      "do", "else", "enum", "eval", "export", "extends", "false", "finally", "for", "function", "if", "implements",
      "import", "in", "instanceof", "interface", "let", "new", "null", "package", "private", "protected", "public",
      "return", "static", "super", "switch", "this", "throw", "true", "try", "typeof", "var", "void", "while",
      "with", "yield"};
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  for (char c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '$') return false;
  return std::find(std::begin(reserved), std::end(reserved), s) == std::end(reserved);
}

class Scoper {
public:
  Scoper(std::string_view css, std::string_view path) : css_(css), path_(path) {}

  ScopedCss run() {
    walk(/*collect=*/true);
    walk(/*collect=*/false);
    for (auto& [local, scoped] : out_.names)
      for (auto& [l, extra] : composed_)
        if (l == local) scoped.append(extra);
    return std::move(out_);
  }

private:
  const std::string& scope(std::string_view local) {
    for (auto& [l, s] : out_.names)
      if (l == local) return s;
    return out_.names.emplace_back(std::string(local), scoped_name(path_, local)).second;
  }

  // Rules and declarations in order: a run up to a top-level '{' is a prelude, one up to ';' or '}' a
  // declaration.
  void walk(bool collect) {
    std::size_t i = 0, start = 0;
    int parens = 0;
    while (i < css_.size()) {
      if (std::size_t k = skip_opaque(css_, i); k != i) {
        i = k;
        continue;
      }
      char c = css_[i];
      if (c == '(') ++parens;
      if (c == ')' && parens > 0) --parens;
      if (parens == 0 && (c == '{' || c == ';' || c == '}')) {
        std::string_view seg = css_.substr(start, i - start);
        bool kept = true;
        if (c == '{') prelude(seg, collect);
        else if (!collect) kept = declaration(seg);
        if (!collect && (kept || c != ';')) out_.css.push_back(c);
        start = ++i;
        continue;
      }
      ++i;
    }
    if (!collect) declaration(css_.substr(start));
  }

  void prelude(std::string_view seg, bool collect) {
    auto at = seg.find_first_not_of(" \t\n");
    if (at != std::string_view::npos && seg[at] == '@') {
      std::size_t name_end = ident_end(seg, at + 1);
      std::string_view rule = seg.substr(at + 1, name_end - at - 1);
      if (rule.size() >= 9 && iequals(rule.substr(rule.size() - 9), "keyframes")) {
        std::size_t n = seg.find_first_not_of(" \t\n", name_end);
        if (n != std::string_view::npos && ident_start(seg, n)) {
          std::size_t e = ident_end(seg, n);
          std::string_view name = seg.substr(n, e - n);
          if (collect) {
            keyframes_.emplace_back(name);
          } else {
            out_.css.append(seg.substr(0, n)).append(scope(name)).append(seg.substr(e));
          }
          return;
        }
      }
      if (!collect) out_.css.append(seg);
      return;
    }
    if (collect) return;
    rule_.clear();
    selector(seg, true);
  }

  // `local` is the mode each selector of the list starts in; a bare `:global` or `:local` switches it
  // for the rest of that selector (as css-loader does), `:global(…)`/`:local(…)` for what they hold.
  void selector(std::string_view s, const bool initial) {
    bool local = initial;
    int depth = 0;
    std::size_t i = 0;
    while (i < s.size()) {
      if (std::size_t k = skip_opaque(s, i); k != i) {
        out_.css.append(s.substr(i, k - i));
        i = k;
        continue;
      }
      if (s[i] == '[') {
        std::size_t k = i + 1;
        while (k < s.size() && s[k] != ']') k = std::max(skip_opaque(s, k), k + 1);
        k = std::min(k + 1, s.size());
        out_.css.append(s.substr(i, k - i));
        i = k;
        continue;
      }
      if (s[i] == ':' && (iequals(s.substr(i, 8), ":global(") || iequals(s.substr(i, 7), ":local("))) {
        const bool global = s[i + 1] == 'g' || s[i + 1] == 'G';
        std::size_t open = i + (global ? 7 : 6), depth = 0, k = open;
        for (; k < s.size(); ++k) {
          if (std::size_t o = skip_opaque(s, k); o != k) {
            k = o - 1;
            continue;
          }
          if (s[k] == '(') ++depth;
          if (s[k] == ')' && --depth == 0) break;
        }
        selector(s.substr(open + 1, std::min(k, s.size()) - open - 1), !global);
        i = std::min(k + 1, s.size());
        continue;
      }
      if (s[i] == ':' && (bare_switch(s, i, ":global") || bare_switch(s, i, ":local"))) {
        local = s[i + 1] == 'l' || s[i + 1] == 'L';
        i += local ? 6 : 7;
        const bool joined = !out_.css.empty() && std::string_view(" \t\n,>+~(").find(out_.css.back()) == std::string_view::npos;
        if (!joined)
          while (i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n')) ++i;
        continue;
      }
      if (s[i] == '.' && local && ident_start(s, i + 1)) {
        std::size_t e = ident_end(s, i + 1);
        std::string_view name = s.substr(i + 1, e - i - 1);
        out_.css.append(".").append(scope(name));
        rule_.push_back(name);
        i = e;
        continue;
      }
      if (s[i] == '(') ++depth;
      if (s[i] == ')' && depth > 0) --depth;
      if (s[i] == ',' && depth == 0) local = initial;
      out_.css.push_back(s[i++]);
    }
  }

  static bool bare_switch(std::string_view s, std::size_t i, std::string_view word) noexcept {
    return iequals(s.substr(i, word.size()), word) &&
           (i + word.size() == s.size() || (!ident_char(static_cast<unsigned char>(s[i + word.size()])) && s[i + word.size()] != '('));
  }

  // `composes: a b [from global | from "./x.module.css"]` in a rule: the names are added to the export of
  // each local class of the rule's selector; the declaration goes. False when it went.
  bool compose(std::string_view value) {
    std::vector<std::string_view> words;
    std::string from;
    bool after_from = false, global = false;
    std::size_t i = 0;
    while (i < value.size()) {
      if (value[i] == '"' || value[i] == '\'') {
        std::size_t k = skip_opaque(value, i);
        if (after_from && k - i >= 2) from = unescape(value.substr(i + 1, k - i - 2));
        i = k;
        continue;
      }
      if (!ident_start(value, i)) {
        ++i;
        continue;
      }
      std::size_t e = ident_end(value, i);
      std::string_view w = value.substr(i, e - i);
      if (after_from) global = iequals(w, "global");
      else if (iequals(w, "from")) after_from = true;
      else words.push_back(w);
      i = e;
    }
    std::string other;
    if (!from.empty()) {
      if (!relative_url(from) || (other = join_relative(path_, from)).empty()) return true;
      out_.imports.push_back(specifier_of(from));
    }
    std::string extra;
    for (auto w : words) extra += " " + (global ? std::string(w) : other.empty() ? scope(w) : scoped_name(other, w));
    for (auto local : rule_) composed_.emplace_back(local, extra);
    return false;
  }

  // animation / animation-name values: the local @keyframes names they use; `composes`. False when the
  // declaration went.
  bool declaration(std::string_view d) {
    auto colon = d.find(':');
    auto p = d.find_first_not_of(" \t\n");
    std::string_view prop = colon == std::string_view::npos || p == std::string_view::npos || p > colon
                                ? std::string_view()
                                : d.substr(p, d.find_last_not_of(" \t\n", colon - 1) + 1 - p);
    if (iequals(prop, "composes") && !rule_.empty() && !compose(d.substr(colon + 1))) return false;
    if (auto dash = prop.find("-animation"); prop.starts_with("-") && dash != std::string_view::npos)
      prop = prop.substr(dash + 1);
    if (keyframes_.empty() || !(iequals(prop, "animation") || iequals(prop, "animation-name"))) {
      out_.css.append(d);
      return true;
    }
    out_.css.append(d.substr(0, colon + 1));
    std::size_t i = colon + 1;
    while (i < d.size()) {
      if (std::size_t k = skip_opaque(d, i); k != i) {
        out_.css.append(d.substr(i, k - i));
        i = k;
        continue;
      }
      if (ident_start(d, i) && !ident_char(static_cast<unsigned char>(d[i - 1]))) {
        std::size_t e = ident_end(d, i);
        std::string_view name = d.substr(i, e - i);
        bool local = std::find(keyframes_.begin(), keyframes_.end(), name) != keyframes_.end();
        out_.css.append(local ? std::string_view(scope(name)) : name);
        i = e;
        continue;
      }
      out_.css.push_back(d[i++]);
    }
    return true;
  }

  std::string_view css_, path_;
  std::vector<std::string_view> keyframes_;
  std::vector<std::string_view> rule_;                                  // the local classes of the last rule
  std::vector<std::pair<std::string_view, std::string>> composed_;    // local class → " name…" it composes
  ScopedCss out_;
};

}  // namespace

std::string CssText::join(std::string_view base) const {
  std::string out = text.empty() ? std::string() : text[0];
  for (std::size_t i = 0; i < assets.size(); ++i) out.append(base).append(assets[i]).append(text[i + 1]);
  return out;
}

CssText split_urls(std::string_view css, std::string_view path) {
  CssText out;
  std::string piece;  // the text since the last reference
  std::size_t from = 0, i = 0;
  while (i < css.size()) {
    if (std::size_t k = skip_opaque(css, i); k != i) {
      i = k;
      continue;
    }
    const bool at_url = (css[i] == 'u' || css[i] == 'U') && (i == 0 || !ident_char(static_cast<unsigned char>(css[i - 1]))) &&
                        iequals(css.substr(i, 4), "url(");
    if (!at_url) {
      ++i;
      continue;
    }
    std::size_t j = css.find_first_not_of(" \t\n", i + 4), end;
    if (j == std::string_view::npos) break;
    std::string value;
    if (css[j] == '"' || css[j] == '\'') {
      end = skip_opaque(css, j);
      value = unescape(css.substr(j + 1, end - j - 2));
    } else {
      end = j;
      while (end < css.size() && css[end] != ')' && css[end] != ' ' && css[end] != '\t' && css[end] != '\n')
        end += css[end] == '\\' ? 2 : 1;
      end = std::min(end, css.size());
      value = unescape(css.substr(j, end - j));
    }
    std::size_t close = css.find_first_not_of(" \t\n", end);
    std::string asset = close != std::string_view::npos && css[close] == ')' ? asset_of(value, path) : std::string();
    if (asset.empty()) {
      i = end;
      continue;
    }
    piece.append(css.substr(from, i - from)).append("url(\"");
    out.text.push_back(std::move(piece));
    out.assets.push_back(std::move(asset));
    piece = "\")";
    i = from = close + 1;
  }
  out.text.push_back(piece.append(css.substr(from)));
  return out;
}

CssImports css_imports(std::string_view css, std::string_view path) {
  CssImports out;
  std::size_t i = 0, from = 0;
  while (i < css.size() && css[i] != '{') {
    if (std::size_t k = skip_opaque(css, i); k != i) {
      i = k;
      continue;
    }
    if (css[i] != '@' || !iequals(css.substr(i, 7), "@import") || ident_end(css, i + 1) != i + 7) {
      ++i;
      continue;
    }
    std::size_t end = i + 7;
    while (end < css.size() && css[end] != ';') end = std::max(skip_opaque(css, end), end + 1);
    std::string_view rest = css.substr(i + 7, end - i - 7);
    auto v = rest.find_first_not_of(" \t\n");
    std::string url;
    std::size_t after = std::string_view::npos;
    if (v != std::string_view::npos && (rest[v] == '"' || rest[v] == '\'')) {
      after = skip_opaque(rest, v);
      url = unescape(rest.substr(v + 1, after - v - 2));
    } else if (v != std::string_view::npos && iequals(rest.substr(v, 4), "url(")) {
      auto close = rest.find(')', v);
      auto a = rest.find_first_not_of(" \t\n\"'", v + 4), b = rest.find_last_not_of(" \t\n\"'", close - 1);
      if (close != std::string_view::npos && a < close && b >= a) url = unescape(rest.substr(a, b + 1 - a));
      after = close == std::string_view::npos ? close : close + 1;
    }
    const bool plain = after != std::string_view::npos && rest.find_first_not_of(" \t\n", after) == std::string_view::npos;
    end = std::min(end + 1, css.size());
    if (plain && relative_url(url) && !join_relative(path, percent_decode_lenient(url)).empty()) {
      out.css.append(css.substr(from, i - from));
      out.imports.push_back(specifier_of(url));
      if (end < css.size() && css[end] == '\n') ++end;
      from = end;
    }
    i = end;
  }
  out.css.append(css.substr(from));
  return out;
}

std::string css_names(const std::vector<std::pair<std::string, std::string>>& names) {
  nlohmann::json map = nlohmann::json::object();
  for (const auto& [local, scoped] : names) map[local] = scoped;
  return map.dump(-1, ' ', true, nlohmann::json::error_handler_t::replace);
}

bool is_css_module(std::string_view path) noexcept { return path.ends_with(".module.css"); }

ScopedCss scope_css(std::string_view css, std::string_view path) { return Scoper(css, path).run(); }

std::string css_module(std::string_view path, const CssText& css, const std::vector<std::pair<std::string, std::string>>* names,
                       const std::vector<std::string>& imports) {
  using nlohmann::json;
  const auto quote = [](std::string_view s) {
    return json(std::string(s)).dump(-1, ' ', false, json::error_handler_t::replace);
  };
  std::string text = quote(css.text[0]);
  for (std::size_t i = 0; i < css.assets.size(); ++i) text += "+b+" + quote(css.assets[i]) + "+" + quote(css.text[i + 1]);
  std::string deps;
  for (const auto& spec : imports) deps += (names ? "import " : "require(") + quote(spec) + (names ? ";" : ");");
  std::string out = deps + "if(typeof document!=='undefined'&&!document.querySelector('style[data-csgi-css=' + JSON.stringify(" +
                    quote(path) + ") + ']')){" +
                    (css.assets.empty() ? "" : "const b=typeof csgiRequire!=='undefined'?csgiRequire.base():'';") +
                    "const s=document.createElement('style');s.setAttribute('data-csgi-css'," + quote(path) + ");" +
                    (names ? "s.setAttribute('data-csgi-names'," + quote(css_names(*names)) + ");" : "") +
                    "s.textContent=" + text + ";document.head.appendChild(s);}";
  if (!names) return "'use strict';" + out + "\n";
  json map = json::object();
  std::string named;
  for (const auto& [local, scoped] : *names) {
    map[local] = scoped;
    if (js_identifier(local)) named += "export const " + local + "=" + quote(scoped) + ";";
  }
  return out + "export default " + map.dump(-1, ' ', false, json::error_handler_t::replace) + ";" + named + "\n";
}

}  // namespace csgi::mw::bundler
