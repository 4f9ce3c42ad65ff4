#include "csgi/middleware/bundler/detail/shake_plan.hpp"

#include <algorithm>
#include <deque>
#include <set>
#include <string>

namespace csgi::mw::bundler {

namespace {

constexpr char kB64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

}  // namespace

int base64url_value(char c) noexcept {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '-') return 62;
  if (c == '_') return 63;
  return -1;
}

namespace {

class Planner {
 public:
  Planner(Graph& g, const Closure& c, const std::function<bool(std::uint32_t)>& loaded,
          const std::unordered_map<std::uint32_t, UnitSet>& held)
      : g_(g), c_(c), loaded_(loaded) {
    for (auto id : c.order) {
      Module& m = g.at(id);
      if (!m.esm || !m.shake) continue;
      const std::size_t n = m.shake->units.size() + 1;
      UnitSet& k = plan_.kept[id];
      if (loaded(id)) {
        auto h = held.find(id);
        k = h == held.end() ? UnitSet(n, true) : h->second;
        k.resize(n, false);
        k[0] = true;
      } else {
        k.assign(n, false);
      }
    }
  }

  ShakePlan run(std::uint32_t entry) {
    for (auto id : c_.order) {
      if (loaded_(id)) continue;  // what it holds was followed when it was delivered
      Module& m = g_.at(id);
      if (m.esm && m.shake)
        keep(m, 0);
      else if (m.esm)
        unshaken_imports(m);
      else
        requires_of(m);
    }
    need_all(entry);
    while (!work_.empty()) {
      auto [id, u] = work_.front();
      work_.pop_front();
      Module& m = g_.at(id);
      for (auto v : m.shake->uses[u]) keep(m, v);
      for (const auto& [req, name] : m.shake->imports[u]) via(m, req, name);
    }
    return std::move(plan_);
  }

 private:
  void keep(Module& m, std::uint32_t u) {
    UnitSet& k = plan_.kept[m.id];
    if (u >= k.size() || k[u]) return;
    k[u] = true;
    work_.push_back({m.id, u});
  }
  // An ES module without a table: everything in it runs, so every binding it imports is needed.
  void unshaken_imports(Module& m) {
    for (const auto& b : m.esm->import_bindings) via(m, b.request, b.imported);
  }
  // A CommonJS module: require() gets the whole namespace of an ES module.
  void requires_of(Module& m) {
    for (std::size_t k = 0; k < m.edges.size(); ++k)
      if (m.edges[k].status == Resolved::ok) need_all(m.edges[k].target);
  }
  // The import of `name` through m's request `req` (an edge, or a barrel view over it).
  void via(Module& m, std::uint32_t req, const std::string& name) {
    if (req >= m.edges.size() || m.edges[req].status != Resolved::ok) return;
    auto view = c_.views.find({m.id, req});
    if (view == c_.views.end()) {
      if (name == "*")
        need_all(m.edges[req].target);
      else
        need(m.edges[req].target, name);
      return;
    }
    for (const auto& t : view->second)
      if (name == "*" || t.name == name) {
        if (t.imported == "*")
          need_all(t.id);
        else
          need(t.id, t.imported);
      }
  }
  std::optional<std::uint32_t> request_of(const Module& m, const std::string& spec) const {
    for (std::size_t k = 0; k < m.edges.size(); ++k)
      if (m.edges[k].spec == spec) return std::uint32_t(k);
    return std::nullopt;
  }
  void need(std::uint32_t id, const std::string& name) {
    Module& m = g_.at(id);
    if (!m.esm || all_.count(id)) return;
    if (!needed_[id].insert(name).second) return;
    for (const auto& [exported, local] : m.esm->local_exports) {
      if (exported != name) continue;
      if (m.shake) {
        auto u = m.shake->unit_of.find(local);
        if (u != m.shake->unit_of.end()) keep(m, u->second);
      }
      return;
    }
    for (const auto& r : m.esm->reexports) {
      if (r[0] != name) continue;
      if (auto req = request_of(m, r[1])) via(m, *req, r[2]);
      return;
    }
    if (name == "default") return;
    for (const auto& s : m.esm->stars)
      if (auto req = request_of(m, s)) via(m, *req, name);
  }
  void need_all(std::uint32_t id) {
    Module& m = g_.at(id);
    if (!m.esm || !all_.insert(id).second) return;
    if (m.shake)
      for (std::uint32_t u = 1; u <= m.shake->units.size(); ++u) keep(m, u);
    for (const auto& r : m.esm->reexports)
      if (auto req = request_of(m, r[1])) via(m, *req, r[2]);
    for (const auto& s : m.esm->stars)
      if (auto req = request_of(m, s)) via(m, *req, "*");
  }

  Graph& g_;
  const Closure& c_;
  const std::function<bool(std::uint32_t)>& loaded_;
  ShakePlan plan_;
  std::deque<std::pair<std::uint32_t, std::uint32_t>> work_;
  std::set<std::uint32_t> all_;
  std::unordered_map<std::uint32_t, std::set<std::string>> needed_;
};

}  // namespace

ShakePlan plan_shake(Graph& graph, const Closure& closure, std::uint32_t entry,
                     const std::function<bool(std::uint32_t)>& loaded,
                     const std::unordered_map<std::uint32_t, UnitSet>& held) {
  return Planner(graph, closure, loaded, held).run(entry);
}

std::string encode_units(const UnitSet& units) {
  std::string out;
  for (std::size_t u = 1; u < units.size(); ++u) {
    std::size_t i = (u - 1) / 6, b = (u - 1) % 6;
    if (out.size() <= i) out.resize(i + 1, 0);
    if (units[u]) out[i] = char(out[i] | (1 << b));
  }
  for (char& c : out) c = kB64[static_cast<unsigned char>(c)];
  while (!out.empty() && out.back() == 'A') out.pop_back();
  return out;
}

std::optional<UnitSet> decode_units(std::string_view text, std::size_t units) {
  UnitSet out(units + 1, false);
  out[0] = true;
  for (std::size_t i = 0; i < text.size(); ++i) {
    int v = base64url_value(text[i]);
    if (v < 0) return std::nullopt;
    for (int b = 0; b < 6; ++b) {
      std::size_t u = i * 6 + std::size_t(b) + 1;
      if ((v >> b) & 1 && u <= units) out[u] = true;
    }
  }
  return out;
}

}  // namespace csgi::mw::bundler
