#!/usr/bin/python3
"""The typical stack of docs/middleware.md agrees with each middleware page's **Order** line: where a page
says it goes "inside X" or "outside X" (X another middleware of that stack), the stack has it so (the first
use() is the outermost). Usage: check_middleware_order.py SOURCE_DIR"""
import os
import re
import sys

root = sys.argv[1]
with open(os.path.join(root, "docs", "middleware.md")) as f:
    overview = f.read()
snippet = overview.split("```cpp", 1)[1].split("```", 1)[0]
stack = [re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower() for name in re.findall(r"\.use<mw::(\w+)>", snippet)]
failures, checked = [], 0
for name in stack:
    page = os.path.join(root, "docs", "middleware", name + ".md")
    if not os.path.exists(page):
        continue
    with open(page) as f:
        text = f.read()
    m = re.search(r"\*\*Order\*\*:(.*?)(?:Tests:|\n\n|$)", text, re.S)
    if not m:
        continue
    for clause in re.split(r"[;,.]", " ".join(m.group(1).split())):
        where = re.match(r"\s*(inside|outside)\b", clause)
        if not where:
            continue
        for other in stack:
            if other == name or not re.search(r"\b%s\b" % re.escape(other), clause):
                continue
            checked += 1
            outside = stack.index(name) < stack.index(other)
            if outside != (where.group(1) == "outside"):
                failures.append("docs/middleware/%s.md says %s %s, but docs/middleware.md's stack puts it %s" %
                                (name, where.group(1), other, "outside" if outside else "inside"))
print("stack: %s; %d order statements checked" % (" > ".join(stack), checked))
for f in failures:
    print("FAIL " + f)
sys.exit(1 if failures or checked < 3 else 0)
