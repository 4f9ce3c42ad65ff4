#pragma once
/// Path safety for the file-serving apps: no file outside the root is ever opened.
///
/// Two steps. `sanitize_path` checks the (once-decoded) PATH_INFO as text and turns it into a relative
/// path, refusing what is malformed or suspicious: NUL and other control bytes, backslashes, invalid or
/// overlong UTF-8 (`%c0%ae`), a second layer of percent-encoding (`%252e` arrives as `%2e`), and `..`
/// segments. `Root::open` then opens that path beneath an open directory descriptor with openat2(2)
/// (RESOLVE_BENEATH: the kernel refuses to leave the root), or component by component with O_NOFOLLOW
/// where openat2 is unavailable; symlinks are refused, or followed only while they stay inside the root.
/// Nothing is opened by an absolute path built from the request.
#include <sys/stat.h>

#include <memory>
#include <string>
#include <string_view>

#include "csgi/core/response.hpp"
#include "csgi/core/text.hpp"

namespace csgi::mw {

enum class Symlinks {
  never,        // any symlink on the path → 403
  inside_root,  // follow symlinks whose target resolves inside the root; others → 403
};

struct SafePath {
  int status = 0;         // 0: usable; else 400 (malformed), 403 (forbidden) or 404 (hidden)
  std::string relative;   // "a/b/c": no leading slash, no empty, "." or ".." segments; "" for the root
  bool trailing_slash = false;
  std::string reason;     // why it was refused (for csgi.errors)
  explicit operator bool() const noexcept { return status == 0; }
};

/// Checks a decoded PATH_INFO. `allow_dotfiles` = false refuses segments starting with '.' (404), except
/// `.well-known` (RFC 8615).
SafePath sanitize_path(std::string_view path_info, bool allow_dotfiles = false);

using csgi::valid_utf8;  // core/text.hpp

struct Opened {
  int status = 0;  // 0: opened; else 403, 404 or 500
  std::shared_ptr<FileHandle> file;
  struct stat st {};
  bool is_dir() const noexcept { return S_ISDIR(st.st_mode); }
  bool is_file() const noexcept { return S_ISREG(st.st_mode); }
  explicit operator bool() const noexcept { return status == 0; }
};

/// A document root held open as a directory descriptor.
class Root {
public:
  /// Throws std::system_error when `dir` is not an openable directory.
  Root(const std::string& dir, Symlinks policy);
  Root(const Root&) = delete;
  Root& operator=(const Root&) = delete;
  ~Root();

  /// Opens `relative` (as produced by sanitize_path) read-only beneath the root; "" is the root itself.
  /// Regular files and directories only (a FIFO, socket or device → 403). Never blocks on a FIFO.
  Opened open(std::string_view relative) const;

  const std::string& path() const noexcept { return real_; }
  Symlinks policy() const noexcept { return policy_; }

private:
  Opened walk(std::string_view relative) const;
  Opened resolve_inside(std::string_view relative) const;
  int fd_ = -1;
  std::string real_;  // realpath of the root
  Symlinks policy_;
};

}  // namespace csgi::mw
