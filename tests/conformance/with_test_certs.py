#!/usr/bin/python3
"""Runs a command with test certificates made now (tests/adapters/cli/tls_certs.py): a test CA and a
server certificate for localhost and 127.0.0.1. In the arguments @CA@, @CERT@ and @KEY@ become their
files; the directory is removed afterwards. Exit status: the command's.

  with_test_certs.py run_conformance.py --tls-ca @CA@ --spawn 'csgi serve … --tls-cert @CERT@ --tls-key @KEY@'"""
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "adapters", "cli"))
from tls_certs import Certs  # noqa: E402

certs = Certs()
subst = {"@CA@": certs.ca, "@CERT@": certs.server[0], "@KEY@": certs.server[1]}
args = sys.argv[1:]
for k, v in subst.items():
    args = [a.replace(k, v) for a in args]
try:
    rc = subprocess.call(args)
finally:
    shutil.rmtree(certs.dir, ignore_errors=True)
sys.exit(rc)
