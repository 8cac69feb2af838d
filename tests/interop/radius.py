"""tests/freeradius_server.py's private FreeRADIUS, run inside a network
namespace (on that namespace's 127.0.0.1, standard ports 1812/1813: the
namespace is ours alone), for a NAS that lives there too (l2tpns).

One difference in the config: the client is not required to sign its
Access-Requests with a Message-Authenticator (l2tpns 2.4.1 does not)."""
from __future__ import annotations

import subprocess
import threading
import time
from pathlib import Path

from tests import freeradius_server as fr

CLIENTS = """\
client nas_in_netns {{
	ipaddr = 127.0.0.1
	secret = {secret}
	require_message_authenticator = no
	nas_type = other
}}
"""


class NetnsFreeRadius(fr.FreeRadiusServer):
    def __init__(self, users: str, netns: str, **kw) -> None:
        super().__init__(users, **kw)
        self.netns = netns

    def _write_config(self, root: Path) -> None:
        super()._write_config(root)
        (self.raddb / "clients.conf").write_text(CLIENTS.format(secret=self.secret))

    def start(self) -> "NetnsFreeRadius":
        import tempfile
        self._tmp = tempfile.TemporaryDirectory(prefix="bng-freeradius-")
        self.auth_port, self.acct_port = 1812, 1813
        self._write_config(Path(self._tmp.name))
        self.proc = subprocess.Popen(
            ["ip", "netns", "exec", self.netns, str(fr.FREERADIUS), "-f", "-l", "stdout", "-d", str(self.raddb)],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, text=True, bufsize=1)
        fr._running.add(self.proc)
        ready = threading.Event()
        threading.Thread(target=self._pump, args=(ready,), daemon=True).start()
        deadline = time.monotonic() + self.startup_timeout
        while not ready.wait(0.05):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("FreeRADIUS did not start:\n" + "\n".join(self.log[-60:]))
        return self
