#include "csgi/middleware/server_status.hpp"
#include "csgi/core/text.hpp"

#include <cmath>
#include <cstdio>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "csgi/core/accept.hpp"
#include "csgi/core/http_date.hpp"
#include "csgi/core/on_response.hpp"

namespace csgi::mw {

namespace {


bool query_has(std::string_view query, std::string_view name, std::string_view value = {}) {
  while (!query.empty()) {
    auto amp = query.find('&');
    std::string_view pair = query.substr(0, amp);
    query.remove_prefix(amp == std::string_view::npos ? query.size() : amp + 1);
    auto eq = pair.find('=');
    std::string_view k = pair.substr(0, eq);
    std::string_view v = eq == std::string_view::npos ? std::string_view{} : pair.substr(eq + 1);
    if (k == name && (value.empty() || v == value)) return true;
  }
  return false;
}


std::string duration(double seconds) {
  auto t = static_cast<unsigned long long>(seconds);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%llud %lluh %llum %llus", t / 86400, t / 3600 % 24, t / 60 % 60, t % 60);
  return buf;
}

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

double per_second(const ServerStats::Snapshot& s) {
  return s.uptime_seconds > 0 ? static_cast<double>(s.requests_total) / s.uptime_seconds : 0.0;
}

std::string start_date(const ServerStats::Snapshot& s) {
  return http_date(std::chrono::system_clock::to_time_t(s.start_time));
}

}  // namespace

ServerStatusApp::ServerStatusApp(ServerStatusOptions options) : options_(std::move(options)) {}

ServerStatusApp::Format ServerStatusApp::negotiate(const Env& env) {
  std::string_view q = env.get(keys::QUERY_STRING);
  if (query_has(q, "json") || query_has(q, "format", "json")) return Format::json;
  if (query_has(q, "auto") || query_has(q, "format", "text")) return Format::text;
  if (query_has(q, "format", "html")) return Format::html;
  std::string_view accept = env.get(keys::HTTP_ACCEPT);
  if (accept.empty()) return Format::html;
  double json = accept_q(accept, "application/json");
  double html = accept_q(accept, "text/html");
  if (json > html) return Format::json;
  if (html == 0 && accept_q(accept, "text/plain") > 0) return Format::text;
  return Format::html;
}

std::string ServerStatusApp::render_json(const ServerStats::Snapshot& s) {
  // ordered_json keeps the keys in the order written here; numbers in seconds are rounded to 1 ms.
  using J = nlohmann::ordered_json;
  auto millis = [](double v) { return std::round(v * 1000) / 1000; };
  J status_classes = J::object(), statuses = J::object();
  for (std::size_t i = 0; i < s.status_class.size(); ++i)
    status_classes[std::to_string(i + 1) + "xx"] = s.status_class[i];
  for (std::size_t i = 0; i < s.status.size(); ++i)
    statuses[std::to_string(ServerStats::tracked_statuses[i])] = s.status[i];
  statuses["other"] = s.status_other;
  J j = {
      {"start_time", start_date(s)},
      {"uptime_seconds", millis(s.uptime_seconds)},
      {"adapter", s.adapter},
      {"workers", {{"total", s.workers}, {"busy", s.workers_busy}}},
      {"connections", {{"open", s.connections_open}, {"total", s.connections_total}}},
      {"requests", {{"total", s.requests_total}, {"per_second", millis(per_second(s))}}},
      {"bytes_sent", s.bytes_sent},
      {"status_classes", std::move(status_classes)},
      {"statuses", std::move(statuses)},
  };
  return j.dump(-1, ' ', false, J::error_handler_t::replace) + "\n";
}

std::string ServerStatusApp::render_text(const ServerStats::Snapshot& s) {
  std::string t;
  auto line = [&t](std::string_view k, const std::string& v) {
    t.append(k).append(": ").append(v).append("\n");
  };
  line("StartTime", start_date(s));
  line("Uptime", fixed(s.uptime_seconds, 0));
  line("Workers", std::to_string(s.workers));
  line("BusyWorkers", std::to_string(s.workers_busy));
  line("ConnsOpen", std::to_string(s.connections_open));
  line("ConnsTotal", std::to_string(s.connections_total));
  line("Total Accesses", std::to_string(s.requests_total));
  line("ReqPerSec", fixed(per_second(s), 3));
  line("BytesSent", std::to_string(s.bytes_sent));
  for (std::size_t i = 0; i < s.status_class.size(); ++i)
    line("Status" + std::to_string(i + 1) + "xx", std::to_string(s.status_class[i]));
  for (std::size_t i = 0; i < s.status.size(); ++i)
    line("Status" + std::to_string(ServerStats::tracked_statuses[i]), std::to_string(s.status[i]));
  return t;
}

std::string ServerStatusApp::render_html(const ServerStats::Snapshot& s, const std::string& title) {
  std::string t = csgi::html_escape(title);
  std::string h = "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>" + t +
                  "</title>\n<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse;"
                  "margin-bottom:1.5em}td,th{border:1px solid #ccc;padding:.25em .75em;text-align:right}"
                  "th{text-align:left;background:#f4f4f4}</style></head>\n<body><h1>" + t + "</h1>\n<table>\n";
  auto row = [&h](std::string_view k, const std::string& v) {
    h.append("<tr><th>").append(k).append("</th><td>").append(csgi::html_escape(v)).append("</td></tr>\n");
  };
  row("Started", start_date(s));
  row("Uptime", duration(s.uptime_seconds));
  if (!s.adapter.empty()) row("Adapter", std::string(s.adapter));
  row("Workers (busy / total)", std::to_string(s.workers_busy) + " / " + std::to_string(s.workers));
  row("Open connections", std::to_string(s.connections_open));
  row("Accepted connections", std::to_string(s.connections_total));
  row("Requests served", std::to_string(s.requests_total));
  row("Requests per second", fixed(per_second(s), 3));
  row("Bytes sent", std::to_string(s.bytes_sent));
  h += "</table>\n<h2>Responses by status</h2>\n<table>\n";
  for (std::size_t i = 0; i < s.status_class.size(); ++i) row(std::to_string(i + 1) + "xx", std::to_string(s.status_class[i]));
  h += "</table>\n<table>\n";
  for (std::size_t i = 0; i < s.status.size(); ++i)
    row(std::to_string(ServerStats::tracked_statuses[i]), std::to_string(s.status[i]));
  h += "</table>\n</body></html>\n";
  return h;
}

Response ServerStatusApp::operator()(Env& env) const {
  std::string_view method = env.get(keys::REQUEST_METHOD);
  if (method != "GET" && method != "HEAD") {
    Response r = Response::error(405);
    r.headers.add("Allow", "GET, HEAD");
    return r;
  }
  const ServerStats* stats = options_.stats ? options_.stats : env.object<ServerStats>(keys::x::server_stats);
  if (!stats)
    return Response::error(501, "server status: this adapter keeps no server statistics (no csgix.server_stats in "
                                "the env); give ServerStatusOptions::stats to count in the middleware");
  ServerStats::Snapshot s = stats->snapshot();
  Response r;
  switch (negotiate(env)) {
    case Format::json: r = Response::text(200, render_json(s), "application/json"); break;
    case Format::text: r = Response::text(200, render_text(s)); break;
    case Format::html: r = Response::html(200, render_html(s, options_.title)); break;
  }
  r.headers.add("Cache-Control", "no-store");
  r.headers.add("Vary", "Accept");
  return r;
}

ServerStatus::ServerStatus(App next, ServerStatusOptions options)
    : next_(std::move(next)), page_(options), options_(std::move(options)) {
  if (!next_) throw std::invalid_argument("ServerStatus: no next app");
  if (options_.path.empty() || options_.path.front() != '/')
    throw std::invalid_argument("ServerStatus: path must start with '/'");
}

Response ServerStatus::operator()(Env& env) {
  ServerStats* stats = options_.stats;
  bool record = stats && options_.record && !stats->adapter_attached();
  if (record) stats->request_started();
  Response res;
  try {
    res = env.get(keys::PATH_INFO) == options_.path ? page_(env) : next_(env);
  } catch (...) {
    if (record) stats->request_finished(500);
    throw;
  }
  if (!record) return res;
  return on_response(std::move(res), [stats](Response& r) -> BodyFilter {
    stats->request_finished(r.status);
    return {};
  });
}

}  // namespace csgi::mw
