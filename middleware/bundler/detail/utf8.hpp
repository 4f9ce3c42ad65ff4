#pragma once
// One UTF-8 encoder for the JavaScript string escapes (js_scan.cpp) and the CSS escapes (css.cpp).

#include <cstdint>
#include <iterator>
#include <string>

#include <boost/locale/utf.hpp>

namespace csgi::mw::bundler {

/// Appends code point `cp` as UTF-8; a surrogate or anything above U+10FFFF becomes U+FFFD.
inline void append_utf8(std::string& out, std::uint32_t cp) {
  namespace utf = boost::locale::utf;
  utf::utf_traits<char>::encode(utf::is_valid_codepoint(cp) ? cp : 0xFFFD, std::back_inserter(out));
}

}  // namespace csgi::mw::bundler
