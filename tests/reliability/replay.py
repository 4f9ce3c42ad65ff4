#!/usr/bin/env python3
"""Replays the bad-request corpus (tests/reliability/cases/*.cases) against a running HTTP server.

Every case's raw request is sent in one write together with a pipelined `GET /canary`; the answers are
read until the server closes or goes quiet, then judged (see gen_cases.py for the verdicts). The server
must run tests/reliability/canary_app (it answers /canary with "canary-answered" and /smuggled with
"smuggled-answered").

  replay.py --target 127.0.0.1:8080 [--cases DIR] [--group G] [--markdown FILE] [--json FILE]
  replay.py --compare a.json b.json      # where two servers' observed behaviour differs

Exit status: 0 when every case met its verdict, 1 otherwise.
"""
import argparse
import codecs
import json
import os
import re
import socket
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
CANARY = b"GET /canary HTTP/1.1\r\nHost: a\r\n\r\n"
EXPAND = re.compile(r"\{\{([0-9a-f]{2})\*(\d+)\}\}")


def decode_request(text):
    out, pos = bytearray(), 0
    for m in EXPAND.finditer(text):
        out += codecs.decode(text[pos:m.start()], "unicode_escape").encode("latin-1")
        out += bytes([int(m.group(1), 16)]) * int(m.group(2))
        pos = m.end()
    out += codecs.decode(text[pos:], "unicode_escape").encode("latin-1")
    return bytes(out)


def load_cases(directory, group=None):
    cases = []
    for fname in sorted(os.listdir(directory)):
        if not fname.endswith(".cases"):
            continue
        g = fname[:-6]
        if group and g != group:
            continue
        cur = None
        with open(os.path.join(directory, fname), encoding="utf-8") as f:
            for line in f:
                line = line.rstrip("\n")
                if not line or line.startswith("#"):
                    continue
                if line.startswith("[") and line.endswith("]"):
                    cur = {"group": g, "name": line[1:-1]}
                    cases.append(cur)
                    continue
                key, _, value = line.partition(" = ")
                cur[key] = value
    for c in cases:
        c["raw"] = decode_request(c["request"])
    return cases


class Answer:
    def __init__(self):
        self.statuses = []
        self.bodies = []
        self.closed = False
        self.timed_out = False
        self.garbage = False


def read_all(sock, done, idle=1.0, total=6.0):
    """Reads until the server closes, goes quiet for `idle` seconds, or done(data) says all came."""
    data, start = bytearray(), time.monotonic()
    sock.settimeout(idle)
    closed = False
    while time.monotonic() - start < total:
        if data and done(bytes(data)):
            break
        try:
            chunk = sock.recv(65536)
        except socket.timeout:
            break
        except (ConnectionResetError, BrokenPipeError):
            closed = True
            break
        if not chunk:
            closed = True
            break
        data += chunk
    return bytes(data), closed


def head_positions(raw):
    """Indexes of pipelined requests that are HEAD (their responses carry no body)."""
    starts = re.findall(rb"(?:^|\r\n\r\n)([A-Z]+) \S+ HTTP/1\.[01]\r\n", raw)
    return {i for i, m in enumerate(starts) if m == b"HEAD"}


def parse_responses(data, ans, heads=frozenset()):
    pos = 0
    while pos < len(data):
        end = data.find(b"\r\n\r\n", pos)
        if end < 0:
            ans.garbage = True
            return
        head = data[pos:end].decode("latin-1").split("\r\n")
        m = re.match(r"HTTP/1\.[01] (\d{3})", head[0])
        if not m:
            ans.garbage = True
            return
        status = int(m.group(1))
        headers = {}
        for h in head[1:]:
            k, _, v = h.partition(":")
            headers.setdefault(k.strip().lower(), v.strip())
        pos = end + 4
        body = b""
        if 100 <= status < 200:
            continue
        if len(ans.statuses) in heads or status in (204, 304):
            pass
        elif "transfer-encoding" in headers:
            while True:
                le = data.find(b"\r\n", pos)
                if le < 0:
                    ans.garbage = True
                    return
                size = int(data[pos:le].split(b";")[0], 16)
                pos = le + 2
                if size == 0:
                    pos = data.find(b"\r\n", pos) + 2  # no trailers from csgi; skip the final CRLF
                    break
                body += data[pos:pos + size]
                pos += size + 2
        elif "content-length" in headers:
            n = int(headers["content-length"])
            body = data[pos:pos + n]
            pos += n
        ans.statuses.append(status)
        ans.bodies.append(body)


