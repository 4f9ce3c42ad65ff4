#pragma once
/// Accept-Encoding negotiation (RFC 9110 §12.5.3), shared by deflate and the static app's precompressed
/// siblings: the q-value a client gives a content coding, with `*` and `identity` handled.
#include <string_view>

namespace csgi::mw {

/// The q-value (0…1) that `header` gives `coding` ("gzip", "br", "deflate", "identity"). A coding that is
/// not listed gets the `*` value when present, else 0 — except identity, which is acceptable (1) unless
/// refused explicitly (`identity;q=0`, or `*;q=0` without an identity entry). "x-gzip" counts as gzip.
/// Malformed q-values count as 0 (refused), so garbage never turns compression on.
double accepted_q(std::string_view header, std::string_view coding) noexcept;

}  // namespace csgi::mw
