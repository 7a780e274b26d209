"""A real SMTP server on loopback for the behaviour tests: aiosmtpd (from the venv of
scripts/mcp-venv.sh), run by tests/src/smtp.rs.

Every accepted message is written to --maildir as one JSON file {mail_from, rcpt_tos, data,
tls, auth_login} (written to a temporary name, then renamed, so a reader never sees half a
file). Prints "READY <port>" on stdout once it listens on 127.0.0.1:<port> (port 0 = any).

Options: --user/--password make AUTH (PLAIN, LOGIN) required for MAIL; --cert/--key offer
STARTTLS with that certificate and then refuse MAIL before STARTTLS; without a certificate
AUTH is allowed over plain text (auth_require_tls=False), the setup of a relay on a trusted
network.
"""

import argparse
import asyncio
import json
import os
import ssl
import sys
import uuid

from aiosmtpd.smtp import SMTP, AuthResult, LoginPassword


class Maildir:
    def __init__(self, path):
        self.path = path

    async def handle_DATA(self, server, session, envelope):
        record = {
            "mail_from": envelope.mail_from,
            "rcpt_tos": list(envelope.rcpt_tos),
            "data": envelope.content.decode("utf-8", "replace"),
            "tls": session.ssl is not None,
            "auth_login": session.auth_data if isinstance(session.auth_data, str) else None,
        }
        name = uuid.uuid4().hex
        tmp = os.path.join(self.path, "." + name + ".tmp")
        with open(tmp, "w") as f:
            json.dump(record, f)
        os.rename(tmp, os.path.join(self.path, name + ".json"))
        return "250 2.0.0 Ok: queued as " + name[:10]


def authenticator(user, password):
    def check(server, session, envelope, mechanism, auth_data):
        ok = (
            isinstance(auth_data, LoginPassword)
            and auth_data.login.decode() == user
            and auth_data.password.decode() == password
        )
        # auth_data is what aiosmtpd keeps as session.auth_data: the user, for the test to see.
        return AuthResult(
            success=ok, handled=False, auth_data=auth_data.login.decode() if ok else None
        )

    return check


async def main():
    p = argparse.ArgumentParser()
    p.add_argument("--maildir", required=True)
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--user")
    p.add_argument("--password")
    p.add_argument("--cert")
    p.add_argument("--key")
    a = p.parse_args()

    tls = None
    if a.cert:
        tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        tls.load_cert_chain(a.cert, a.key)
    auth = a.user is not None

    def factory():
        return SMTP(
            Maildir(a.maildir),
            hostname="smtp.test",
            tls_context=tls,
            require_starttls=tls is not None,
            authenticator=authenticator(a.user, a.password) if auth else None,
            auth_required=auth,
            auth_require_tls=tls is not None,
            timeout=30,
        )

    loop = asyncio.get_running_loop()
    server = await loop.create_server(factory, host="127.0.0.1", port=a.port)
    port = server.sockets[0].getsockname()[1]
    print(f"READY {port}", flush=True)
    # Ends when the test closes our stdin (or kills us).
    await loop.run_in_executor(None, sys.stdin.read)
    server.close()


if __name__ == "__main__":
    asyncio.run(main())
