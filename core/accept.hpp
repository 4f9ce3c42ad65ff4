#pragma once
/// Accept negotiation for media types (RFC 9110 §12.5.1).
#include <string_view>

namespace csgi {

/// The q-value (0…1) that the Accept field value `accept` gives the media type `type` ("text/html"): from
/// the most specific range that matches it (the type itself, then "text/*", then "*/*"); 0 when none
/// does. Parameters other than q are ignored; a malformed q counts as 0.
double accept_q(std::string_view accept, std::string_view type) noexcept;

}  // namespace csgi