def run_case(target, case):
    host, port = target.rsplit(":", 1)
    ans = Answer()
    sock = socket.create_connection((host.strip("[]"), int(port)), timeout=5)
    try:
        try:
            sock.sendall(case["raw"] + CANARY)
        except (BrokenPipeError, ConnectionResetError):
            pass
        heads = head_positions(case["raw"])

        def done(d):
            probe = Answer()
            parse_responses(d, probe, heads)
            return any(b"canary-answered" in b for b in probe.bodies) and not probe.garbage
        data, ans.closed = read_all(sock, done)
        ans.timed_out = not ans.closed
    finally:
        sock.close()
    parse_responses(data, ans, heads)
    return ans


def judge(case, ans):
    """Returns (ok, observed, reason)."""
    canary = sum(1 for b in ans.bodies if b"canary-answered" in b)
    smuggled = any(b"smuggled-answered" in b for b in ans.bodies)
    errors = [s for s in ans.statuses if s >= 400]
    observed = {"statuses": ans.statuses, "canary": canary, "closed": ans.closed}
    if smuggled:
        return False, observed, "a smuggled request was answered"
    if ans.garbage:
        return False, observed, "unparsable response bytes"
    if not ans.statuses:
        return False, observed, "no response" + (" (connection left open)" if ans.timed_out else "")
    allowed = case.get("status", "").split("|") if case.get("status") else []
    verdict = case["verdict"]
    if verdict == "either":
        verdict = "reject" if errors and ans.statuses[0] >= 400 else "accept"
    if verdict == "reject":
        if not errors:
            return False, observed, f"accepted ({ans.statuses}), expected a rejection"
        if allowed and str(errors[0]) not in allowed:
            return False, observed, f"rejected with {errors[0]}, expected {'|'.join(allowed)}"
        if canary:
            return False, observed, "the canary was answered after a rejection"
        if not ans.closed:
            return False, observed, "the connection stayed open after a rejection"
        return True, observed, f"rejected {errors[0]}, closed"
    want_canary = 0 if "canary: no" in case.get("note", "") else 1
    if allowed and str(ans.statuses[0]) not in allowed:
        return False, observed, f"answered {ans.statuses[0]}, expected {'|'.join(allowed)}"
    if canary != want_canary:
        return False, observed, f"canary answered {canary} times, expected {want_canary}"
    return True, observed, f"accepted {ans.statuses[0]}"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--target")
    ap.add_argument("--cases", default=os.path.join(HERE, "cases"))
    ap.add_argument("--group")
    ap.add_argument("--markdown")
    ap.add_argument("--json")
    ap.add_argument("--compare", nargs=2)
    ap.add_argument("--quiet", action="store_true")
    args = ap.parse_args()
    if args.compare:
        a, b = (json.load(open(p)) for p in args.compare)
        diff = 0
        print(f"| case | {args.compare[0]} | {args.compare[1]} |\n|---|---|---|")
        for name in sorted(set(a) & set(b)):
            if a[name]["kind"] != b[name]["kind"]:
                diff += 1
                print(f"| {name} | {a[name]['kind']} {a[name]['statuses']} | {b[name]['kind']} {b[name]['statuses']} |")
        print(f"\n{diff} of {len(set(a) & set(b))} cases differ in verdict")
        return 0
    cases = load_cases(args.cases, args.group)
    results, failed = {}, 0
    rows = []
    for case in cases:
        try:
            ans = run_case(args.target, case)
            ok, observed, reason = judge(case, ans)
        except OSError as e:
            ok, observed, reason = False, {"statuses": [], "canary": 0, "closed": True}, f"connect/send failed: {e}"
        kind = "reject" if any(s >= 400 for s in observed["statuses"][:1]) else ("none" if not observed["statuses"] else "accept")
        results[case["name"]] = {"ok": ok, "kind": kind, "statuses": observed["statuses"], "reason": reason}
        failed += not ok
        rows.append((case["group"], case["name"], case["verdict"], case.get("status", ""), "pass" if ok else "FAIL", reason))
        if not args.quiet or not ok:
            print(f"{'pass' if ok else 'FAIL'}  {case['group']:<14} {case['name']:<34} {reason}")
    summary = f"{len(cases) - failed} passed, {failed} failed"
    print(summary)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write("| group | case | verdict | status | result | observed |\n|---|---|---|---|---|---|\n")
            for r in rows:
                f.write("| " + " | ".join(str(x).replace("|", "\\|") for x in r) + " |\n")
            f.write(f"\n{summary}\n")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
