#!/usr/bin/env python3
"""The bundler's per-module transform cache (esbuild's TypeScript/JSX output, keyed by content and
options), cold and warm: one csgi-bundle --stdio process serves the entry of a copy of
tests/middleware/bundler/tsx_app after each step (new process; every source touched, same text; one
.tsx edited; the edit undone), and its ~stats line counts the transforms esbuild ran and those the cache
answered. Prints the markdown table rows.

usage: bundler_transform_cache.py TOOL APP_DIR NODE_MODULES ESBUILD"""
import os
import shutil
import subprocess
import sys
import tempfile
import time

tool, app, node_modules, esbuild = sys.argv[1:5]
entry = "/src/main.tsx"


def request(proc, line):
    proc.stdin.write((line + "\n").encode())
    proc.stdin.flush()
    head = proc.stdout.readline().decode().split()
    if head[0] == "stats":
        return dict(kv.split("=") for kv in head[1:])
    status, size, count = (int(x) for x in head)
    for _ in range(count):
        proc.stdout.readline()
    body = proc.stdout.read(size)
    if status != 200:
        raise SystemExit(f"{line}: {status} {body[:300]!r}")
    return None


def sources(root):
    for d, _, files in os.walk(os.path.join(root, "src")):
        for f in files:
            yield os.path.join(d, f)


root = tempfile.mkdtemp(prefix="csgi-bench-tc-")
try:
    shutil.copytree(app, root, dirs_exist_ok=True)
    for p in ("react", "react-dom", "scheduler", "loose-envify", "js-tokens"):
        shutil.copytree(os.path.join(node_modules, p), os.path.join(root, "node_modules", p))
    proc = subprocess.Popen([tool, "--esbuild", esbuild, "--freshness", "stat", "--stdio", root],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    edited = os.path.join(root, "src/components/Counter.tsx")
    original = open(edited).read()

    def touch_all():
        for f in sources(root):
            st = os.stat(f)
            os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))

    def edit():
        with open(edited, "w") as f:
            f.write(original.replace("count: ", "clicks: "))

    def undo():
        with open(edited, "w") as f:
            f.write(original)

    steps = [("cold: new process, empty caches", None),
             ("warm: every source touched, same text", touch_all),
             ("warm: one .tsx edited", edit),
             ("warm: the edit undone", undo)]
    last = {"transpiles": 0, "transpile_hits": 0}
    for name, change in steps:
        if change:
            change()
        t0 = time.monotonic()
        request(proc, entry)
        ms = (time.monotonic() - t0) * 1000
        st = request(proc, "~stats")
        misses = int(st["transpiles"]) - last["transpiles"]
        hits = int(st["transpile_hits"]) - last["transpile_hits"]
        last = {k: int(st[k]) for k in last}
        rate = f"{100 * hits / (hits + misses):.0f} %" if hits + misses else "-"
        print(f"| {name} | {misses} | {hits} | {rate} | {ms:.0f} ms |")
    proc.stdin.close()
    proc.wait(timeout=10)
finally:
    shutil.rmtree(root, ignore_errors=True)
