#!/usr/bin/env python3
"""Writes the bad-request corpus (tests/reliability/cases/*.cases) from the tables below.

Each case is a raw request that is sent, followed in the same write by a pipelined `GET /canary`.
Verdicts:
  reject  the server answers a 4xx/5xx (one of `status` when given), closes the connection, and the
          canary is never answered;
  accept  the request is answered with 2xx (or the given status) and the canary is answered exactly once;
  either  rejecting or accepting are both conforming; whichever happens must be consistent (no desync).
In every case no response may come from a smuggled request (path /smuggled).

Run it again after editing the tables: `python3 tests/reliability/gen_cases.py`.
"""
import os

HERE = os.path.dirname(os.path.abspath(__file__))
CASES = []
SMUGGLE = "GET /smuggled HTTP/1.1\r\nHost: a\r\n\r\n"


def case(group, name, request, verdict, status=None, note=""):
    if any(ord(c) > 0xFF for c in request):  # send non-Latin-1 text as its UTF-8 bytes
        request = request.encode("utf-8").decode("latin-1")
    CASES.append((group, name, request, verdict, status, note))


def encode(request):
    """One line of text: Python escapes, and runs of one byte longer than 64 as {{c*N}} (c is hex)."""
    out, i = [], 0
    while i < len(request):
        j = i
        while j < len(request) and request[j] == request[i]:
            j += 1
        if j - i > 64:
            out.append("{{%02x*%d}}" % (ord(request[i]), j - i))
        else:
            out.append(request[i:j].encode("latin-1").decode("latin-1").encode("unicode_escape").decode("ascii").replace("{", "\\x7b"))
        i = j
    return "".join(out)


def post(headers, body, version="HTTP/1.1", target="/echo"):
    head = f"POST {target} {version}\r\n" + "".join(h + "\r\n" for h in headers) + "\r\n"
    return head + body


# --- smuggling: Transfer-Encoding / Content-Length -------------------------------------------------------
chunked_body = "5\r\nhello\r\n0\r\n\r\n"
smuggle_body = "0\r\n\r\n" + SMUGGLE
case("smuggling", "te-and-cl", post(["Host: a", "Content-Length: 5", "Transfer-Encoding: chunked"], chunked_body), "reject", "400", "RFC 9112 6.1")
case("smuggling", "cl-and-te", post(["Host: a", "Transfer-Encoding: chunked", "Content-Length: 5"], chunked_body), "reject", "400")
case("smuggling", "te-cl-smuggle", post(["Host: a", "Transfer-Encoding: chunked", "Content-Length: 40"], smuggle_body), "reject", "400")
case("smuggling", "cl-te-smuggle", post(["Host: a", "Content-Length: 4", "Transfer-Encoding: chunked"], smuggle_body), "reject", "400")
for i, te in enumerate(["chunked", "Chunked", "CHUNKED", "cHuNkEd", "chunked ", " chunked", "\tchunked", "chunked\t"]):
    case("te-accepted", f"te-form-{i}", post(["Host: a", "Transfer-Encoding: " + te], chunked_body), "accept", "200", repr(te))
bad_te = {
    "chunked-identity": "chunked, identity",
    "identity-chunked": "identity, chunked",
    "identity": "identity",
    "gzip-chunked": "gzip, chunked",
    "gzip": "gzip",
    "deflate": "deflate",
    "compress": "compress",
    "quoted": '"chunked"',
    "vtab": "\x0bchunked",
    "formfeed": "\x0cchunked",
    "xchunked": "xchunked",
    "chunked-x": "chunkedx",
    "chunked-semicolon": "chunked;q=1",
    "chunked-chunked": "chunked, chunked",
    "comma-only": ",",
    "empty": "",
    "nul": "chunked\x00",
    "underscore": "chun_ked",
    "space-inside": "chun ked",
    "unicode-k": "chun\u212aed",
}
for name, te in bad_te.items():
    st = "400|501" if name not in ("chunked-chunked",) else "400"
    case("te-rejected", f"te-{name}", post(["Host: a", "Transfer-Encoding: " + te], smuggle_body), "reject", st, repr(te))
