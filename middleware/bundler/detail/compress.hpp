#pragma once
/// Compressed forms of the bundler's answers (gzip through zlib, brotli through libbrotlienc) and the
/// choice among them by Accept-Encoding.
#include <string>
#include <string_view>

namespace csgi::mw::bundler {

enum class Coding { identity = 0, gzip = 1, br = 2 };

/// "gzip", "br" or "identity".
std::string_view coding_name(Coding c) noexcept;

/// The coding to send for an Accept-Encoding header: the highest q-value among br, gzip and identity
/// (identity only when listed by name; ties: br, then gzip, then identity); identity when the header is
/// empty or accepts neither br nor gzip (RFC 9110 §12.5.3 lets a server send an uncoded answer even
/// when identity is refused).
Coding choose_coding(std::string_view accept_encoding) noexcept;

/// `data` gzip-compressed at `level` (1…9). Throws std::runtime_error when zlib fails.
std::string gzip(std::string_view data, int level);
/// `data` brotli-compressed at `quality` (0…11, text mode). Throws std::runtime_error when it fails.
std::string brotli(std::string_view data, int quality);

}  // namespace csgi::mw::bundler
