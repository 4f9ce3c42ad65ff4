#!/usr/bin/python3
"""`csgi serve --tls-cert/--tls-key` as TLS clients meet it, with certificates made now (tls_certs.py):
  * start errors: a missing file, a key that does not match, an expired certificate, https:// without a
    certificate: exit non-zero with one line naming the file and the reason;
  * the env of a TLS request (ENV-17, ENV-18): csgi.url_scheme https, HTTPS on, SSL_PROTOCOL, SSL_CIPHER,
    SSL_TLS_SNI; no csgix.io (no raw socket under TLS);
  * SNI chooses the certificate (the first by default); ALPN prefers h2 to http/1.1 and refuses others;
  * TLS 1.0 and 1.1 are refused by the server (a protocol_version alert), TLS 1.2 and 1.3 served;
  * session resumption (TLS 1.2 and 1.3 tickets) works;
  * SIGHUP swaps the certificate for new connections while an open keep-alive connection keeps working;
  * a slow handshake is closed at the header timeout, and a flood of stalled handshakes leaves the server
    serving another client;
  * --listen https://… next to a plain listener: one process serves both;
  * OCSP stapling from the responder the certificate names; a responder that is down is logged;
  * --tls-client-ca: a client certificate is required and its keys are in the env.
Usage: test_tls.py CSGI_EXE"""
import html
import os
import pty
import re
import select
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import time

CSGI = sys.argv[1]
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serving import check, exchange, failures, free_port, start as start_csgi  # noqa: E402
from tls_certs import Certs  # noqa: E402

certs = Certs()
SERVER_CERT, SERVER_KEY = certs.server
OTHER_CERT, OTHER_KEY = certs.other
TLS_ARGS = ["--tls-cert", SERVER_CERT, "--tls-key", SERVER_KEY, "--tls-cert", OTHER_CERT, "--tls-key", OTHER_KEY]


def start(args, listen="127.0.0.1:0"):
    return start_csgi(CSGI, args, listen=listen)


def client_context(**kw):
    ctx = ssl.create_default_context(cafile=certs.ca)
    for k, v in kw.items():
        setattr(ctx, k, v)
    return ctx


def connect(port, ctx=None, host="localhost", session=None):
    raw = socket.create_connection(("127.0.0.1", port), timeout=10)
    return (ctx or client_context()).wrap_socket(raw, server_hostname=host, session=session)


def request(sock, path, close=False):
    status, _, body = exchange(sock, path, host="localhost", close=close)
    return status, body


def env_of(body):
    return {html.unescape(k): html.unescape(v) for k, v in re.findall(r"<tr><td>(.*?)</td><td>(.*?)</td></tr>", body, re.S)}


def peer_cn(sock):
    for rdn in sock.getpeercert()["subject"]:
        for k, v in rdn:
            if k == "commonName":
                return v
    return None


def start_error(args):
    r = subprocess.run([CSGI, "serve", "--demo", "--listen", "127.0.0.1:0"] + args, capture_output=True, text=True,
                       timeout=20)
    return r.returncode, r.stderr.strip()


# Start errors: one line, non-zero, naming the file and the reason.
missing = os.path.join(certs.dir, "missing.pem")
for what, args, file, reason in [
    ("missing certificate", ["--tls-cert", missing, "--tls-key", SERVER_KEY], missing, "No such file"),
    ("missing key", ["--tls-cert", SERVER_CERT, "--tls-key", missing], missing, "No such file"),
    ("key not matching", ["--tls-cert", SERVER_CERT, "--tls-key", certs.stray_key], certs.stray_key, "does not match"),
    ("expired certificate", ["--tls-cert", certs.expired[0], "--tls-key", certs.expired[1]], certs.expired[0], "expired"),
    ("a key file that is a certificate", ["--tls-cert", SERVER_CERT, "--tls-key", SERVER_CERT], SERVER_CERT, "private key"),
]:
    rc, err = start_error(args)
    check(rc != 0 and len(err.splitlines()) == 1 and file in err and reason in err,
          "start error, %s: exit %d, %r" % (what, rc, err))
rc, err = start_error(["--listen", "https://127.0.0.1:0"])
check(rc != 0 and "--tls-cert" in err and len(err.splitlines()) == 1, "https:// without a certificate: %r" % err)
rc, err = start_error(["--tls-cert", SERVER_CERT])
check(rc == 2 and "--tls-key" in err, "a --tls-cert without its --tls-key is a command-line error (exit 2): %r" % err)


