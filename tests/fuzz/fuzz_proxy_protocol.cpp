// The PROXY protocol parser (adapters/standalone/detail/transport/proxy_protocol.hpp) on a connection's first bytes, read
// the way the connection reads them: the whole input, and a fuzzer-chosen prefix of it (the bytes of an
// earlier peek). Invariants beyond "no crash":
//  - a decision taken on a prefix (absent, invalid, complete) is final: more bytes never change it, and a
//    complete header has the same length and fields;
//  - a complete header lies within the input and the size limits (v1: ends in CRLF within 107 bytes);
//  - the header alone parses to the same result (the bytes after it are never read);
//  - a v1 TCP4 line is exactly the canonical text of the addresses and ports it gave (no leading zeros,
//    single spaces);
//  - has_signature() is never true for bytes parse() calls absent.
#include <arpa/inet.h>
#include <sys/socket.h>

#include <cstring>
#include <string>
#include <string_view>

#include "csgi/adapters/standalone/detail/transport/proxy_protocol.hpp"
#include "csgi/core/cidr.hpp"
#include "fuzz_support.hpp"

namespace {

using csgi::fuzz::check;
namespace pp = csgi::standalone::detail::proxy_protocol;

bool same(const pp::Result& a, const pp::Result& b) {
  if (a.status != b.status) return false;
  if (a.status != pp::Status::complete) return true;
  const pp::Header &x = a.header, &y = b.header;
  return a.length == b.length && x.version == y.version && x.local == y.local && x.family == y.family &&
         x.src == y.src && x.dst == y.dst && x.src_port == y.src_port && x.dst_port == y.dst_port && x.ssl == y.ssl;
}

std::string v1_tcp4_line(const pp::Header& h) {
  char src[INET_ADDRSTRLEN], dst[INET_ADDRSTRLEN];
  ::inet_ntop(AF_INET, h.src.data(), src, sizeof src);
  ::inet_ntop(AF_INET, h.dst.data(), dst, sizeof dst);
  return std::string("PROXY TCP4 ") + src + " " + dst + " " + std::to_string(h.src_port) + " " +
         std::to_string(h.dst_port) + "\r\n";
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  pp::Result whole = pp::parse(in);
  if (whole.status == pp::Status::absent) check(!pp::has_signature(in), "a signature in bytes called absent");
  if (whole.status == pp::Status::invalid) check(whole.why[0] != '\0', "an invalid header without a reason");

  // A prefix: the first byte of the input chooses its length.
  std::size_t cut = size ? data[0] % (size + 1) : 0;
  pp::Result part = pp::parse(in.substr(0, cut));
  if (part.status != pp::Status::need_more) check(same(part, whole), "a decision on a prefix changed with more bytes");

  if (whole.status == pp::Status::complete) {
    check(whole.length > 0 && whole.length <= size && whole.length <= pp::max_header, "header length within bounds");
    check(same(pp::parse(in.substr(0, whole.length)), whole), "the header alone parses the same");
    if (whole.header.version == 1) {
      check(whole.length <= pp::v1_max && in.substr(whole.length - 2, 2) == "\r\n", "v1 ends in CRLF within 107 bytes");
      if (whole.header.family == AF_INET)
        check(in.substr(0, whole.length) == v1_tcp4_line(whole.header), "a v1 TCP4 line is canonical");
    } else {
      check(whole.header.version == 2 && whole.length >= 16 && whole.length <= pp::v2_max, "v2 length within bounds");
    }
    check(!whole.header.local || whole.header.family == 0, "LOCAL carries no addresses");
  }

  // The same bytes as a --trusted-proxy block and as a peer address.
  std::string_view text = in.substr(0, 64);
  if (auto block = csgi::Cidr::parse(text)) {
    check(block->prefix() <= 128, "a block's prefix fits 128 bits");
    auto own = csgi::IpAddress::parse(text.substr(0, text.find('/')));
    check(own && block->contains(*own), "a block holds the address it is written with");
  }
  return 0;
}
