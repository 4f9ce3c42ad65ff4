#pragma once
/// Percent-decoding (RFC 3986 §2.1) shared by the env builder and the request helpers.
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
/// Encodes everything but unreserved characters (and '/' when keep_slash).
std::string percent_encode(std::string_view s, bool keep_slash = false);

}  // namespace csgi
