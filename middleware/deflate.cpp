#include "csgi/middleware/deflate.hpp"

#include <zlib.h>

#include <memory>
#include <stdexcept>
#include <vector>

#include "csgi/core/on_response.hpp"
#include "csgi/middleware/accept_encoding.hpp"
#include "csgi/middleware/mime_types.hpp"

namespace csgi::mw {

namespace {

enum class Coding { identity, gzip, deflate };

/// A zlib deflate state. Setting one up (deflateInit2: ~270 KiB of tables and window) costs more than
/// compressing a small body, so each thread keeps a few finished ones and deflateReset()s them.
struct ZState {
  z_stream z{};
  int window = 0, level = 0;
  ZState(int w, int l) : window(w), level(l) {
    if (deflateInit2(&z, level, Z_DEFLATED, window, 8, Z_DEFAULT_STRATEGY) != Z_OK)
      throw std::runtime_error("deflateInit2 failed");
  }
  ~ZState() { deflateEnd(&z); }
  ZState(const ZState&) = delete;
  ZState& operator=(const ZState&) = delete;
};

constexpr std::size_t pool_max = 4;
thread_local std::vector<std::unique_ptr<ZState>> pool;

std::unique_ptr<ZState> acquire(int window, int level) {
  for (auto it = pool.begin(); it != pool.end(); ++it) {
    if ((*it)->window == window && (*it)->level == level) {
      std::unique_ptr<ZState> s = std::move(*it);
      pool.erase(it);
      return s;
    }
  }
  return std::make_unique<ZState>(window, level);
}

void release(std::unique_ptr<ZState> s) {
  if (pool.size() >= pool_max || deflateReset(&s->z) != Z_OK) return;  // freed here
  pool.push_back(std::move(s));
}

class Compressor {
public:
  Compressor(Coding c, int level, bool sync_each_chunk)
      : state_(acquire(c == Coding::gzip ? 15 + 16 : 15, level)), z_(state_->z), sync_(sync_each_chunk) {}
  ~Compressor() {
    if (done_) release(std::move(state_));  // an unfinished stream is freed, not reused
  }
  Compressor(const Compressor&) = delete;
  Compressor& operator=(const Compressor&) = delete;

  std::string run(std::string_view in, bool eof) {
    std::string out;
    if (done_) return out;
    int flush = eof ? Z_FINISH : (sync_ && !in.empty() ? Z_SYNC_FLUSH : Z_NO_FLUSH);
    z_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
    z_.avail_in = static_cast<uInt>(in.size());
    std::size_t step = std::max<std::size_t>(4096, deflateBound(&z_, static_cast<uLong>(in.size())) / 2);
    while (true) {
      std::size_t have = out.size();
      out.resize(have + step);
      z_.next_out = reinterpret_cast<Bytef*>(out.data() + have);
      z_.avail_out = static_cast<uInt>(step);
      int rc = deflate(&z_, flush);
      out.resize(have + step - z_.avail_out);
      if (rc == Z_STREAM_END) {
        done_ = true;
        break;
      }
      if (rc == Z_BUF_ERROR) break;  // nothing more to do for this call
      if (rc != Z_OK) throw std::runtime_error("deflate failed");
      if (z_.avail_out != 0 && z_.avail_in == 0 && flush != Z_FINISH) break;
    }
    return out;
  }

private:
  std::unique_ptr<ZState> state_;
  z_stream& z_;
  bool sync_;
  bool done_ = false;
};

bool has_no_transform(std::string_view cc) {
  std::size_t i = 0;
  while ((i = cc.find('-', i)) != std::string_view::npos) {
    if (i >= 2 && iequals(cc.substr(i - 2, 12), "no-transform")) return true;
    ++i;
  }
  return false;
}

}  // namespace

Deflate::Deflate(App next, DeflateOptions options) : next_(std::move(next)), o_(std::move(options)) {
  if (o_.level < 1 || o_.level > 9) throw std::invalid_argument("Deflate: level must be 1…9");
  if (!o_.compressible) o_.compressible = [](std::string_view t) { return is_compressible_type(t); };
}

Response Deflate::operator()(Env& env) {
  if (env.get(keys::REQUEST_METHOD) == "HEAD" || env.flag("deflate.skip")) return next_(env);
  std::string_view ae = env.get(keys::HTTP_ACCEPT_ENCODING);
  double qg = o_.gzip ? accepted_q(ae, "gzip") : 0;
  double qd = o_.deflate ? accepted_q(ae, "deflate") : 0;
  Coding coding = Coding::identity;
  if (qg > 0 && qg >= qd) coding = Coding::gzip;
  else if (qd > 0) coding = Coding::deflate;

  return on_response(next_(env), [coding, this](Response& res) -> BodyFilter {
    if (status_has_no_body(res.status) || res.status == 206) return nullptr;
    if (res.headers.has("Content-Range")) return nullptr;
    if (auto ce = res.headers.get("Content-Encoding"); ce && !iequals(*ce, "identity")) return nullptr;
    auto type = res.headers.get("Content-Type");
    if (!type || !o_.compressible(*type)) return nullptr;
    if (auto cc = res.headers.get("Cache-Control"); cc && has_no_transform(*cc)) return nullptr;

    add_vary(res.headers, "Accept-Encoding");

    if (coding == Coding::identity) return nullptr;
    auto known = res.known_length();
    if (known && *known < o_.min_length) return nullptr;

    res.headers.remove("Content-Encoding");
    res.headers.add("Content-Encoding", coding == Coding::gzip ? "gzip" : "deflate");
    res.headers.remove("Content-Length");
    res.headers.remove("Accept-Ranges");
    if (auto etag = res.headers.get("ETag"); etag && etag->substr(0, 2) != "W/")
      res.headers.set("ETag", "W/" + std::string(*etag));
    bool streaming = std::holds_alternative<StreamPtr>(res.body);
    auto z = std::make_shared<Compressor>(coding, o_.level, streaming);
    return [z](std::string_view chunk, bool eof) { return z->run(chunk, eof); };
  });
}

}  // namespace csgi::mw
