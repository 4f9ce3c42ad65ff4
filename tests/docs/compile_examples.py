#!/usr/bin/env python3
"""Compiles every ```cpp block of README.md, spec/csgi.md and docs/**/*.md (the docs_examples test).

Each block becomes its own translation unit: the prelude (every public header of core/, middleware/,
middleware/bundler/, adapters/standalone/server.hpp and adapters/runner/runner.hpp, then tests/docs/stand_ins.hpp: names the docs use
without defining them), then the block. A block compiles as written at namespace scope (a whole file:
includes, functions, classes, CSGI_APP), or else as the body of a function (a fragment: statements such
as `builder.use<...>(o);`), its #include lines moved above the function. It passes when either compiles.
A block that is not meant to compile (a synopsis of a declaration, say) is preceded by the line
    <!-- docs-example: nocompile (the reason) -->
which is meant to be rare. Compiled with -fsyntax-only against a precompiled prelude, two at a time.
"""
import argparse
import concurrent.futures
import os
import pathlib
import re
import subprocess
import sys

NOCOMPILE = re.compile(r"^<!--\s*docs-example:\s*nocompile\s*\((.+)\)\s*-->\s*$")


def blocks(path, root):
    """(label, code) for every ```cpp block of `path` not marked nocompile."""
    lines = path.read_text(encoding="utf-8").splitlines()
    out, i, skipped = [], 0, 0
    while i < len(lines):
        if lines[i].strip() == "```cpp":
            start = i + 1
            j = start
            while j < len(lines) and lines[j].strip() != "```":
                j += 1
            prev = next((lines[k] for k in range(i - 1, -1, -1) if lines[k].strip()), "")
            if NOCOMPILE.match(prev.strip()):
                skipped += 1
            else:
                out.append((f"{path.relative_to(root)}:{start}", "\n".join(lines[start:j])))
            i = j
        elif lines[i].strip().startswith("```cpp"):
            sys.exit(f"{path.relative_to(root)}:{i + 1}: unknown block info '{lines[i].strip()}'"
                     " (use ```cpp, and <!-- docs-example: nocompile (reason) --> before it to skip it)")
        i += 1
    return out, skipped


def prelude(root):
    headers = sorted(root.glob("core/*.hpp")) + sorted(root.glob("middleware/*.hpp")) + \
        sorted(root.glob("middleware/bundler/*.hpp")) + [root / "adapters/standalone/server.hpp",
                                                       root / "adapters/runner/runner.hpp"]
    text = "".join(f'#include "csgi/{h.relative_to(root)}"\n' for h in headers)
    return text + f'#include "{root / "tests/docs/stand_ins.hpp"}"\n'


def units(label, code, n):
    """The block as a whole file, and as function body number n (its #include lines moved above it)."""
    name, first = label.rsplit(":", 1)
    line = f'#line {first} "{name}"\n'
    lines = code.splitlines()
    is_include = [l.lstrip().startswith("#include") for l in lines]
    includes = "".join(l + "\n" for l, inc in zip(lines, is_include) if inc)
    body = "".join(("" if inc else l) + "\n" for l, inc in zip(lines, is_include))
    return line + code + "\n", includes + f"void docs_example_{n}() {{\n" + line + body + "}\n"


def owner(todo, name, line):
    """The label of the block holding `line` of markdown file `name`, or None."""
    for label, code in todo:
        f, first = label.rsplit(":", 1)
        if f == name and int(first) <= line < int(first) + max(1, len(code.splitlines())):
            return label
    return None


def compile_one(cmd, src):
    r = subprocess.run(cmd + [str(src)], capture_output=True, text=True)
    return r.returncode, r.stderr


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", required=True, type=pathlib.Path)
    ap.add_argument("--out", required=True, type=pathlib.Path)
    ap.add_argument("--cxx", default="c++")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("-I", dest="incs", action="append", default=[])
    ap.add_argument("--must-fail", type=pathlib.Path, action="append", default=[],
                    help="markdown whose every block must fail to compile (proves the check can fail)")
    ap.add_argument("files", nargs="*", type=pathlib.Path, help="markdown files (default: all)")
    args = ap.parse_args()
    root = args.root.resolve()
    files = args.files or ([root / "README.md", root / "spec/csgi.md"] + sorted((root / "docs").rglob("*.md")))
    args.out.mkdir(parents=True, exist_ok=True)

    flags = ["-std=c++20", "-w"] + [f"-I{i}" for i in args.incs]
    pre = args.out / "prelude.hpp"
    pre.write_text(prelude(root))
    gch = args.out / "prelude.hpp.gch"
    r = subprocess.run([args.cxx] + flags + ["-x", "c++-header", str(pre), "-o", str(gch)], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit("the prelude does not compile:\n" + r.stderr)
    cmd = [args.cxx] + flags + ["-fsyntax-only", "-include", str(pre)]

    todo, skipped = [], 0
    for f in files:
        bs, s = blocks(f.resolve(), root)
        todo += bs
        skipped += s
    broken = [b for f in args.must_fail for b in blocks(f.resolve(), root)[0]]
    todo += broken
    # One batch first: every block as a fragment, each in its own function, in one translation unit.
    # A block the compiler's messages point at is then compiled alone, as a whole file and as a fragment.
    wholes, frags = [], []
    for n, (label, code) in enumerate(todo):
        whole, frag = units(label, code, n)
        wholes.append(whole)
        frags.append(frag)
    def batch_compile(picked):
        batch = args.out / "fragments.cpp"
        batch.write_text("".join(frags[n] for n in picked))
        return compile_one(cmd, batch)

    everyone = range(len(todo) - len(broken))
    rc, err = batch_compile(everyone)
    suspects = set()
    if rc != 0:
        # Every block the messages name (errors, notes, macro expansions); the rest must then compile.
        names = "|".join(re.escape(str(f.resolve().relative_to(root))) for f in files)
        for m in re.finditer(rf"(?:^|\s)({names}):(\d+):", err, re.M):
            suspects.add(owner(todo, m.group(1), int(m.group(2))))
        suspects.discard(None)
        rest = [n for n in everyone if todo[n][0] not in suspects]
        if not suspects or batch_compile(rest)[0] != 0:
            suspects = {label for label, _ in todo}

    def alone(n):
        label = todo[n][0]
        results = []
        for kind, text in (("whole file", wholes[n]), ("fragment", frags[n])):
            src = args.out / f"block{n}_{kind.split()[0]}.cpp"
            src.write_text(text)
            r = compile_one(cmd, src)
            if r[0] == 0:
                return label, None
            results.append(f"--- as a {kind} ({src}):\n{r[1]}")
        return label, "".join(results)

    failed = []
    with concurrent.futures.ThreadPoolExecutor(max(1, args.jobs)) as pool:
        picked = [n for n in everyone if todo[n][0] in suspects] + list(range(len(everyone), len(todo)))
        for label, report in pool.map(alone, picked):
            if any(label == b[0] for b in broken):
                if not report:
                    failed.append(label)
                    print(f"FAILED {label}: compiles, but it is there to show that a broken block fails")
            elif report:
                failed.append(label)
                print(f"FAILED {label}\n{report}")
    todo = todo[:len(everyone)]
    print(f"{len(todo)} C++ blocks, {len(todo) - len(failed)} compile, {len(failed)} do not, {skipped} marked nocompile")
    if broken:
        print(f"{len(broken)} deliberately broken blocks fail as they should" if not any(
            b[0] in failed for b in broken) else "a deliberately broken block compiles: the check is blind")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
