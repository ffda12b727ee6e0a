#!/usr/bin/env python3
"""A registry token service for the tests, as distribution's token authentication expects one.

GET /token?service=S&scope=repository:NAME:pull answers {"token": JWT} signed (RS256) with the
key whose self-signed certificate the registry trusts (its `rootcertbundle`; the certificate
rides in the token's x5c header). Basic credentials, when sent, must be a user of USERS (a JSON
object user -> password); anonymous callers get pull access to repositories under `public/`
only, users to every repository. Each answered request is a line of LOG: {"user", "scope"}.

Tokens are good for LIFETIME seconds (default 300; the answer's `expires_in`). With TLSCERT and
TLSKEY it speaks https with them.

Usage: registry-token.py KEY.pem CERT.pem PORT USERS.json LOG [LIFETIME [TLSCERT TLSKEY]]
"""
import base64
import http.server
import json
import ssl
import sys
import time
import uuid
from urllib.parse import parse_qs, urlparse

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding

key_path, cert_path, port, users_path, log_path = sys.argv[1:6]
LIFETIME = int(sys.argv[6]) if len(sys.argv) > 6 else 300
with open(key_path, "rb") as handle:
    KEY = serialization.load_pem_private_key(handle.read(), None)
with open(cert_path, "rb") as handle:
    CERT = x509.load_pem_x509_certificate(handle.read()).public_bytes(serialization.Encoding.DER)
with open(users_path, encoding="utf-8") as handle:
    USERS = json.load(handle)


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 (the http.server API)
        query = parse_qs(urlparse(self.path).query)
        scope = query.get("scope", [""])[0]
        service = query.get("service", [""])[0]
        user = None
        authorization = self.headers.get("Authorization", "")
        if authorization.startswith("Basic "):
            name, _, password = base64.b64decode(authorization[6:]).decode().partition(":")
            if USERS.get(name) != password:
                self.reply(401, {"errors": [{"code": "UNAUTHORIZED", "message": "wrong credentials"}]})
                return
            user = name
        access = []
        if scope.startswith("repository:"):
            _, name, _ = scope.split(":", 2)
            if user or name.startswith("public/"):
                access.append({"type": "repository", "name": name, "actions": ["pull"]})
        now = int(time.time())
        header = {"typ": "JWT", "alg": "RS256", "x5c": [base64.b64encode(CERT).decode()]}
        claims = {"iss": "worker-test-issuer", "sub": user or "", "aud": service, "exp": now + LIFETIME, "nbf": now - 10,
                  "iat": now, "jti": str(uuid.uuid4()), "access": access}
        signing_input = b64url(json.dumps(header).encode()) + "." + b64url(json.dumps(claims).encode())
        signature = KEY.sign(signing_input.encode(), padding.PKCS1v15(), hashes.SHA256())
        token = signing_input + "." + b64url(signature)
        with open(log_path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps({"user": user, "scope": scope}) + "\n")
        self.reply(200, {"token": token, "access_token": token, "expires_in": LIFETIME})

    def reply(self, status, document):
        body = json.dumps(document).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *arguments):
        pass


server = http.server.ThreadingHTTPServer(("127.0.0.1", int(port)), Handler)
if len(sys.argv) > 8:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(sys.argv[7], sys.argv[8])
    server.socket = context.wrap_socket(server.socket, server_side=True)
server.serve_forever()
