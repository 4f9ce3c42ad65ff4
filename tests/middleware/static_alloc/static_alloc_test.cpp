// Heap allocations of the Static app's fast path: a repeated request for a cached small file is answered
// from what the file cache prepared once (media type, header values, the whole head sealed), so it
// allocates only the checked path. A separate binary: it replaces the global operator new.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <new>

#include "../files_test_util.hpp"
#include "csgi/middleware/static.hpp"

namespace {
thread_local bool counting = false;
thread_local std::size_t allocations = 0;
}  // namespace

void* operator new(std::size_t n) {
  if (counting) ++allocations;
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }

using namespace csgi;
using namespace csgi::mw;

namespace {

/// The allocations one call of `st` makes (the env is built before, the response freed after).
std::size_t allocations_of(const Static& st, const std::string& target,
                           std::vector<std::pair<std::string, std::string>> headers = {}) {
  std::size_t n = 0;
  App app = [&](Env& env) {
    allocations = 0;
    counting = true;
    Response r = st(env);
    counting = false;
    n = allocations;
    return r;
  };
  auto res = testing::call(app, "GET " + target, std::move(headers));
  REQUIRE(res.status == 200);
  return n;
}

}  // namespace

TEST_CASE("static: a cached small file is answered with the head the cache prepared", "[static][file_cache][alloc]") {
  mwtest::TempDir d;
  // A path longer than a short string's inline buffer, a text type (the charset is appended).
  const std::string target = "/assets/stylesheets/application-main.css";
  d.write(target.substr(1), std::string(1024, 'x'));
  StaticOptions o;
  o.root = d.str();
  Static st(o);
  allocations_of(st, target);  // the miss: opened, read, prepared
  // The path checked (1, longer than a short string's inline buffer). The headers are the entry's
  // sealed list, shared (a reference count); no MIME lookup, no string built.
  std::size_t n = allocations_of(st, target);
  INFO("allocations: " << n);
  CHECK(n <= 1);
  CHECK(st.cache_stats().hits == 1);
}
