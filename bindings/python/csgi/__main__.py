"""``python3 -m csgi serve --wsgi|--asgi MODULE:APP [OPTIONS]``: the csgi server inside this Python process,
with the command line of ``csgi serve`` (``python3 -m csgi --help``; docs/python.md)."""
import os
import sys

from ._csgi import _main

if __name__ == "__main__":
    sys.exit(_main(["%s -m csgi" % os.path.basename(sys.executable or "python3")] + sys.argv[1:]))
