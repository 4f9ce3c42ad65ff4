"""Certificates for the TLS tests, made at test time with the `openssl` command: a test CA, a server
certificate (localhost, 127.0.0.1), a second one for SNI (other.test, *.other.test), an expired one, a
client certificate, and a key that matches none of them."""
import os
import subprocess
import tempfile


def _run(*args):
    subprocess.run(["openssl", *args], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


class Certs:
    def __init__(self, directory=None):
        self.dir = directory or tempfile.mkdtemp(prefix="csgi-tls-")
        self.ca_key, self.ca = self.path("ca.key"), self.path("ca.pem")
        _run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", self.ca_key, "-out", self.ca,
             "-days", "3", "-subj", "/CN=csgi test CA")
        self.server = self.issue("server", "localhost", ["DNS:localhost", "IP:127.0.0.1"])
        self.other = self.issue("other", "other.test", ["DNS:other.test", "DNS:*.other.test"])
        self.expired = self.issue("expired", "localhost", ["DNS:localhost"], days="-1")
        self.client = self.issue("client", "test client", None, client=True)
        self.stray_key = self.path("stray.key")
        _run("genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", self.stray_key)

    def path(self, name):
        return os.path.join(self.dir, name)

    def issue(self, name, cn, sans, days="2", client=False, ocsp_url=None):
        """A certificate signed by the test CA (naming an OCSP responder when ocsp_url is given): returns
        (cert file, key file)."""
        key, csr, cert, ext = (self.path(name + s) for s in (".key", ".csr", ".pem", ".ext"))
        _run("req", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", csr, "-subj", "/CN=" + cn)
        with open(ext, "w") as f:
            if sans:
                f.write("subjectAltName=" + ",".join(sans) + "\n")
            f.write("extendedKeyUsage=" + ("clientAuth" if client else "serverAuth") + "\n")
            if ocsp_url:
                f.write("authorityInfoAccess=OCSP;URI:" + ocsp_url + "\n")
        _run("x509", "-req", "-in", csr, "-CA", self.ca, "-CAkey", self.ca_key, "-CAcreateserial", "-out", cert,
             "-days", days, "-extfile", ext)
        return cert, key
