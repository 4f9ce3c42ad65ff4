#pragma once
/// Small text helpers shared by core, middleware and adapters.
#include <string>
#include <string_view>

namespace csgi {

/// `s` without leading and trailing spaces and tabs (RFC 9110 OWS).
std::string_view trim_ows(std::string_view s) noexcept;
/// ASCII lower-case copy.
std::string to_lower(std::string_view s);
/// Escapes & < > " ' for HTML text and attribute values.
std::string html_escape(std::string_view s);

}  // namespace csgi