def start_on_terminal(args, limit=20):
    """Runs `csgi serve --demo ARGS` with a pseudo-terminal as its controlling terminal (where OpenSSL's
    default passphrase prompt would read); returns (exit status or None when it still ran after `limit`
    seconds, everything it wrote)."""
    pid, fd = pty.fork()
    if pid == 0:
        os.execv(CSGI, [CSGI, "serve", "--demo", "--listen", "127.0.0.1:0"] + args)
    out, deadline = b"", time.monotonic() + limit
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(fd, 4096)
            except OSError:
                chunk = b""
            if not chunk:
                break
            out += chunk
    for _ in range(100):
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            os.close(fd)
            return os.waitstatus_to_exitcode(status), out.decode(errors="replace")
        time.sleep(0.1)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    os.close(fd)
    return None, out.decode(errors="replace")


# An encrypted key: refused at once with one line, never a passphrase prompt on the terminal.
encrypted_key = os.path.join(certs.dir, "encrypted-key.pem")
subprocess.run(["openssl", "pkey", "-in", SERVER_KEY, "-aes256", "-passout", "pass:x", "-out", encrypted_key],
               check=True, capture_output=True, timeout=30)
rc, out = start_on_terminal(["--tls-cert", SERVER_CERT, "--tls-key", encrypted_key])
check(rc == 1 and "pass phrase" not in out.lower() and "passphrase" in out and encrypted_key in out,
      "an encrypted --tls-key fails at once without a prompt: exit %r, %r" % (rc, out.strip()))

static_dir = os.path.join(certs.dir, "static")
os.mkdir(static_dir)
big = os.urandom(3 * 1024 * 1024 + 17)
with open(os.path.join(static_dir, "big.bin"), "wb") as f:
    f.write(big)
p, port = start(["--demo", "--header-timeout", "1"] + TLS_ARGS)
files, files_port = start(["--demo", "--static", static_dir] + TLS_ARGS)
try:
    # A client that does not read at first: the server's writes wait (partial TLS writes, made again
    # with the same bytes), then every byte arrives intact.
    s = connect(files_port)
    s.sendall(b"GET /big.bin HTTP/1.1\r\nHost: localhost\r\n\r\nGET /big.bin HTTP/1.1\r\nHost: localhost\r\n\r\n")
    time.sleep(1)
    data = b""
    while data.count(big) < 2:
        chunk = s.recv(1 << 20)
        if not chunk:
            break
        data += chunk
        time.sleep(0.01)
    check(data.count(big) == 2, "a slow reader gets two pipelined 3 MB files intact over TLS")
    s.close()
finally:
    files.terminate()
    files.wait(timeout=15)

