#!/usr/bin/python3
"""`csgi serve` usage errors name the modes of the mode table: without a mode the message lists every
mode exactly once; two app sources list each source once; the SYNOPSIS shows every mode.
The modes are read from the MODES section of `csgi --help`. Usage: test_usage.py CSGI_EXE"""
import re
import subprocess
import sys

CSGI = sys.argv[1]
failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def run(*args):
    return subprocess.run([CSGI] + list(args), capture_output=True, text=True, timeout=30)


def count(text, option):
    return len(re.findall(r"--%s(?![\w-])" % re.escape(option), text))


manual = run("--help").stdout
modes_section = manual.split("\nMODES\n", 1)[1].split("\nOPTIONS\n", 1)[0]
modes = re.findall(r"^    --([\w-]+)", modes_section, re.M)
check(len(modes) >= 4 and {"app", "demo", "static", "bundle"} <= set(modes), "the manual lists the modes: %s" % modes)

bare = run("serve")
check(bare.returncode == 2 and "nothing to serve" in bare.stderr, "csgi serve without a mode exits 2: " + bare.stderr.strip())
for m in modes:
    check(count(bare.stderr, m) == 1, "the no-mode message names --%s exactly once" % m)
check(count(bare.stderr, "help") == 1, "the no-mode message points to --help once")
check(run().returncode == 0, "csgi alone prints the manual")

two = run("serve", "--demo", "--app", "x.so")
check(two.returncode == 2 and "only one of" in two.stderr, "two app sources exit 2: " + two.stderr.strip())
sources = [m for m in ("app", "demo", "wsgi") if m in modes]
for m in sources:
    check(count(two.stderr, m) == 1, "the two-sources message names --%s exactly once" % m)
for m in ("static", "bundle"):
    check(count(two.stderr, m) == 0, "the two-sources message does not offer the layer --%s" % m)

synopsis = manual.split("\nSYNOPSIS\n", 1)[1].split("\nDESCRIPTION\n", 1)[0]
for m in modes:
    check(count(synopsis, m) == 1, "the SYNOPSIS shows --%s once" % m)

print("%d failure(s)" % len(failures))
sys.exit(1 if failures else 0)
