#pragma once
/// HTTP dates (RFC 9110 §5.6.7): IMF-fixdate out, the three historic forms in.
#include <ctime>
#include <optional>
#include <string>
#include <string_view>

namespace csgi {

/// "Sun, 06 Nov 1994 08:49:37 GMT".
std::string http_date(std::time_t t);
/// The current time as an HTTP date, recomputed at most once a second (cheap on hot paths).
std::string_view http_date_now();
/// Parses IMF-fixdate, RFC 850 and asctime forms; std::nullopt when malformed.
std::optional<std::time_t> parse_http_date(std::string_view s);

}  // namespace csgi
