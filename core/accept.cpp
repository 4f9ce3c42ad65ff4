#include "csgi/core/accept.hpp"

#include "csgi/core/text.hpp"

namespace csgi {

namespace {

// qvalue = ( "0" [ "." 0*3DIGIT ] ) / ( "1" [ "." 0*3("0") ] ); anything else counts as 0.
double parse_q(std::string_view v) noexcept {
  if (v.empty() || v.size() > 5 || (v[0] != '0' && v[0] != '1')) return 0;
  double q = v[0] - '0';
  if (v.size() == 1) return q;
  if (v[1] != '.') return 0;
  double scale = 0.1;
  for (std::size_t i = 2; i < v.size(); ++i) {
    if (v[i] < '0' || v[i] > '9') return 0;
    q += (v[i] - '0') * scale;
    scale /= 10;
  }
  return q > 1 ? 0 : q;
}

}  // namespace

double accept_q(std::string_view accept, std::string_view type) noexcept {
  double best = 0;
  int best_rank = -1;
  std::string_view major = type.substr(0, type.find('/'));
  while (!accept.empty()) {
    auto comma = accept.find(',');
    std::string_view item = trim_ows(accept.substr(0, comma));
    accept.remove_prefix(comma == std::string_view::npos ? accept.size() : comma + 1);
    auto semi = item.find(';');
    std::string_view range = trim_ows(item.substr(0, semi));
    double q = 1;
    while (semi != std::string_view::npos) {
      item.remove_prefix(semi + 1);
      semi = item.find(';');
      std::string_view param = trim_ows(item.substr(0, semi));
      if (param.size() >= 2 && (param[0] == 'q' || param[0] == 'Q') && param[1] == '=') q = parse_q(trim_ows(param.substr(2)));
    }
    int rank = -1;
    if (iequals(range, type))
      rank = 2;
    else if (range.size() == major.size() + 2 && iequals(range.substr(0, major.size()), major) &&
             range.substr(major.size()) == "/*")
      rank = 1;
    else if (range == "*/*")
      rank = 0;
    if (rank > best_rank) best_rank = rank, best = q;
  }
  return best;
}

}  // namespace csgi
