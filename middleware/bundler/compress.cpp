#include "csgi/middleware/bundler/detail/compress.hpp"

#include <brotli/encode.h>
#include <zlib.h>

#include <algorithm>
#include <stdexcept>

#include "csgi/middleware/accept_encoding.hpp"

namespace csgi::mw::bundler {

std::string_view coding_name(Coding c) noexcept {
  switch (c) {
    case Coding::gzip: return "gzip";
    case Coding::br: return "br";
    default: return "identity";
  }
}

namespace {
// Whether the header names `coding` itself (not through `*`).
bool lists(std::string_view ae, std::string_view coding) noexcept {
  while (!ae.empty()) {
    auto comma = ae.find(',');
    std::string_view item = ae.substr(0, comma);
    item = item.substr(0, item.find(';'));
    while (!item.empty() && (item.front() == ' ' || item.front() == '\t')) item.remove_prefix(1);
    while (!item.empty() && (item.back() == ' ' || item.back() == '\t')) item.remove_suffix(1);
    if (item.size() == coding.size() &&
        std::equal(item.begin(), item.end(), coding.begin(), [](char a, char b) { return (a | 0x20) == (b | 0x20); }))
      return true;
    if (comma == std::string_view::npos) break;
    ae.remove_prefix(comma + 1);
  }
  return false;
}
}  // namespace

Coding choose_coding(std::string_view ae) noexcept {
  if (ae.empty()) return Coding::identity;
  double br = accepted_q(ae, "br"), gz = accepted_q(ae, "gzip");
  // identity competes by its q-value only when listed; otherwise it is the fallback.
  double id = lists(ae, "identity") ? accepted_q(ae, "identity") : 0;
  if (br > 0 && br >= gz && br >= id) return Coding::br;
  if (gz > 0 && gz >= id) return Coding::gzip;
  return Coding::identity;
}

std::string gzip(std::string_view data, int level) {
  z_stream z{};
  if (deflateInit2(&z, level, Z_DEFLATED, 15 + 16, 9, Z_DEFAULT_STRATEGY) != Z_OK)
    throw std::runtime_error("bundler: deflateInit2 failed");
  std::string out;
  out.resize(deflateBound(&z, uLong(data.size())));
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = uInt(data.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = uInt(out.size());
  int rc = deflate(&z, Z_FINISH);
  std::size_t n = z.total_out;
  deflateEnd(&z);
  if (rc != Z_STREAM_END) throw std::runtime_error("bundler: gzip compression failed");
  out.resize(n);
  return out;
}

std::string brotli(std::string_view data, int quality) {
  std::string out;
  out.resize(BrotliEncoderMaxCompressedSize(data.size()) + 64);
  std::size_t n = out.size();
  if (!BrotliEncoderCompress(quality, BROTLI_DEFAULT_WINDOW, BROTLI_MODE_TEXT, data.size(),
                             reinterpret_cast<const std::uint8_t*>(data.data()), &n,
                             reinterpret_cast<std::uint8_t*>(out.data())))
    throw std::runtime_error("bundler: brotli compression failed");
  out.resize(n);
  return out;
}

}  // namespace csgi::mw::bundler
