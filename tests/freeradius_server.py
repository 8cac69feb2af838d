"""A private FreeRADIUS for tests: its own config tree in a temp dir, its
own ports on 127.0.0.1, run in the foreground and always stopped.

The installed tree (/etc/freeradius/3.0) is copied as it is, because its
files include each other by relative paths (`$INCLUDE`, `${confdir}`),
and then only what a test needs is overridden:

- radiusd.conf: the tree's own paths (raddbdir, logdir, run_dir) point
  into the temp dir, and the `user`/`group` switch is removed, so the
  server can write there whoever runs the tests; `reject_delay = 0`, so
  a reject test does not wait a second;
- clients.conf: one client, 127.0.0.1, with the test secret and
  `require_message_authenticator = yes` (so a request without one fails);
- mods-config/files/authorize: the test users;
- mods-enabled: `eap` removed (it needs certificates that a package
  install does not generate); `detail` replaced by one that writes a single
  file in the temp dir;
- sites-enabled: the stock sites (their listen sections, eap and
  inner-tunnel) replaced by one small site: auth and acct on free ports,
  PAP/CHAP/MS-CHAP through the stock modules and the `files` users,
  accounting into `detail`. Its post-auth puts a Message-Authenticator in
  every Access-Accept/Reject: FreeRADIUS before 3.2.5 (Debian 12 ships
  3.2.1) only signs replies to EAP, and our client requires the signature
  (BlastRADIUS, CVE-2024-3596). An operator on such a server does the
  same, or sets `require_message_authenticator: false`.

Use as a context manager; the process is killed on exit (and at
interpreter exit, should a test runner die half-way).
"""
from __future__ import annotations

import atexit
import re
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from pathlib import Path

FREERADIUS = Path("/usr/sbin/freeradius")
SYSTEM_RADDB = Path("/etc/freeradius/3.0")
READY = "Ready to process requests"
SECRET = "testing123"

_SITE = """\
server bng_test {{
	listen {{
		type = auth
		ipaddr = 127.0.0.1
		port = {auth_port}
	}}
	listen {{
		type = acct
		ipaddr = 127.0.0.1
		port = {acct_port}
	}}
	authorize {{
		preprocess
		chap
		mschap
		files
		pap
	}}
	authenticate {{
		Auth-Type PAP {{
			pap
		}}
		Auth-Type CHAP {{
			chap
		}}
		Auth-Type MS-CHAP {{
			mschap
		}}
	}}
	preacct {{
		preprocess
	}}
	accounting {{
		detail
	}}
	post-auth {{
		update reply {{
			Message-Authenticator := 0x00
		}}
		Post-Auth-Type REJECT {{
			attr_filter.access_reject
			update reply {{
				Message-Authenticator := 0x00
			}}
		}}
	}}
}}
"""

_DETAIL = """\
detail {{
	filename = {path}
	escape_filenames = no
	permissions = 0600
	header = "%t"
}}
"""

_CLIENTS = """\
client bng_test {{
	ipaddr = 127.0.0.1
	secret = {secret}
	require_message_authenticator = yes
	nas_type = other
}}
"""

_running: set[subprocess.Popen] = set()


@atexit.register
def _kill_leftovers() -> None:
    for proc in list(_running):
        if proc.poll() is None:
            proc.kill()


def free_udp_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def available() -> bool:
    return FREERADIUS.exists() and SYSTEM_RADDB.is_dir()


class FreeRadiusServer:
    """`with FreeRadiusServer(users) as radius:` -> radius.auth_port, .acct_port,
    .secret, .detail_records()."""

    def __init__(self, users: str, secret: str = SECRET, startup_timeout: float = 20.0) -> None:
        self.users = users
        self.secret = secret
        self.startup_timeout = startup_timeout
        self._tmp: tempfile.TemporaryDirectory | None = None
        self.proc: subprocess.Popen | None = None
        self.log: list[str] = []
        self.auth_port = 0
        self.acct_port = 0
        self.raddb = Path()
        self.detail_path = Path()

    # ------------------------------------------------------------ config

    def _write_config(self, root: Path) -> None:
        raddb = root / "raddb"
        shutil.copytree(SYSTEM_RADDB, raddb, symlinks=True)
        for sub in ("log", "run"):
            (root / sub).mkdir()
        conf = raddb / "radiusd.conf"
        text = conf.read_text()
        for key, value in (("raddbdir", raddb), ("logdir", root / "log"),
                           ("run_dir", root / "run")):
            text, n = re.subn(rf"(?m)^{key}\s*=.*$", f"{key} = {value}", text)
            assert n == 1, f"radiusd.conf: {key} not found"
        text = re.sub(r"(?m)^(\s*)(user|group)\s*=.*$", r"\1# \2 removed for tests", text)
        # rejects are delayed a second by default (against password guessing)
        text = re.sub(r"(?m)^(\s*)reject_delay\s*=.*$", r"\1reject_delay = 0", text)
        conf.write_text(text)

        (raddb / "clients.conf").write_text(_CLIENTS.format(secret=self.secret))
        (raddb / "mods-config" / "files" / "authorize").write_text(self.users)

        mods = raddb / "mods-enabled"
        (mods / "eap").unlink(missing_ok=True)
        (mods / "detail").unlink(missing_ok=True)
        self.detail_path = root / "detail"
        (mods / "detail").write_text(_DETAIL.format(path=self.detail_path))

        sites = raddb / "sites-enabled"
        for site in sites.iterdir():
            site.unlink()
        (sites / "bng_test").write_text(_SITE.format(auth_port=self.auth_port,
                                                     acct_port=self.acct_port))
        self.raddb = raddb

    # --------------------------------------------------------- lifecycle

    def start(self) -> "FreeRadiusServer":
        self._tmp = tempfile.TemporaryDirectory(prefix="bng-freeradius-")
        root = Path(self._tmp.name)
        self.auth_port, self.acct_port = free_udp_port(), free_udp_port()
        while self.acct_port == self.auth_port:
            self.acct_port = free_udp_port()
        self._write_config(root)
        self.proc = subprocess.Popen(
            [str(FREERADIUS), "-f", "-l", "stdout", "-d", str(self.raddb)],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            text=True, bufsize=1)
        _running.add(self.proc)
        ready = threading.Event()
        threading.Thread(target=self._pump, args=(ready,), daemon=True).start()
        deadline = time.monotonic() + self.startup_timeout
        while not ready.wait(0.05):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("FreeRADIUS did not start:\n" + "\n".join(self.log[-60:]))
        return self

    def _pump(self, ready: threading.Event) -> None:
        """Read the server's output for as long as it runs (a full pipe
        would block it), noting when it is ready."""
        assert self.proc is not None and self.proc.stdout is not None
        for line in self.proc.stdout:
            self.log.append(line.rstrip("\n"))
            if READY in line:
                ready.set()

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is not None:
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(5)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(5)
            _running.discard(proc)
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None

    def __enter__(self) -> "FreeRadiusServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # ----------------------------------------------------------- results

    def detail_records(self) -> list[dict[str, str]]:
        """The accounting records the `detail` module wrote, one dict per
        record ({attribute: value as FreeRADIUS prints it, quotes removed})."""
        if not self.detail_path.exists():
            return []
        records, current = [], None
        for line in self.detail_path.read_text().splitlines():
            if not line.strip():
                if current:
                    records.append(current)
                current = None
            elif not line[0].isspace():
                current = {"_header": line}
            elif current is not None and "=" in line:
                key, _, value = line.strip().partition(" = ")
                current[key] = value.strip().strip('"')
        if current:
            records.append(current)
        return records
