#pragma once
// Imported stylesheets: relative url() references turned into URLs the bundler serves
// (<mount>/~asset/<path>), CSS modules' local names scoped, and the JavaScript module a stylesheet is
// delivered as. Works on esbuild's CSS loader output (normalised, comments gone), but skips strings and
// comments wherever they are.

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace csgi::mw::bundler {

/// A stylesheet with its relative url() references taken out: text[0] asset[0] text[1] … text[n]. Each
/// text before an asset ends with `url("` and the one after it starts with `")`; an asset is the
/// reference's URL path below the mount ("/~asset/src/img/a%20b.png?v=1#x", escaped for a CSS string),
/// so the stylesheet reads `text[0] + base + asset[0] + …` where `base` is the mount's URL.
struct CssText {
  std::vector<std::string> text;
  std::vector<std::string> assets;
  std::string join(std::string_view base) const;
};

/// Splits `css`, the stylesheet at root-relative `path`. Left as written: data:, any URL with a scheme,
/// `//host`, `/root-absolute`, `#fragment`, an empty one, and one climbing above the root.
CssText split_urls(std::string_view css, std::string_view path);

/// A stylesheet without its `@import`s of relative URLs (`@import "./b.css";`, `@import url(b.css);`), and
/// those URLs as module specifiers ("./b.css"), in order. Left as written: an import with a media, supports
/// or layer condition, and one of an absolute URL or one with a scheme.
struct CssImports {
  std::string css;
  std::vector<std::string> imports;
};
CssImports css_imports(std::string_view css, std::string_view path);

/// True for a CSS module: `*.module.css`.
bool is_css_module(std::string_view path) noexcept;

/// A CSS module's stylesheet with its local names (classes, `@keyframes` and the animation names that use
/// them) scoped, as esbuild's local-css loader and Vite do: `<file>_<name>_<hash of path>`. `:global(…)`
/// keeps what it holds as written (without the wrapper), `:local(…)` is scoped; a bare `:global` or
/// `:local` switches the mode for the rest of that selector (until its comma), as css-loader does.
/// `composes: a b` in a rule adds those names to the export of each local class of its selector (the
/// declaration goes): local names scoped, `from global` as written, `from "./x.module.css"` scoped as that
/// file scopes them (the hash is of the path, not the content) and the file listed in `imports`.
struct ScopedCss {
  std::string css;
  std::vector<std::pair<std::string, std::string>> names;  // local name → scoped name(s), first use order
  std::vector<std::string> imports;                        // "./x.module.css" named by composes
};
ScopedCss scope_css(std::string_view css, std::string_view path);

/// A CSS module's name map as ASCII JSON: the `data-csgi-names` attribute of its <style> and the
/// `X-Bundle-Css-Names` header of its `~css` answer, which the live-reload follower compares.
std::string css_names(const std::vector<std::pair<std::string, std::string>>& names);

/// The JavaScript module a stylesheet is delivered as: it adds the CSS to the document as a
/// <style data-csgi-css="path"> element unless one for that path is already there, its asset URLs under
/// the loader's base (csgiRequire.base()). A CSS module (`names` given) is an ES module whose default
/// export is the name map and whose named exports are the names that are JavaScript identifiers. Each of
/// `imports` is required (imported) first, so an imported stylesheet comes before the importer's.
std::string css_module(std::string_view path, const CssText& css,
                       const std::vector<std::pair<std::string, std::string>>* names = nullptr,
                       const std::vector<std::string>& imports = {});

}  // namespace csgi::mw::bundler