case("te-accepted", "te-chunked-trailing-comma", post(["Host: a", "Transfer-Encoding: chunked,"], chunked_body), "either", "200|400", "empty list elements are allowed (RFC 9110 5.6.1)")
case("te-rejected", "te-two-headers-chunked", post(["Host: a", "Transfer-Encoding: chunked", "Transfer-Encoding: chunked"], chunked_body), "reject", "400", "chunked applied twice")
case("te-rejected", "te-two-headers-identity", post(["Host: a", "Transfer-Encoding: identity", "Transfer-Encoding: chunked"], chunked_body), "reject", "400|501")
case("te-rejected", "te-two-headers-gzip-first", post(["Host: a", "Transfer-Encoding: gzip", "Transfer-Encoding: chunked"], chunked_body), "reject", "400|501")
case("te-rejected", "te-http10", post(["Host: a", "Transfer-Encoding: chunked"], chunked_body, "HTTP/1.0"), "reject", "400", "RFC 9112 6.1: chunked in 1.0")
case("te-rejected", "te-name-space-before-colon", post(["Host: a", "Transfer-Encoding : chunked"], smuggle_body), "reject", "400")
case("te-rejected", "te-name-tab-before-colon", post(["Host: a", "Transfer-Encoding\t: chunked"], smuggle_body), "reject", "400")
case("te-rejected", "te-obs-fold", post(["Host: a", "Transfer-Encoding:", " chunked"], smuggle_body), "reject", "400")
case("te-rejected", "te-obs-fold-tab", post(["Host: a", "Transfer-Encoding: gzip,", "\tchunked"], smuggle_body), "reject", "400|501")
case("te-rejected", "te-leading-space-name", post(["Host: a", " Transfer-Encoding: chunked"], smuggle_body), "reject", "400")
case("te-rejected", "te-x-prefixed", post(["Host: a", "X-Transfer-Encoding: chunked", "Content-Length: 5"], "hello"), "accept", "200", "an unrelated header")

cl_ok = {"plain": "5", "ows": " 5 ", "tab-ows": "\t5"}
for name, v in cl_ok.items():
    case("content-length", f"cl-{name}", post(["Host: a", "Content-Length: " + v], "hello"), "accept", "200", repr(v))
cl_bad = {
    "negative": "-5", "plus": "+5", "hex": "0x5", "two-values-differ": "5, 6", "two-numbers": "5 5",
    "letters": "five", "empty": "", "decimal": "5.0", "comma-end": "5,", "overflow": "99999999999999999999999",
    "nul": "5\x00", "vtab": "\x0b5", "semicolon": "5;", "exponent": "5e0", "leading-comma": ",5",
}
for name, v in cl_bad.items():
    case("content-length", f"cl-{name}", post(["Host: a", "Content-Length: " + v], "hello" + SMUGGLE), "reject", "400|413", repr(v))
case("content-length", "cl-duplicate-differ", post(["Host: a", "Content-Length: 5", "Content-Length: 6"], "hello" + SMUGGLE), "reject", "400")
case("content-length", "cl-duplicate-same", post(["Host: a", "Content-Length: 5", "Content-Length: 5"], "hello"), "either", "200|400", "RFC 9110 8.6 allows either")
case("content-length", "cl-list-same", post(["Host: a", "Content-Length: 5, 5"], "hello"), "either", "200|400")
case("content-length", "cl-leading-zeros", post(["Host: a", "Content-Length: 0005"], "hello"), "either", "200|400")
case("content-length", "cl-zero", post(["Host: a", "Content-Length: 0"], ""), "accept", "200")
case("content-length", "cl-on-get", "GET /echo HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello", "accept", "200", "body on GET is consumed")
case("content-length", "cl-too-large", post(["Host: a", "Content-Length: 99999999999"], "x"), "reject", "413")
case("content-length", "cl-smuggle-body", post(["Host: a", "Content-Length: " + str(len(SMUGGLE))], SMUGGLE), "accept", "200", "a request inside a body stays body")
case("content-length", "cl-name-case", post(["Host: a", "content-LENGTH: 5"], "hello"), "accept", "200")

# --- chunked body syntax --------------------------------------------------------------------------------
def chunked(body):
    return post(["Host: a", "Transfer-Encoding: chunked"], body)

chunk_ok = {
    "simple": "5\r\nhello\r\n0\r\n\r\n",
    "two-chunks": "2\r\nhe\r\n3\r\nllo\r\n0\r\n\r\n",
    "upper-hex": "A\r\n0123456789\r\n0\r\n\r\n",
    "leading-zeros": "005\r\nhello\r\n0\r\n\r\n",
    "extension": "5;name=value\r\nhello\r\n0\r\n\r\n",
    "extension-quoted": "5;name=\"va lue\"\r\nhello\r\n0\r\n\r\n",
    "extension-bare": "5;flag\r\nhello\r\n0\r\n\r\n",
    "trailer": "5\r\nhello\r\n0\r\nX-Trailer: yes\r\n\r\n",
    "last-chunk-zeros": "5\r\nhello\r\n000\r\n\r\n",
    "empty-body": "0\r\n\r\n",
}
for name, body in chunk_ok.items():
    case("chunked", f"chunk-{name}", chunked(body), "accept", "200")
