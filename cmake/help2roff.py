#!/usr/bin/python3
"""Writes the man page of a csgi program from its --help, so that the page and --help come from one option
table (adapters/runner/options.cpp). Usage: help2roff.py PROGRAM VERSION OUT.1.gz

--help is laid out as a man page: SECTION headers at column 0, "Title:" sub-headers, option and signal
entries ("  -l, --listen ADDR   text" with the text wrapped at column 32), modes ("    --app LIB.so" then
the text indented by 8), and indented paragraphs; a section whose lines align columns is kept as laid out.
"""
import gzip
import re
import subprocess
import sys

program, version, out = sys.argv[1:4]
name = program.rsplit("/", 1)[-1]
text = subprocess.run([program, "--help"], check=True, capture_output=True, text=True).stdout


def esc(s):
    s = s.replace("\\", "\\e").replace("-", "\\-")
    return "\\&" + s if s[:1] in (".", "'") else s


def sections(lines):
    title, body = None, []
    for line in lines:
        if re.fullmatch(r"[A-Z][A-Z ]*", line):
            if title:
                yield title, body
            title, body = line, []
        elif title:
            body.append(line)
    if title:
        yield title, body


def entries(body, head):
    """Help-list sections: sub-headers, entries (lines matching `head`) and their wrapped text."""
    roff, para = [], []

    def flush():
        if para:
            roff.append(esc(" ".join(para)))
            para.clear()

    for line in body:
        if not line.strip():
            continue
        if not line.startswith(" "):
            flush()
            roff.append(".SS " + esc(line.rstrip(":")))
        elif re.match(head, line):
            flush()
            term, _, rest = line.strip().partition("  ")
            roff += [".TP", ".B " + esc(term)]
            if rest.strip():
                para.append(rest.strip())
        else:
            para.append(line.strip())
    flush()
    return roff


LIST_HEAD, MODE_HEAD = r"  \S", r"    --\S"


def entry_head(body):
    """The pattern of an entry's first line in a section of entries, or None for a section of prose."""
    lines = [l for l in body if l.strip()]
    if any(re.match(LIST_HEAD, l) or not l.startswith(" ") for l in lines):
        return LIST_HEAD
    if lines and all(re.match(MODE_HEAD, l) or l.startswith("        ") for l in lines) and re.match(MODE_HEAD, lines[0]):
        return MODE_HEAD
    return None


def aligned(body):
    return any(re.search(r"\S {2,}\S", l) for l in body)


roff = ['.TH %s 1 "" "csgi %s" "User Commands"' % (name.upper(), version)]
for title, body in sections(text.splitlines()):
    roff.append(".SH " + title)
    while body and not body[-1].strip():
        body.pop()
    head = entry_head(body)
    if head:
        roff += entries(body, head)
    elif aligned(body):
        roff += [".nf"] + [esc(l[4:] if l.startswith("    ") else l) for l in body] + [".fi"]
    else:
        for para in "\n".join(body).split("\n\n"):
            if para.strip():
                roff += [".PP", esc(" ".join(l.strip() for l in para.splitlines()))]
page = "\n".join(roff) + "\n"
with open(out, "wb") as f:
    f.write(gzip.compress(page.encode(), compresslevel=9, mtime=0))