try:
    # The env (ENV-17, ENV-18).
    s = connect(port)
    status, body = request(s, "/env")
    env = env_of(body)
    check(status == 200, "GET /env over TLS: 200")
    check(env.get("csgi.url_scheme") == "https" and env.get("HTTPS") == "on", "ENV-17: https, HTTPS=on")
    check(env.get("SSL_PROTOCOL") == s.version(), "ENV-18: SSL_PROTOCOL %r (client says %r)" % (env.get("SSL_PROTOCOL"), s.version()))
    check(env.get("SSL_CIPHER") == s.cipher()[0], "ENV-18: SSL_CIPHER %r" % env.get("SSL_CIPHER"))
    check(env.get("SSL_TLS_SNI") == "localhost", "ENV-18: SSL_TLS_SNI localhost")
    check("SSL_CLIENT_VERIFY" not in env, "no SSL_CLIENT_VERIFY when no client certificate is asked for")
    check("csgix.io" not in env, "no csgix.io on a TLS connection")
    status, body = request(s, "/")
    check(status == 200 and "Hello" in body, "a second request on the kept connection")
    s.close()

    # SNI and ALPN.
    s = connect(port, host="other.test")
    check(peer_cn(s) == "other.test", "SNI other.test: its certificate")
    s.close()
    s = connect(port, host="www.other.test")
    check(peer_cn(s) == "other.test", "SNI www.other.test: the wildcard certificate")
    s.close()
    s = connect(port, ctx=client_context(check_hostname=False), host="unknown.test")
    check(peer_cn(s) == "localhost", "SNI of no certificate: the first certificate")
    s.close()
    for offered, chosen in ((["http/1.1", "h2"], "h2"), (["http/1.1"], "http/1.1"), (["h2"], "h2")):
        ctx = client_context()
        ctx.set_alpn_protocols(offered)
        s = connect(port, ctx=ctx)
        check(s.selected_alpn_protocol() == chosen, "ALPN %s: %s, the server's preference (%r)" %
              (",".join(offered), chosen, s.selected_alpn_protocol()))
        s.close()
    ctx = client_context()
    ctx.set_alpn_protocols(["spdy/3"])
    try:
        connect(port, ctx=ctx).close()
        check(False, "ALPN spdy/3 alone: refused")
    except ssl.SSLError as e:
        check("NO_APPLICATION_PROTOCOL" in str(e).upper().replace(" ", "_"), "ALPN spdy/3 alone: no_application_protocol (%s)" % e)

    # Protocol versions: the client offers old ones (security level 0 lets it), the server refuses them.
    for version in (ssl.TLSVersion.TLSv1, ssl.TLSVersion.TLSv1_1):
        ctx = client_context(minimum_version=ssl.TLSVersion.TLSv1, maximum_version=version)
        ctx.set_ciphers("DEFAULT:@SECLEVEL=0")
        try:
            connect(port, ctx=ctx).close()
            check(False, "%s refused" % version.name)
        except ssl.SSLError as e:
            check("PROTOCOL_VERSION" in str(e).upper(), "%s refused by the server (%s)" % (version.name, e))
    for version in (ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3):
        s = connect(port, ctx=client_context(minimum_version=version, maximum_version=version))
        status, _ = request(s, "/")
        check(status == 200 and s.version() == {"TLSv1_2": "TLSv1.2", "TLSv1_3": "TLSv1.3"}[version.name],
              "%s served" % version.name)
        s.close()

    # Session resumption, TLS 1.2 and 1.3 (tickets).
    for version in (ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3):
        ctx = client_context(maximum_version=version)
        s = connect(port, ctx=ctx)
        request(s, "/")  # a TLS 1.3 ticket comes after the handshake
        session = s.session
        s.close()
        s = connect(port, ctx=ctx, session=session)
        status, _ = request(s, "/")
        check(status == 200 and s.session_reused, "%s session resumed" % version.name)
        if version == ssl.TLSVersion.TLSv1_3:
            # TLS 1.3 tickets are single-use (RFC 8446 §C.4): a resumed connection brings a new one.
            check(s.session.id != session.id, "TLSv1.3: a resumed connection gets a new ticket")
            again = s.session
            s.close()
            s = connect(port, ctx=ctx, session=again)
            request(s, "/")
            check(s.session_reused, "TLSv1.3: the new ticket resumes too")
        s.close()

    # A slow handshake is closed at the header timeout (1 s) while others are served; so is a flood.
    slow = socket.create_connection(("127.0.0.1", port), timeout=10)
    slow.sendall(b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03")  # the start of a ClientHello
    flood = []
    for _ in range(200):
        f = socket.create_connection(("127.0.0.1", port), timeout=10)
        f.sendall(b"\x16\x03\x01")
        flood.append(f)
    t0 = time.time()
    s = connect(port)
    status, _ = request(s, "/", close=True)
    served = time.time() - t0
    s.close()
    check(status == 200 and served < 2, "a client is served next to 200 stalled handshakes (%.2f s)" % served)
    slow.settimeout(5)
    try:
        closed = slow.recv(100) == b""
    except ConnectionResetError:
        closed = True
    except socket.timeout:
        closed = False
    waited = time.time() - t0
    check(closed and waited < 4, "a slow handshake is closed at the header timeout (%.2f s)" % waited)
    for f in flood + [slow]:
        f.close()
finally:
    p.terminate()
    p.wait(timeout=15)

# SIGHUP: new connections get the new certificate; an open keep-alive connection keeps working.
live = os.path.join(certs.dir, "live")
os.mkdir(live)
cert_file, key_file = os.path.join(live, "cert.pem"), os.path.join(live, "key.pem")
shutil.copy(SERVER_CERT, cert_file)
shutil.copy(SERVER_KEY, key_file)
p, port = start(["--demo", "--tls-cert", cert_file, "--tls-key", key_file])
try:
    kept = connect(port)
    before = kept.getpeercert(binary_form=True)
    status, _ = request(kept, "/")
    renewed_cert, renewed_key = certs.issue("renewed", "localhost", ["DNS:localhost"])
    shutil.copy(renewed_cert, cert_file)
    shutil.copy(renewed_key, key_file)
    p.send_signal(signal.SIGHUP)
    after = None
    for _ in range(50):
        s = connect(port)
        after = s.getpeercert(binary_form=True)
        s.close()
        if after != before:
            break
        time.sleep(0.1)
    with open(renewed_cert) as f:
        renewed_der = ssl.PEM_cert_to_DER_cert(f.read())
    check(after == renewed_der, "after SIGHUP a new connection gets the renewed certificate")
    status, body = request(kept, "/")
    check(status == 200 and "Hello" in body, "the connection opened before SIGHUP keeps working")
    kept.close()
    # A broken file on SIGHUP: the previous certificate stays.
    with open(key_file, "w") as f:
        f.write("not a key\n")
    p.send_signal(signal.SIGHUP)
    time.sleep(0.5)
    s = connect(port)
    check(s.getpeercert(binary_form=True) == renewed_der and request(s, "/")[0] == 200,
          "a SIGHUP with a broken key file keeps the previous certificate")
    s.close()
finally:
    p.terminate()
    p.wait(timeout=15)

# With --workers the master re-reads the files on SIGHUP before it starts the new workers.
shutil.copy(SERVER_CERT, cert_file)
shutil.copy(SERVER_KEY, key_file)
p, port = start(["--demo", "--workers", "2", "--tls-cert", cert_file, "--tls-key", key_file])
try:
    s = connect(port)
    before = s.getpeercert(binary_form=True)
    s.close()
    shutil.copy(renewed_cert, cert_file)
    shutil.copy(renewed_key, key_file)
    p.send_signal(signal.SIGHUP)
    seen = set()
    for _ in range(60):
        s = connect(port)
        seen.add(s.getpeercert(binary_form=True))
        s.close()
        if renewed_der in seen:
            break
        time.sleep(0.1)
    check(before != renewed_der and renewed_der in seen, "--workers 2: after SIGHUP the new workers serve the renewed certificate")
finally:
    p.terminate()
    p.wait(timeout=15)

# --listen https://… next to a plain listener.
proc = subprocess.Popen([CSGI, "serve", "--demo", "--tls-cert", SERVER_CERT, "--tls-key", SERVER_KEY, "--listen",
                         "127.0.0.1:0", "--listen", "https://127.0.0.1:0"], stdout=subprocess.PIPE,
                        stderr=subprocess.DEVNULL, text=True)
try:
    urls = [proc.stdout.readline().strip() for _ in range(2)]
    plain = [int(u.rsplit(":", 1)[1].strip("/")) for u in urls if "http://" in u]
    tls = [int(u.rsplit(":", 1)[1].strip("/")) for u in urls if "https://" in u]
    check(len(plain) == 1 and len(tls) == 1, "one plain and one https listener announced: %r" % urls)
    if plain and tls:
        s = socket.create_connection(("127.0.0.1", plain[0]), timeout=10)
        status, body = request(s, "/env")
        check(status == 200 and env_of(body).get("csgi.url_scheme") == "http" and "HTTPS" not in env_of(body),
              "the plain listener serves http (no HTTPS key)")
        s.close()
        s = connect(tls[0])
        status, body = request(s, "/env")
        check(status == 200 and env_of(body).get("csgi.url_scheme") == "https", "the https listener serves TLS")
        s.close()
finally:
    proc.terminate()
    proc.wait(timeout=15)

# Sockets from systemd (docs/deploy/systemd/csgi-web*.socket): the one named "https" serves TLS.
activate = shutil.which("systemd-socket-activate")
if activate:
    free = [free_port(), free_port()]
    while free[1] == free[0]:
        free[1] = free_port()
    proc = subprocess.Popen([activate, "-l", "127.0.0.1:%d" % free[0], "-l", "127.0.0.1:%d" % free[1], "--fdname=http:https",
                             CSGI, "serve", "--demo", "--tls-cert", SERVER_CERT, "--tls-key", SERVER_KEY],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        time.sleep(0.5)
        s = socket.create_connection(("127.0.0.1", free[0]), timeout=10)
        status, body = request(s, "/env")
        check(status == 200 and env_of(body).get("csgi.url_scheme") == "http", "systemd socket named http: plain")
        s.close()
        s = connect(free[1])
        status, body = request(s, "/env")
        check(status == 200 and env_of(body).get("HTTPS") == "on", "systemd socket named https: TLS")
        s.close()
    finally:
        proc.terminate()
        proc.wait(timeout=15)
else:
    print("skip: systemd-socket-activate not installed (the systemd socket names)")

# OCSP stapling: the response of the responder the certificate names (`openssl ocsp` here) is stapled.

ocsp_port = free_port()
leaf_cert, leaf_key = certs.issue("stapled", "localhost", ["DNS:localhost"], ocsp_url="http://127.0.0.1:%d" % ocsp_port)
chain = os.path.join(certs.dir, "stapled-chain.pem")
with open(chain, "w") as out, open(leaf_cert) as a, open(certs.ca) as b:
    out.write(a.read() + b.read())
serial = subprocess.run(["openssl", "x509", "-in", leaf_cert, "-noout", "-serial"], capture_output=True, text=True).stdout
index = os.path.join(certs.dir, "index.txt")
with open(index, "w") as f:
    f.write("V\t%s\t\t%s\tunknown\t/CN=localhost\n" % (time.strftime("%y%m%d%H%M%SZ", time.gmtime(time.time() + 86400)),
                                                        serial.strip().split("=")[1]))
responder = subprocess.Popen(["openssl", "ocsp", "-index", index, "-port", str(ocsp_port), "-rsigner", certs.ca,
                              "-rkey", certs.ca_key, "-CA", certs.ca], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
try:
    time.sleep(1)  # `openssl ocsp` answers one connection at a time: no probe connection before csgi's
    stapled_errors = os.path.join(certs.dir, "stapled-errors.log")
    p, port = start(["--demo", "--tls-cert", chain, "--tls-key", leaf_key, "--error-log", stapled_errors])
    try:
        r = subprocess.run(["openssl", "s_client", "-connect", "127.0.0.1:%d" % port, "-servername", "localhost", "-status"],
                           input="", capture_output=True, text=True, timeout=20)
        check("OCSP Response Status: successful" in r.stdout and "Cert Status: good" in r.stdout,
              "OCSP stapling: the responder's answer is stapled (%s)" % open(stapled_errors).read().strip()[:200])
    finally:
        p.terminate()
        p.wait(timeout=15)
finally:
    responder.terminate()
    responder.wait(timeout=15)
# The responder gone: the server still starts (after at most 5 s) and says why nothing is stapled.
errors = os.path.join(certs.dir, "errors.log")
p, port = start(["--demo", "--tls-cert", chain, "--tls-key", leaf_key, "--error-log", errors])
try:
    s = connect(port)
    check(request(s, "/")[0] == 200, "OCSP responder down: the server starts and serves")
    s.close()
    with open(errors) as f:
        logged = f.read()
    check("no OCSP stapling" in logged and chain in logged, "OCSP responder down: logged (%r)" % logged.strip()[:160])
finally:
    p.terminate()
    p.wait(timeout=15)

# --tls-client-ca: a client certificate is required; its keys are in the env.
p, port = start(["--demo", "--tls-cert", SERVER_CERT, "--tls-key", SERVER_KEY, "--tls-client-ca", certs.ca])
try:
    ctx = client_context()
    ctx.load_cert_chain(*certs.client)
    s = connect(port, ctx=ctx)
    status, body = request(s, "/env")
    env = env_of(body)
    check(status == 200 and env.get("SSL_CLIENT_VERIFY") == "SUCCESS", "ENV-18: SSL_CLIENT_VERIFY SUCCESS")
    check(env.get("SSL_CLIENT_S_DN") == "CN=test client", "ENV-18: SSL_CLIENT_S_DN %r" % env.get("SSL_CLIENT_S_DN"))
    with open(certs.client[0]) as f:
        pem = f.read()
    check(env.get("SSL_CLIENT_CERT", "").strip() == pem.strip(), "ENV-18: SSL_CLIENT_CERT is the client's PEM")
    s.close()
    try:
        s = connect(port)
        request(s, "/")  # TLS 1.3: the refusal comes after the client's Finished
        check(False, "a client without a certificate is refused")
    except (ssl.SSLError, ConnectionResetError, BrokenPipeError, ValueError) as e:
        check(True, "a client without a certificate is refused (%s)" % type(e).__name__)
finally:
    p.terminate()
    p.wait(timeout=15)

shutil.rmtree(certs.dir, ignore_errors=True)
print("%d failure(s)" % len(failures))
sys.exit(1 if failures else 0)
