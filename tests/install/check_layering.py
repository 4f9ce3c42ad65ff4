#!/usr/bin/env python3
"""Checks csgi's layering from the source tree and the build's layers.tsv (cmake/csgi.cmake).

Usage: check_layering.py SOURCE_DIR BUILD_DIR

- A library layer (a csgi_add_library target) includes csgi headers only from itself and from the
  layers it links, directly or through them.
- A layer's private headers (those in a `detail/` folder) are included only by that layer's own directory
  and the tests; programs (the cli, launchers, examples, bindings) include only public headers.
- An installed (public) header includes no private header, not even of its own layer.
- The Python module's sources (bindings/src/) are included only from bindings/.
Prints every violation as "file:line: what" and exits 1 when there is one.
"""
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"csgi/([^"]+)"')
PROGRAM = re.compile(r"^int\s+main\s*\(")
CODE_DIRS = ("core", "middleware", "adapters", "bindings", "examples")


def read_layers(build_dir):
    layers = {}
    with open(os.path.join(build_dir, "layers.tsv"), encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if not line:
                continue
            name, directory, links = (line.split("\t") + [""] * 3)[:3]
            deps = {l[len("csgi::"):] for l in links.split(",") if l.startswith("csgi::")}
            layers[name] = {"dir": directory, "deps": deps}
    return layers


def is_private(path_in_layer):
    """A header in a `detail/` folder of its layer is private (not installed)."""
    return path_in_layer.startswith("detail/") or "/detail/" in path_in_layer


def closure(layers, name):
    seen, todo = set(), [name]
    while todo:
        n = todo.pop()
        if n in seen or n not in layers:
            continue
        seen.add(n)
        todo.extend(layers[n]["deps"])
    return seen


def owner(layers, rel_path):
    """The layer whose directory holds rel_path (the deepest one), or None."""
    best = None
    for name, l in layers.items():
        d = l["dir"] + "/"
        if rel_path.startswith(d) and (best is None or len(d) > len(layers[best]["dir"]) + 1):
            best = name
    return best


def main():
    src, build = os.path.realpath(sys.argv[1]), sys.argv[2]
    layers = read_layers(build)
    if not layers:
        print("layers.tsv lists no layers", file=sys.stderr)
        return 1
    problems = []
    checked = 0
    for top in CODE_DIRS:
        for root, _, files in os.walk(os.path.join(src, top)):
            for fn in files:
                if not fn.endswith((".cpp", ".hpp", ".h")):
                    continue
                path = os.path.join(root, fn)
                rel = os.path.relpath(path, src)
                mine = owner(layers, rel)
                with open(path, encoding="utf-8", errors="replace") as f:
                    lines = f.readlines()
                # A layer's directory also holds programs (a launcher's main.cpp, a tool); those are not
                # the library and may use any public header.
                is_library = mine is not None and not any(PROGRAM.match(l) for l in lines)
                allowed = closure(layers, mine) if is_library else None
                checked += 1
                for no, line in enumerate(lines, 1):
                    m = INCLUDE.match(line)
                    if not m:
                        continue
                    inc = m.group(1)
                    target = owner(layers, inc)
                    where = f"{rel}:{no}"
                    if inc.startswith("bindings/src/") and not rel.startswith("bindings/"):
                        problems.append(f"{where}: includes the Python module's source {inc}")
                    if target is None:
                        continue
                    tdir = layers[target]["dir"]
                    if is_private(inc[len(tdir) + 1:]):
                        if target != mine:
                            problems.append(f"{where}: includes {inc}, private to csgi::{target}")
                        elif fn.endswith(".hpp") and not is_private(rel[len(tdir) + 1:]):
                            problems.append(f"{where}: the installed header {rel} includes the private {inc}")
                    if allowed is not None and target not in allowed:
                        problems.append(f"{where}: csgi::{mine} includes {inc} but does not link csgi::{target}")
    for p in problems:
        print(p)
    print(f"layering: {checked} files, {len(layers)} layers, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
