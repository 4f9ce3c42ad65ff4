#pragma once
/// Percent-decoding (RFC 3986 §2.1) shared by the env builder and the request helpers, and the removal of
/// dot segments that makes a decoded request path canonical (ENV-5).
#include <string>
#include <string_view>

namespace csgi {

/// True when `s` contains a '%' not followed by two hex digits.
bool has_bad_escape(std::string_view s) noexcept;
/// Decodes %XX once; with plus_as_space also '+' → ' ' (form encoding). Throws csgi::BadRequest for a '%'
/// not followed by two hex digits.
std::string percent_decode(std::string_view s, bool plus_as_space = false);
/// Decodes into `out` (which must hold s.size() bytes); returns the decoded length. Throws like above.
std::size_t percent_decode_to(std::string_view s, char* out, bool plus_as_space = false);
/// True when `path` holds a "." or ".." segment ("/./", "/../", or "/." or "/.." at the end).
bool has_dot_segment(std::string_view path) noexcept;
/// Removes dot segments in place (RFC 3986 §5.2.4) from a decoded path that starts with '/' ("" and any
/// other path are left as they are): a "." segment vanishes, a ".." segment removes the segment before it,
/// and a path ending in either keeps its trailing '/' ("/a/b/.." → "/a/"). Repeated slashes are kept.
/// Returns the new length. Throws csgi::BadRequest when a ".." would climb above the root ("/..") or
/// would remove an empty segment ("/a//.."): servers that merge slashes (nginx) resolve that to another
/// path than servers that keep them, so no single answer is safe.
std::size_t remove_dot_segments(char* path, std::size_t n);
/// Encodes everything but unreserved characters (and '/' when keep_slash).
std::string percent_encode(std::string_view s, bool keep_slash = false);

}  // namespace csgi
