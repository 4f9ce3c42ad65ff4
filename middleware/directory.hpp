#pragma once
/// Directory — the static app plus HTML listings of directories without an index file
/// (Plack::App::Directory, Monkey's dirlisting).
///
/// Files are served exactly as by Static (path safety, ranges, validators). A directory without an index
/// file is listed as an HTML table: parent link, then sub-directories, then files, each sorted by name,
/// with size and modification time. Names are HTML-escaped in the text and percent-encoded in the links,
/// so a file called `<script>.html` or `a"b` is shown as text and linked correctly. Only what Static would
/// serve is listed: each entry goes through the same path checks and the same open beneath the root,
/// and its size and time are those of what was opened. So hidden entries (leading '.') are left out
/// unless allow_dotfiles, and so are symlinks under Symlinks::never, symlinks leading outside the root
/// (or dangling), entries that are neither files nor directories, names sanitize_path refuses and
/// names that are not valid UTF-8; their size and time never show.
///
/// Reads:  as Static
/// Writes: nothing in the env
/// Order:  an app (the innermost layer).
#include "csgi/core/text.hpp"
#include "csgi/middleware/static.hpp"

namespace csgi::mw {

struct DirectoryOptions {
  StaticOptions files;  // files.on_directory is set by Directory
};

class Directory {
public:
  explicit Directory(DirectoryOptions options);
  Response operator()(Env& env) const { return files_(env); }

private:
  Static files_;
};

/// Escapes & < > " ' for HTML text and attribute values (core/text.hpp).
using csgi::html_escape;

/// The listing page for the directory `dir`, opened as `relative` beneath `root`; `display_path` is the
/// URL path shown in the title.
Response directory_listing(const Root& root, const Opened& dir, std::string_view relative, std::string_view display_path,
                           bool show_parent, const StaticOptions& o);

}  // namespace csgi::mw
