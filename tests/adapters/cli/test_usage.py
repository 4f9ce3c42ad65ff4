#!/usr/bin/python3
"""`csgi serve` usage errors name the modes of the mode table: without a mode the message lists every
mode exactly once; two app sources list each source once; the SYNOPSIS shows every mode.
The modes are read from the MODES section of `csgi --help`.
The aliases csgi-fcgi and csgi-cgi take the same options and print the same manual; an option given for an
adapter it does not apply to exits 2 naming both; every --option the docs mention for a csgi program is
one the manual lists.
Usage: test_usage.py CSGI_EXE [CSGI_FCGI_EXE CSGI_CGI_EXE SOURCE_DIR]"""
import glob
import os
import re
import subprocess
import sys

CSGI = sys.argv[1]
FCGI, CGI, SOURCE = (sys.argv[2:5] + [None, None, None])[:3]
failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def run(*args, program=None):
    env = {k: v for k, v in os.environ.items() if k not in ("CSGI_APP", "GATEWAY_INTERFACE")}
    return subprocess.run([program or CSGI] + list(args), capture_output=True, text=True, timeout=30, env=env,
                          stdin=subprocess.DEVNULL)


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
sources = [m for m in ("app", "demo", "wsgi", "asgi") if m in modes]
for m in sources:
    check(count(two.stderr, m) == 1, "the two-sources message names --%s exactly once" % m)
for m in ("static", "bundle"):
    check(count(two.stderr, m) == 0, "the two-sources message does not offer the layer --%s" % m)

synopsis = manual.split("\nSYNOPSIS\n", 1)[1].split("\nDESCRIPTION\n", 1)[0]
for m in modes:
    check(count(synopsis, m) == 1, "the SYNOPSIS shows --%s once" % m)

# Options that do not apply to the chosen adapter: exit 2, naming the option and the adapter.
for args, program, option, adapter in [
        (("serve", "--demo", "--fastcgi", "--reuseport"), None, "--reuseport", "FastCGI"),
        (("serve", "--demo", "--cgi", "--workers", "2"), None, "--workers", "CGI"),
        (("serve", "--demo", "--fastcgi", "--error-log", "x.log"), None, "--error-log", "FastCGI"),
        (("--demo", "--reuseport"), FCGI, "--reuseport", "FastCGI"),
        (("--demo", "--threads", "2"), CGI, "--threads", "CGI")]:
    if args[0] != "serve" and not program:
        continue  # the aliases were not given
    r = run(*args, program=program)
    what = " ".join(([os.path.basename(program)] if program else ["csgi"]) + list(args))
    check(r.returncode == 2 and ("%s does not apply to %s" % (option, adapter)) in r.stderr,
          "%s exits 2 naming %s and %s: %s" % (what, option, adapter, r.stderr.strip()))

if FCGI and CGI:
    for program in (FCGI, CGI):
        check(run("--help", program=program).stdout == manual, "%s --help prints csgi's manual" % os.path.basename(program))
    r = run("--app", "/nonexistent/lib.so", "--workers", "2", program=CGI)
    check(r.returncode == 2 and r.stdout.startswith("Status: 500"), "csgi-cgi answers a usage error with a 500 response")
    r = run("--demo", "--cgi", program=FCGI)
    check(r.returncode == 2 and "serves FastCGI only" in r.stderr, "csgi-fcgi refuses --cgi: " + r.stderr.strip())

# Every --option the docs give a csgi program is in the manual (a renamed or removed option fails here).
options_section = manual.split("\nOPTIONS\n", 1)[1].split("\nSIGNALS\n", 1)[0]
known = set(re.findall(r"--([a-z][a-z0-9-]*)", options_section)) | {"help"}
deprecated = {"max-body", "discard-body-bytes"}  # still accepted, with a warning; the docs name them only to say so
if SOURCE:
    whole = [os.path.join(SOURCE, f) for f in ("docs/standalone.md", "docs/deploy/fastcgi-cgi.md")]
    launch = re.compile(r"(csgi serve|csgi-fcgi|csgi-cgi|@FCGI@|@CGI@|hello_server|csgi::run)")
    files = sorted(set(glob.glob(os.path.join(SOURCE, "docs/**/*"), recursive=True) +
                       [os.path.join(SOURCE, "README.md")]))
    option = re.compile(r"(?<![\w-])--([a-z][a-z0-9-]*)")

    def after_launch(text):
        m = launch.search(text)
        return option.findall(text[m.start():]) if m else []

    mentions = []
    for path in files:
        if not os.path.isfile(path):
            continue
        fenced = False
        with open(path, encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                if path.endswith(".md") and line.lstrip().startswith("```"):
                    fenced = not fenced
                    continue
                if path in whole:
                    tokens = option.findall(line)
                elif not path.endswith(".md") or fenced:
                    tokens = after_launch(line)  # a template or a code block: the command line after the program
                else:
                    tokens = [t for span in re.findall(r"`([^`]*)`", line) for t in after_launch(span)]
                mentions += [("%s:%d" % (os.path.relpath(path, SOURCE), n), t) for t in tokens]
    check(len(mentions) > 30, "the docs mention %d options of csgi programs" % len(mentions))
    for where, t in mentions:
        if t not in known and t not in deprecated:
            check(False, "%s: --%s is no option of csgi serve" % (where, t))

# The manual's NAME and DESCRIPTION name what the server speaks.
name = manual.split("NAME\n", 1)[1].split("\nSYNOPSIS\n", 1)[0]
description = " ".join(manual.split("\nDESCRIPTION\n", 1)[1].split("\nMODES\n", 1)[0].split())
for what in ("HTTP/1.1", "HTTP/2", "TLS", "WebSocket", "FastCGI", "CGI"):
    check(what in name and what in description, "the manual's NAME and DESCRIPTION name %s" % what)

# The manual's SIGNALS say what docs/standalone.md's signal table says (both made from one table).
if SOURCE:
    signals = " ".join(manual.split("\nSIGNALS\n", 1)[1].split("\nENVIRONMENT\n", 1)[0].split())
    with open(os.path.join(SOURCE, "docs/standalone.md"), encoding="utf-8") as f:
        rows = re.findall(r"^\| ([A-Z0-9, ]+) \| (.+?) \| (.+?) \|$", f.read(), re.M)
    check(len(rows) >= 4 and {"HUP", "USR1", "USR2"} <= {r[0] for r in rows}, "docs/standalone.md has a signal table")
    for names, single, master in rows:
        check("%s Single process: %s. With --workers: %s." % (names, single, master) in signals,
              "the manual's SIGNALS give %s as docs/standalone.md does" % names)

print("%d failure(s)" % len(failures))
sys.exit(1 if failures else 0)