chunk_bad = {
    "hex-prefix": "0x5\r\nhello\r\n0\r\n\r\n",
    "negative": "-5\r\nhello\r\n0\r\n\r\n",
    "size-letters": "zz\r\nhello\r\n0\r\n\r\n",
    "size-empty": "\r\nhello\r\n0\r\n\r\n",
    "size-space-inside": "5 5\r\nhello\r\n0\r\n\r\n",
    "data-too-long": "3\r\nhello\r\n0\r\n\r\n",
    "data-too-short": "9\r\nhello\r\n0\r\n\r\n" + SMUGGLE,
    "missing-crlf-after-data": "5\r\nhello0\r\n\r\n",
    "lf-only-after-size": "5\nhello\r\n0\r\n\r\n",
    "cr-only-after-size": "5\rhello\r\n0\r\n\r\n",
    "huge-size": "ffffffffffffffffffff\r\nhello\r\n0\r\n\r\n",
    "size-overflow-64": "10000000000000000\r\nhello\r\n0\r\n\r\n",
    "nul-in-size": "5\x00\r\nhello\r\n0\r\n\r\n",
    "bad-trailer": "5\r\nhello\r\n0\r\nBad Trailer: x\r\n\r\n",
    "trailer-no-colon": "5\r\nhello\r\n0\r\nnocolon\r\n\r\n",
    "ext-bare-cr": "5;a=b\rc\r\nhello\r\n0\r\n\r\n",
    "ext-nul": "5;a=\x00\r\nhello\r\n0\r\n\r\n",
    "huge-extension": "5;" + "a" * 70000 + "\r\nhello\r\n0\r\n\r\n",
    "underscore-size": "5_0\r\nhello\r\n0\r\n\r\n",
    "plus-size": "+5\r\nhello\r\n0\r\n\r\n",
}
for name, body in chunk_bad.items():
    case("chunked", f"chunk-{name}", chunked(body), "reject", "400|413")
case("chunked", "chunk-too-large-total", chunked("".join("ffff\r\n" + "x" * 0xffff + "\r\n" for _ in range(20)) + "0\r\n\r\n"), "reject", "413", "more than the 1 MiB body limit the runner sets")

# --- request line: methods, targets, versions -----------------------------------------------------------
def get(target="/", version="HTTP/1.1", method="GET", headers=("Host: a",)):
    return f"{method} {target} {version}\r\n" + "".join(h + "\r\n" for h in headers) + "\r\n"

