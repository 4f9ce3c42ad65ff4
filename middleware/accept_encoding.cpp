#include "csgi/middleware/accept_encoding.hpp"
#include "csgi/core/text.hpp"

#include <algorithm>

#include "csgi/core/response.hpp"

namespace csgi::mw {

namespace {


// qvalue = ( "0" [ "." 0*3DIGIT ] ) / ( "1" [ "." 0*3("0") ] ); anything else → -1 (invalid).
double parse_q(std::string_view v) {
  if (v.empty() || v.size() > 5) return -1;
  if (v[0] != '0' && v[0] != '1') return -1;
  double q = v[0] - '0';
  if (v.size() == 1) return q;
  if (v[1] != '.') return -1;
  double scale = 0.1;
  for (std::size_t i = 2; i < v.size(); ++i) {
    if (v[i] < '0' || v[i] > '9') return -1;
    q += (v[i] - '0') * scale;
    scale /= 10;
  }
  return q > 1 ? -1 : q;
}

}  // namespace

double accepted_q(std::string_view header, std::string_view coding) noexcept {
  double exact = -1, star = -1;
  bool want_gzip = iequals(coding, "gzip");
  while (!header.empty()) {
    std::size_t comma = header.find(',');
    std::string_view item = csgi::trim_ows(header.substr(0, comma));
    header = comma == std::string_view::npos ? std::string_view{} : header.substr(comma + 1);
    if (item.empty()) continue;
    std::size_t semi = item.find(';');
    std::string_view name = csgi::trim_ows(item.substr(0, semi));
    double q = 1;
    while (semi != std::string_view::npos) {
      item = item.substr(semi + 1);
      semi = item.find(';');
      std::string_view param = csgi::trim_ows(item.substr(0, semi));
      if (param.size() >= 2 && (param[0] == 'q' || param[0] == 'Q') && param[1] == '=') {
        q = parse_q(csgi::trim_ows(param.substr(2)));
        if (q < 0) q = 0;
      }
    }
    if (iequals(name, coding) || (want_gzip && iequals(name, "x-gzip"))) {
      exact = exact < 0 ? q : std::max(exact, q);
    } else if (name == "*") {
      star = q;
    }
  }
  if (exact >= 0) return exact;
  if (iequals(coding, "identity")) return star == 0 ? 0 : 1;
  return star >= 0 ? star : 0;
}

}  // namespace csgi::mw
