#include "csgi/core/http_date.hpp"

#include <cstdio>
#include <cstring>

namespace csgi {

namespace {
constexpr const char* kDays[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
constexpr const char* kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};

int month_index(const char* m) {
  for (int i = 0; i < 12; ++i)
    if (std::strncmp(m, kMonths[i], 3) == 0) return i;
  return -1;
}
}  // namespace

std::string http_date(std::time_t t) {
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[40];
  int n = std::snprintf(buf, sizeof buf, "%s, %02d %s %04d %02d:%02d:%02d GMT", kDays[tm.tm_wday], tm.tm_mday,
                        kMonths[tm.tm_mon], tm.tm_year + 1900, tm.tm_hour, tm.tm_min, tm.tm_sec);
  return std::string(buf, static_cast<std::size_t>(n));
}

std::string_view http_date_now() {
  thread_local std::time_t cached_at = 0;
  thread_local char buf[40];
  thread_local std::size_t len = 0;
  std::time_t now = std::time(nullptr);
  if (now != cached_at) {
    std::string s = http_date(now);
    std::memcpy(buf, s.data(), s.size());
    len = s.size();
    cached_at = now;
  }
  return {buf, len};
}

std::optional<std::time_t> parse_http_date(std::string_view s) {
  if (s.size() > 64) return std::nullopt;
  char in[65];
  std::memcpy(in, s.data(), s.size());
  in[s.size()] = '\0';
  std::tm tm{};
  char wday[16], mon[4];
  int day, year, h, m, sec;
  char tail[8];
  if (std::sscanf(in, "%3s, %2d %3s %4d %2d:%2d:%2d %3s", wday, &day, mon, &year, &h, &m, &sec, tail) == 8 &&
      std::strcmp(tail, "GMT") == 0) {
  } else if (std::sscanf(in, "%15[A-Za-z], %2d-%3s-%2d %2d:%2d:%2d %3s", wday, &day, mon, &year, &h, &m, &sec, tail) ==
                 8 &&
             std::strcmp(tail, "GMT") == 0) {
    year += year < 70 ? 2000 : 1900;
  } else if (std::sscanf(in, "%3s %3s %d %2d:%2d:%2d %4d", wday, mon, &day, &h, &m, &sec, &year) == 7) {
  } else {
    return std::nullopt;
  }
  int mi = month_index(mon);
  if (mi < 0 || day < 1 || day > 31 || h > 23 || m > 59 || sec > 60 || year < 1970) return std::nullopt;
  tm.tm_year = year - 1900;
  tm.tm_mon = mi;
  tm.tm_mday = day;
  tm.tm_hour = h;
  tm.tm_min = m;
  tm.tm_sec = sec;
  return timegm(&tm);
}

}  // namespace csgi