for m in ["GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "PATCH", "PROPFIND", "M-SEARCH", "X_CUSTOM"]:
    req = get(method=m) if m not in ("POST", "PUT", "PATCH") else get(method=m, headers=("Host: a", "Content-Length: 0"))
    case("methods", f"method-{m.lower()}", req, "accept", "200|204|405|501")
bad_methods = {"space": "G ET", "tab": "GET\t", "nul": "G\x00T", "paren": "GET()", "at": "GE@T", "utf8": "G\u00c9T",
               "colon": "GET:", "slash": "GET/", "empty": "", "quote": '"GET"', "bracket": "[GET]", "ctl": "GE\x01T"}
for name, m in bad_methods.items():
    case("methods", f"bad-method-{name}", get(method=m), "reject", "400|501")
case("methods", "lowercase-get", get(method="get"), "either", "200|400|405|501", "methods are case-sensitive tokens")
case("methods", "long-method", get(method="A" * 300), "either", "200|400|405|414|501", "a long token is still a method")
case("methods", "connect-authority", get(method="CONNECT", target="example.com:443"), "reject", "400|405|501")

versions_bad = {"1.2": "HTTP/1.2", "2.0": "HTTP/2.0", "3.0": "HTTP/3.0", "0.9": "HTTP/0.9", "lower": "http/1.1",
                "no-minor": "HTTP/1", "two-digit": "HTTP/1.10", "spaces": "HTTP/ 1.1", "junk": "FOO/1.1",
                "missing": "", "trailing-space": "HTTP/1.1 ", "nul": "HTTP/1.1\x00", "9.9": "HTTP/9.9", "letters": "HTTP/a.b"}
for name, v in versions_bad.items():
    case("versions", f"version-{name}", get(version=v), "reject", "400|505")
case("versions", "http10-no-host", get(version="HTTP/1.0", headers=()), "accept", "200", "canary: no (Host is optional in 1.0, which closes by default)")
case("versions", "http10-keepalive", get(version="HTTP/1.0", headers=("Connection: keep-alive",)), "accept", "200")

targets_ok = {"root": "/", "query": "/echo?a=1&b=2", "encoded": "/echo/a%20b", "double-slash": "//echo///x",
              "absolute": "http://a/echo", "absolute-port": "http://a:80/echo?x", "dot-segments": "/a/../echo",
              "encoded-slash": "/echo%2Fx", "utf8": "/\u00e9cho".encode().decode('latin-1'), "semicolon": "/echo;a=b",
              "long-ok": "/" + "a" * 2000, "fragmentish": "/echo%23x", "tilde": "/~user", "plus": "/a+b", "empty-query": "/echo?"}
case("targets", "target-raw-fragment", get(target="/echo#frag"), "reject", "400", "'#' is not in request-target (RFC 9112 3.2)")
for name, t in targets_ok.items():
    case("targets", f"target-{name}", get(target=t), "accept", "200|404")
targets_bad = {"relative": "echo", "nul-encoded": "/a%00b", "bad-escape": "/a%zz", "short-escape": "/a%4",
               "space": "/a b", "nul-raw": "/a\x00b", "asterisk-get": "*", "ctl": "/a\x01b", "del": "/a\x7fb",
               "too-long": "/" + "a" * 20000, "empty": "", "backslash-abs": "\\a", "cr": "/a\rb",
               "lf-in-target": "/a\nb", "tab": "/a\tb", "brace-scheme": "{}://a/", "ftp-scheme": "ftp://a/",
               "dot-above-root": "/../echo", "dot-encoded-above-root": "/a/%2e%2e/%2e%2e/echo",
               "dot-after-empty-segment": "/a//../echo"}
for name, t in targets_bad.items():
    st = "414" if name == "too-long" else "400|414"
    case("targets", f"bad-target-{name}", get(target=t), "reject", st)

# --- Host ------------------------------------------------------------------------------------------------
case("host", "host-missing-11", get(headers=()), "reject", "400", "RFC 9112 3.2")
case("host", "host-twice", get(headers=("Host: a", "Host: b")), "reject", "400")
case("host", "host-twice-same", get(headers=("Host: a", "Host: a")), "reject", "400")
for name, h in {"port": "a:8080", "ipv4": "127.0.0.1", "ipv6": "[::1]:80", "upper": "EXAMPLE.com", "trailing-dot": "a.", "ows": " a "}.items():
    case("host", f"host-{name}", get(headers=("Host: " + h,)), "accept", "200")
for name, h in {"space": "a b", "at": "user@a", "slash": "a/b", "nul": "a\x00", "bad-port": "a:port", "ctl": "a\x01",
                "bracket-open": "[::1", "comma-list": "a, b", "backslash": "a\\b", "empty": ""}.items():
    case("host", f"bad-host-{name}", get(headers=("Host: " + h,)), "reject", "400")
case("host", "absolute-form-wins", get(target="http://b/echo", headers=("Host: a",)), "accept", "200")

# --- header syntax ---------------------------------------------------------------------------------------
hdr_bad = {
    "space-in-name": "Foo Bar: x", "no-colon": "NoColon", "empty-name": ": x", "ctl-in-name": "Fo\x01o: x",
    "nul-in-value": "Foo: a\x00b", "cr-in-value": "Foo: a\rb", "ctl-in-value": "Foo: a\x01b", "del-in-name": "Fo\x7fo: x",
    "utf8-name": "F\u00f6o: x", "paren-name": "Foo(): x", "obs-fold": "Foo: a\r\n b", "obs-fold-tab": "Foo: a\r\n\tb",
    "leading-ws-first": " Foo: x", "colon-only": ":", "quote-name": '"Foo": x', "slash-name": "Fo/o: x",
    "lf-line": "Foo: x\nBar: y", "esc-in-value": "Foo: \x1b[31m",
}
for name, h in hdr_bad.items():
    case("headers", f"bad-header-{name}", get(headers=("Host: a", h)), "reject", "400")
hdr_ok = {"obs-text": "Foo: caf\u00e9".encode().decode('latin-1'), "empty-value": "Foo:", "tab-value": "Foo:\ta\tb",
          "long-value": "Foo: " + "v" * 4000, "many-colons": "Foo: a:b:c", "underscore-name": "X_Foo: dropped",
          "proxy": "Proxy: http://evil/", "repeat": "X-A: 1\r\nX-A: 2", "trailing-ws": "Foo: x   "}
for name, h in hdr_ok.items():
    case("headers", f"header-{name}", get(headers=("Host: a", h)), "accept", "200")

# --- limits ----------------------------------------------------------------------------------------------
case("limits", "header-too-big", get(headers=("Host: a", "Big: " + "x" * 70000)), "reject", "431|400")
case("limits", "too-many-headers", get(headers=("Host: a",) + tuple(f"X-{i}: v" for i in range(300))), "reject", "431|400")
case("limits", "request-line-too-long", get(target="/" + "a" * 70000), "reject", "414|431|400")
case("limits", "many-small-headers-ok", get(headers=("Host: a",) + tuple(f"X-{i}: v" for i in range(50))), "accept", "200")
case("limits", "cookie-big-ok", get(headers=("Host: a", "Cookie: " + "a=b; " * 600)), "accept", "200")

# --- line endings and stray bytes ------------------------------------------------------------------------
case("framing", "bare-lf-request", "GET / HTTP/1.1\nHost: a\n\n", "reject", "400")
case("framing", "bare-cr-request", "GET / HTTP/1.1\rHost: a\r\r", "reject", "400")
case("framing", "leading-crlf", "\r\nGET /echo HTTP/1.1\r\nHost: a\r\n\r\n", "either", "200|400", "RFC 9112 2.2 SHOULD ignore one")
case("framing", "leading-junk", "xx\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n", "reject", "400|501")
case("framing", "space-before-method", " GET / HTTP/1.1\r\nHost: a\r\n\r\n", "reject", "400")
case("framing", "double-space", "GET  / HTTP/1.1\r\nHost: a\r\n\r\n", "reject", "400")
case("framing", "tab-separator", "GET\t/\tHTTP/1.1\r\nHost: a\r\n\r\n", "reject", "400")
case("framing", "nul-first", "\x00GET / HTTP/1.1\r\nHost: a\r\n\r\n", "reject", "400")
case("framing", "tls-hello", "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", "reject", "400")
# The HTTP/2 connection preface ("PRI * HTTP/2.0") starts HTTP/2 with prior knowledge, and a bodiless
# request with `Upgrade: h2c` switches to it: tests/adapters/standalone/test_h2.py covers both.
case("framing", "expect-unknown", get(headers=("Host: a", "Expect: teapot")), "reject", "417")
case("framing", "expect-100-no-body", get(headers=("Host: a", "Expect: 100-continue")), "accept", "200")
case("framing", "connection-close-then-canary", get(headers=("Host: a", "Connection: close")), "accept", "200", "canary: no (the connection closes after the answer)")
case("framing", "upgrade-h2c-with-body-ignored", post(["Host: a", "Connection: Upgrade, HTTP2-Settings", "Upgrade: h2c", "HTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA", "Content-Length: 5"], "hello"), "accept", "200", "a request with a body is answered in HTTP/1.1")

# --- pipelining after errors -----------------------------------------------------------------------------
case("pipelining", "good-then-bad-then-canary", get(target="/echo") + "GET / HTTP/9.9\r\nHost: a\r\n\r\n", "reject", "400|505", "the first answer is 200, then 505/400 and close")
case("pipelining", "three-good", get(target="/echo") * 3, "accept", "200")
case("pipelining", "body-then-request", post(["Host: a", "Content-Length: 5"], "hello") + get(target="/echo"), "accept", "200")
case("pipelining", "chunked-then-request", chunked("5\r\nhello\r\n0\r\n\r\n") + get(target="/echo"), "accept", "200")
case("pipelining", "head-then-get", get(method="HEAD") + get(target="/echo"), "accept", "200")

assert len({c[1] for c in CASES}) == len(CASES), "duplicate case names"

def write():
    groups = {}
    for c in CASES:
        groups.setdefault(c[0], []).append(c)
    for f in os.listdir(os.path.join(HERE, "cases")):
        if f.endswith(".cases"):
            os.remove(os.path.join(HERE, "cases", f))
    for group, cases in groups.items():
        with open(os.path.join(HERE, "cases", group + ".cases"), "w", encoding="utf-8") as out:
            out.write(f"# {group}: generated by tests/reliability/gen_cases.py; edit the tables there.\n")
            for _, name, request, verdict, status, note in cases:
                out.write(f"\n[{name}]\nverdict = {verdict}\n")
                if status:
                    out.write(f"status = {status}\n")
                if note:
                    out.write(f"note = {note}\n")
                out.write("request = " + encode(request) + "\n")
    print(f"{len(CASES)} cases in {len(groups)} files")

if __name__ == "__main__":
    write()
