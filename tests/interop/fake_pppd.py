"""A stand-in for pppd, for L2TP daemons (xl2tpd) that spawn pppd per call
on a machine without kernel PPP.

xl2tpd without kernel L2TP support opens a pty pair per call and execs
`/usr/sbin/pppd TTY passive nodetach ... [name N] [file OPTFILE] [ipparam IP]`
with the pty's slave side as stdin and stdout; it turns what pppd writes
there (async HDLC frames) into L2TP data messages and back. This program
plays pppd's part as the PPP *client* of the peer (the LNS):

- RFC 1662 async HDLC framing on the tty: 0x7E flags, 0x7D escapes (every
  control character is escaped on send, i.e. ACCM 0xffffffff, which is
  always acceptable), address/control 0xFF 0x03, FCS-16 checked and sent;
  frames received with address/control or protocol field compression are
  accepted too;
- RFC 1661 LCP: a Configure-Request like pppd's defaults on an async line
  (ACCM 0, Magic-Number, PFC, ACFC; `mru N`, `default-asyncmap`,
  `nopcomp`, `noaccomp` of the options file change it), Nak/Reject
  handled; the peer's request acked when it asks for what we can do
  (MRU, ACCM, PAP or CHAP-MD5, Magic-Number, PFC, ACFC), Nak'd to PAP or
  CHAP-MD5 when it asks for another authentication protocol, anything
  unknown rejected; Echo-Request answered, Terminate-Request acked,
  Protocol-Reject for protocols we do not run;
- RFC 1334 PAP and RFC 1994 CHAP with MD5 as the authenticatee (`user`,
  `password` of the options file, or FAKE_PPPD_USER/FAKE_PPPD_PASSWORD);
- RFC 1332 IPCP: asks for 0.0.0.0 (and RFC 1877 primary/secondary DNS),
  takes the Nak'd address, acks the peer's own address;
- IPv4 once IPCP is open: answers ICMP echo requests to its address and,
  with FAKE_PPPD_PING=ADDR, pings ADDR every 0.2 s and counts the replies.

The tty is a pty that xl2tpd leaves in canonical mode until we make it
raw: bytes the peer sends before that (our start-up) can be mangled by
the line discipline (0x7F is ERASE, and xl2tpd does not escape it), so a
bad FCS right at the start is xl2tpd's doing and is only counted
(`bad_fcs`; `bad_fcs_after_lcp_open` is the meaningful one). Run
`stty raw -echo` before this program to shorten that window.

State goes to the JSON file FAKE_PPPD_STATUS (rewritten atomically on every
change; `{pid}` in the name is replaced), log lines to stderr. SIGTERM or
SIGHUP (what xl2tpd sends when a call ends) sends an LCP
Terminate-Request and exits. Written from the RFCs; stdlib only.
"""
from __future__ import annotations

import hashlib
import json
import os
import random
import select
import signal
import struct
import sys
import termios
import time
import tty

# ---------------------------------------------------------------- framing

FLAG, ESC = 0x7E, 0x7D
_FCS_TABLE = []
for _b in range(256):
    _v = _b
    for _ in range(8):
        _v = (_v >> 1) ^ 0x8408 if _v & 1 else _v >> 1
    _FCS_TABLE.append(_v)
GOOD_FCS = 0xF0B8


def fcs16(data: bytes, fcs: int = 0xFFFF) -> int:
    for b in data:
        fcs = (fcs >> 8) ^ _FCS_TABLE[(fcs ^ b) & 0xFF]
    return fcs


def hdlc_encode(protocol: int, info: bytes) -> bytes:
    """One async HDLC frame: FF 03, protocol (never compressed), info, FCS."""
    frame = bytes([0xFF, 0x03]) + struct.pack("!H", protocol) + info
    fcs = fcs16(frame) ^ 0xFFFF
    frame += bytes([fcs & 0xFF, fcs >> 8])
    out = bytearray([FLAG])
    for b in frame:
        if b < 0x20 or b in (FLAG, ESC):
            out += bytes([ESC, b ^ 0x20])
        else:
            out.append(b)
    out.append(FLAG)
    return bytes(out)


class HdlcDecoder:
    def __init__(self):
        self.buf = bytearray()
        self.escape = False
        self.bad_fcs = 0
        self.acfc_seen = False       # a frame without FF 03
        self.pfc_seen = False        # a one-byte protocol field

    def feed(self, data: bytes):
        """Yields (protocol, info) for each complete good frame."""
        for b in data:
            if b == FLAG:
                frame, self.buf, self.escape = bytes(self.buf), bytearray(), False
                if len(frame) < 4:
                    continue
                if fcs16(frame) != GOOD_FCS:
                    self.bad_fcs += 1
                    continue
                frame = frame[:-2]
                if frame[:2] == b"\xff\x03":
                    frame = frame[2:]
                else:
                    self.acfc_seen = True
                if not frame:
                    continue
                if frame[0] & 1:
                    self.pfc_seen = True
                    protocol, info = frame[0], frame[1:]
                elif len(frame) >= 2:
                    protocol, info = struct.unpack("!H", frame[:2])[0], frame[2:]
                else:
                    continue
                yield protocol, info
            elif b == ESC:
                self.escape = True
            else:
                if self.escape:
                    b ^= 0x20
                    self.escape = False
                self.buf.append(b)


# ---------------------------------------------------------------- PPP

LCP, PAP, CHAP, IPCP, IPV4 = 0xC021, 0xC023, 0xC223, 0x8021, 0x0021
CONF_REQ, CONF_ACK, CONF_NAK, CONF_REJ, TERM_REQ, TERM_ACK, CODE_REJ, PROTO_REJ, ECHO_REQ, ECHO_REP, DISCARD = \
    range(1, 12)
LCP_MRU, LCP_ACCM, LCP_AUTH, LCP_MAGIC, LCP_PFC, LCP_ACFC = 1, 2, 3, 5, 7, 8
IPCP_ADDR, IPCP_DNS1, IPCP_DNS2 = 3, 129, 131


def packet(code: int, ident: int, data: bytes = b"") -> bytes:
    return struct.pack("!BBH", code, ident, 4 + len(data)) + data


def parse_options(data: bytes) -> list[tuple[int, bytes]] | None:
    out, i = [], 0
    while i < len(data):
        if i + 2 > len(data) or data[i + 1] < 2 or i + data[i + 1] > len(data):
            return None
        out.append((data[i], bytes(data[i + 2:i + data[i + 1]])))
        i += data[i + 1]
    return out


def options(opts: list[tuple[int, bytes]]) -> bytes:
    return b"".join(bytes([t, 2 + len(v)]) + v for t, v in opts)


def ip_checksum(data: bytes) -> int:
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def ipv4_icmp(src: bytes, dst: bytes, icmp: bytes, ident: int) -> bytes:
    hdr = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(icmp), ident & 0xFFFF, 0, 64, 1, 0, src, dst)
    hdr = hdr[:10] + struct.pack("!H", ip_checksum(hdr)) + hdr[12:]
    return hdr + icmp


def icmp_echo(kind: int, ident: int, seq: int, payload: bytes) -> bytes:
    m = struct.pack("!BBHHH", kind, 0, 0, ident, seq) + payload
    return m[:2] + struct.pack("!H", ip_checksum(m)) + m[4:]


def dotted(b: bytes) -> str:
    return ".".join(str(x) for x in b)


class Link:
    RESTART = 1.0
    MAX_CONFIGURE = 10

    def __init__(self, fd: int, cfg: dict, status_path: str | None, ping: str | None):
        self.fd = fd
        self.cfg = cfg
        self.status_path = status_path
        self.ping_target = bytes(int(x) for x in ping.split(".")) if ping else None
        self.dec = HdlcDecoder()
        self.bad_fcs_at_open: int | None = None
        self.rand = random.Random()
        self.ident = self.rand.randrange(256)
        self.magic = self.rand.getrandbits(32) or 1
        self.st = {"pid": os.getpid(), "args": sys.argv[1:], "user": cfg["user"], "lcp": "starting",
                   "auth": None, "auth_protocol": None, "ipcp": "closed", "address": None, "peer_address": None,
                   "dns": [], "peer_lcp_options": {}, "lcp_rejected_by_peer": [], "lcp_naked_by_peer": [],
                   "echo_requests_answered": 0, "icmp_echo_answered": 0,
                   "ping": {"target": ping, "sent": 0, "received": 0}, "bad_fcs": 0,
                   "acfc_seen": False, "pfc_seen": False, "protocol_rejects_sent": [], "terminated_by": None,
                   "events": []}
        # LCP
        self.lcp_opts = []
        if cfg["mru"]:
            self.lcp_opts.append((LCP_MRU, struct.pack("!H", cfg["mru"])))
        if not cfg["default_asyncmap"]:
            self.lcp_opts.append((LCP_ACCM, b"\0\0\0\0"))
        self.lcp_opts.append((LCP_MAGIC, struct.pack("!I", self.magic)))
        if not cfg["nopcomp"]:
            self.lcp_opts.append((LCP_PFC, b""))
        if not cfg["noaccomp"]:
            self.lcp_opts.append((LCP_ACFC, b""))
        self.reset_lcp()
        # IPCP
        self.ipcp_opts: list[tuple[int, bytes]] = []
        self.reset_ipcp()
        self.ping_seq = 0
        self.next_ping = 0.0
        self.quit = False

    # ---- bookkeeping
    def event(self, what: str) -> None:
        log(what)
        self.st["events"].append(f"{time.time():.3f} {what}")
        self.write_status()

    def write_status(self) -> None:
        self.st["bad_fcs"] = self.dec.bad_fcs
        if self.bad_fcs_at_open is not None:
            self.st["bad_fcs_after_lcp_open"] = self.dec.bad_fcs - self.bad_fcs_at_open
        self.st["acfc_seen"], self.st["pfc_seen"] = self.dec.acfc_seen, self.dec.pfc_seen
        if not self.status_path:
            return
        tmp = f"{self.status_path}.tmp"
        with open(tmp, "w") as f:
            json.dump(self.st, f, indent=1)
        os.replace(tmp, self.status_path)

    def next_id(self) -> int:
        self.ident = (self.ident + 1) & 0xFF
        return self.ident

    def send(self, protocol: int, info: bytes) -> None:
        data = hdlc_encode(protocol, info)
        while data:
            try:
                n = os.write(self.fd, data)
            except BlockingIOError:
                select.select([], [self.fd], [], 1.0)
                continue
            data = data[n:]

    # ---- LCP
    def reset_lcp(self) -> None:
        self.lcp_acked = self.lcp_peer_acked = False
        self.lcp_req_id = None
        self.lcp_tries = 0
        self.lcp_timer = 0.0               # send a request now
        self.auth_proto = None             # what the peer asked for (ours to do)
        self.auth_done = False
        self.pap_timer = None
        self.pap_tries = 0

    def lcp_open(self) -> bool:
        return self.lcp_acked and self.lcp_peer_acked

    def send_lcp_req(self) -> None:
        self.lcp_req_id = self.next_id()
        self.lcp_tries += 1
        self.send(LCP, packet(CONF_REQ, self.lcp_req_id, options(self.lcp_opts)))
        self.lcp_timer = time.time() + self.RESTART

    def on_lcp(self, data: bytes) -> None:
        if len(data) < 4:
            return
        code, ident, length = struct.unpack("!BBH", data[:4])
        body = data[4:length]
        if code == CONF_REQ:
            if self.lcp_open():              # the peer starts over: so do we
                self.event("LCP renegotiation by the peer")
                self.reset_lcp()
                self.reset_ipcp()
                self.st["lcp"] = "renegotiating"
                self.send_lcp_req()
            self.lcp_peer_request(ident, body)
        elif code in (CONF_ACK, CONF_NAK, CONF_REJ):
            if ident != self.lcp_req_id or self.lcp_acked:
                return
            opts = parse_options(body) or []
            if code == CONF_ACK:
                self.lcp_acked = True
                self.lcp_timer = None
            elif code == CONF_NAK:
                self.st["lcp_naked_by_peer"] += [t for t, _ in opts]
                for t, v in opts:
                    if t == LCP_MAGIC:
                        self.magic = self.rand.getrandbits(32) or 1
                        v = struct.pack("!I", self.magic)
                    self.lcp_opts = [(ot, v if ot == t else ov) for ot, ov in self.lcp_opts]
                self.send_lcp_req()
            else:
                gone = {t for t, _ in opts}
                self.st["lcp_rejected_by_peer"] += sorted(gone)
                self.lcp_opts = [(t, v) for t, v in self.lcp_opts if t not in gone]
                self.send_lcp_req()
            if self.lcp_open():
                self.lcp_up()
        elif code == TERM_REQ:
            self.send(LCP, packet(TERM_ACK, ident, body))
            self.st["terminated_by"] = "peer"
            self.event("LCP Terminate-Request from the peer")
            self.quit = True
        elif code == ECHO_REQ:
            if self.lcp_open():
                self.send(LCP, packet(ECHO_REP, ident, struct.pack("!I", self.magic) + body[4:]))
                self.st["echo_requests_answered"] += 1
        elif code in (ECHO_REP, DISCARD, TERM_ACK):
            pass
        elif code == PROTO_REJ:
            self.event(f"Protocol-Reject from the peer: {body[:2].hex()}")
        elif code == CODE_REJ:
            self.event(f"Code-Reject from the peer: {body[:4].hex()}")
        else:
            self.send(LCP, packet(CODE_REJ, self.next_id(), data[:length]))

    def lcp_peer_request(self, ident: int, body: bytes) -> None:
        opts = parse_options(body)
        if opts is None:
            return
        rej, nak = [], []
        auth = None
        for t, v in opts:
            if t == LCP_MRU and len(v) == 2:
                pass
            elif t == LCP_ACCM and len(v) == 4:
                pass
            elif t == LCP_MAGIC and len(v) == 4:
                if struct.unpack("!I", v)[0] == self.magic:
                    nak.append((t, struct.pack("!I", self.rand.getrandbits(32) or 1)))
            elif t in (LCP_PFC, LCP_ACFC) and not v:
                pass
            elif t == LCP_AUTH and len(v) >= 2:
                proto = struct.unpack("!H", v[:2])[0]
                if proto == PAP and not self.cfg["refuse_pap"]:
                    auth = PAP
                elif proto == CHAP and v[2:] == b"\x05" and not self.cfg["refuse_chap"]:
                    auth = CHAP
                elif not self.cfg["refuse_chap"]:
                    nak.append((t, struct.pack("!HB", CHAP, 5)))
                elif not self.cfg["refuse_pap"]:
                    nak.append((t, struct.pack("!H", PAP)))
                else:
                    rej.append((t, v))
            else:
                rej.append((t, v))
        if rej:
            self.send(LCP, packet(CONF_REJ, ident, options(rej)))
        elif nak:
            self.send(LCP, packet(CONF_NAK, ident, options(nak)))
        else:
            self.send(LCP, packet(CONF_ACK, ident, body))
            self.st["peer_lcp_options"] = {str(t): v.hex() for t, v in opts}
            self.auth_proto = auth
            was_open = self.lcp_open()
            self.lcp_peer_acked = True
            if self.lcp_open() and not was_open:
                self.lcp_up()

    def lcp_up(self) -> None:
        if self.bad_fcs_at_open is None:
            self.bad_fcs_at_open = self.dec.bad_fcs
        self.st["lcp"] = "opened"
        self.st["auth_protocol"] = {PAP: "pap", CHAP: "chap-md5", None: "none"}[self.auth_proto]
        self.event(f"LCP opened (auth {self.st['auth_protocol']})")
        if self.auth_proto is None:
            self.auth_ok()
        elif self.auth_proto == PAP:
            self.send_pap()

    # ---- authentication
    def send_pap(self) -> None:
        u, p = self.cfg["user"].encode(), self.cfg["password"].encode()
        self.pap_id = self.next_id()
        self.pap_tries += 1
        self.send(PAP, packet(1, self.pap_id, bytes([len(u)]) + u + bytes([len(p)]) + p))
        self.pap_timer = time.time() + self.RESTART

    def on_pap(self, data: bytes) -> None:
        if len(data) < 4 or self.auth_proto != PAP or self.auth_done:
            return
        code, ident = data[0], data[1]
        if ident != self.pap_id:
            return
        self.pap_timer = None
        if code == 2:
            self.auth_ok()
        elif code == 3:
            self.auth_failed()

    def on_chap(self, data: bytes) -> None:
        if len(data) < 5 or self.auth_proto != CHAP or not self.lcp_open():
            return
        code, ident, length = struct.unpack("!BBH", data[:4])
        if code == 1:                                   # Challenge
            n = data[4]
            challenge = data[5:5 + n]
            digest = hashlib.md5(bytes([ident]) + self.cfg["password"].encode() + challenge).digest()
            name = self.cfg["user"].encode()
            self.send(CHAP, packet(2, ident, bytes([16]) + digest + name))
        elif code == 3 and not self.auth_done:
            self.auth_ok()
        elif code == 4:
            self.auth_failed()

    def auth_ok(self) -> None:
        self.auth_done = True
        self.st["auth"] = "ok"
        self.event("authenticated")
        self.ipcp_start()

    def auth_failed(self) -> None:
        self.st["auth"] = "failed"
        self.event("authentication failed")
        self.terminate("authentication failed")

    # ---- IPCP
    def reset_ipcp(self) -> None:
        self.ipcp_opts = [(IPCP_ADDR, b"\0\0\0\0"), (IPCP_DNS1, b"\0\0\0\0"), (IPCP_DNS2, b"\0\0\0\0")]
        self.ipcp_acked = self.ipcp_peer_acked = False
        self.ipcp_req_id = None
        self.ipcp_timer = None
        self.ipcp_tries = 0
        self.st["ipcp"] = "closed"
        self.pending_ipcp: list[bytes] = []

    def ipcp_start(self) -> None:
        self.st["ipcp"] = "req-sent"
        self.send_ipcp_req()
        for p in self.pending_ipcp:
            self.on_ipcp(p)
        self.pending_ipcp = []

    def send_ipcp_req(self) -> None:
        self.ipcp_req_id = self.next_id()
        self.ipcp_tries += 1
        self.send(IPCP, packet(CONF_REQ, self.ipcp_req_id, options(self.ipcp_opts)))
        self.ipcp_timer = time.time() + self.RESTART

    def ipcp_open(self) -> bool:
        return self.ipcp_acked and self.ipcp_peer_acked

    def on_ipcp(self, data: bytes) -> None:
        if len(data) < 4:
            return
        if not self.auth_done:                          # early: keep it for later
            self.pending_ipcp.append(data)
            return
        code, ident, length = struct.unpack("!BBH", data[:4])
        body = data[4:length]
        was_open = self.ipcp_open()
        if code == CONF_REQ:
            opts = parse_options(body)
            if opts is None:
                return
            rej = [(t, v) for t, v in opts if t != IPCP_ADDR]
            if rej:
                self.send(IPCP, packet(CONF_REJ, ident, options(rej)))
                return
            self.send(IPCP, packet(CONF_ACK, ident, body))
            for t, v in opts:
                self.st["peer_address"] = dotted(v)
            self.ipcp_peer_acked = True
        elif code in (CONF_ACK, CONF_NAK, CONF_REJ) and ident == self.ipcp_req_id:
            opts = parse_options(body) or []
            if code == CONF_ACK:
                self.ipcp_acked = True
                self.ipcp_timer = None
            else:
                if code == CONF_NAK:
                    new = dict(opts)
                    self.ipcp_opts = [(t, new.get(t, v)) for t, v in self.ipcp_opts]
                else:
                    gone = {t for t, _ in opts}
                    self.ipcp_opts = [(t, v) for t, v in self.ipcp_opts if t not in gone]
                self.send_ipcp_req()
        elif code == TERM_REQ:
            self.send(IPCP, packet(TERM_ACK, ident, body))
            self.event("IPCP Terminate-Request from the peer")
            self.ipcp_acked = self.ipcp_peer_acked = False
            self.st["ipcp"] = "closed"
            return
        if self.ipcp_open() and not was_open:
            o = dict(self.ipcp_opts)
            self.st["ipcp"] = "opened"
            self.st["address"] = dotted(o[IPCP_ADDR])
            self.st["dns"] = [dotted(o[t]) for t in (IPCP_DNS1, IPCP_DNS2) if t in o]
            self.event(f"IPCP opened: {self.st['address']} (peer {self.st['peer_address']})")
            self.next_ping = time.time()

    # ---- IPv4
    def on_ipv4(self, ip: bytes) -> None:
        if not self.ipcp_open() or len(ip) < 28 or ip[0] >> 4 != 4 or ip[9] != 1:
            return
        ihl = (ip[0] & 0x0F) * 4
        src, dst = ip[12:16], ip[16:20]
        me = dict(self.ipcp_opts)[IPCP_ADDR]
        if dst != me:
            return
        icmp = ip[ihl:struct.unpack("!H", ip[2:4])[0]]
        if len(icmp) < 8:
            return
        kind = icmp[0]
        ident, seq = struct.unpack("!HH", icmp[4:8])
        if kind == 8:                                    # echo request: answer it
            self.send(IPV4, ipv4_icmp(me, src, icmp_echo(0, ident, seq, icmp[8:]), self.rand.getrandbits(16)))
            self.st["icmp_echo_answered"] += 1
            self.write_status()
        elif kind == 0 and ident == os.getpid() & 0xFFFF and src == self.ping_target:
            self.st["ping"]["received"] += 1
            self.write_status()

    def ping(self) -> None:
        me = dict(self.ipcp_opts)[IPCP_ADDR]
        self.ping_seq += 1
        msg = icmp_echo(8, os.getpid() & 0xFFFF, self.ping_seq, b"fake-pppd".ljust(32, b"."))
        self.send(IPV4, ipv4_icmp(me, self.ping_target, msg, self.ping_seq))
        self.st["ping"]["sent"] += 1
        self.write_status()

    # ---- the loop
    def terminate(self, why: str) -> None:
        if self.st["terminated_by"] is None:
            self.st["terminated_by"] = f"us: {why}"
        self.send(LCP, packet(TERM_REQ, self.next_id(), why.encode()))
        self.quit = True

    def timers(self, now: float) -> None:
        if self.lcp_timer is not None and now >= self.lcp_timer:
            if self.lcp_tries >= self.MAX_CONFIGURE:
                self.event("LCP: no answer to our Configure-Request")
                self.quit = True
                return
            self.send_lcp_req()
        if self.pap_timer is not None and now >= self.pap_timer:
            if self.pap_tries >= self.MAX_CONFIGURE:
                self.auth_failed()
                return
            self.send_pap()
        if self.ipcp_timer is not None and now >= self.ipcp_timer:
            if self.ipcp_tries >= self.MAX_CONFIGURE:
                self.event("IPCP: no answer to our Configure-Request")
                self.terminate("IPCP timeout")
                return
            self.send_ipcp_req()
        if self.ping_target and self.ipcp_open() and now >= self.next_ping:
            self.ping()
            self.next_ping = now + 0.2

    def dispatch(self, protocol: int, info: bytes) -> None:
        if protocol == LCP:
            self.on_lcp(info)
        elif not self.lcp_open():
            return                                      # RFC 1661: silently discarded
        elif protocol == PAP:
            self.on_pap(info)
        elif protocol == CHAP:
            self.on_chap(info)
        elif protocol == IPCP:
            self.on_ipcp(info)
        elif protocol == IPV4:
            self.on_ipv4(info)
        else:
            self.send(LCP, packet(PROTO_REJ, self.next_id(), struct.pack("!H", protocol) + info[:64]))
            self.st["protocol_rejects_sent"].append(hex(protocol))

    def run(self) -> None:
        self.write_status()
        while not self.quit and not stop_requested:
            now = time.time()
            self.timers(now)
            if self.quit:
                break
            try:
                r, _, _ = select.select([self.fd], [], [], 0.05)
            except InterruptedError:
                continue
            if not r:
                continue
            try:
                data = os.read(self.fd, 65536)
            except BlockingIOError:
                continue
            except OSError as e:                         # EIO: xl2tpd closed the pty
                self.event(f"tty closed: {e}")
                self.quit = True
                break
            if not data:
                self.event("tty EOF")
                break
            for protocol, info in self.dec.feed(data):
                self.dispatch(protocol, info)
        if stop_requested and self.st["terminated_by"] is None:
            try:
                self.terminate(f"signal {stop_requested}")
            except OSError:
                pass
        self.st["lcp"] = "closed" if self.st["lcp"] == "opened" else self.st["lcp"]
        self.st["ipcp"] = "closed"
        self.event("exiting")


# ---------------------------------------------------------------- main

stop_requested = 0


def log(msg: str) -> None:
    sys.stderr.write(f"fake-pppd[{os.getpid()}]: {msg}\n")
    sys.stderr.flush()


def read_options(args: list[str]) -> dict:
    """pppd's command line and `file` options we care about."""
    cfg = {"user": os.environ.get("FAKE_PPPD_USER", ""), "password": os.environ.get("FAKE_PPPD_PASSWORD", ""),
           "mru": 0, "default_asyncmap": False, "nopcomp": False, "noaccomp": False,
           "refuse_pap": False, "refuse_chap": False}
    words = list(args)
    i = 0
    while i < len(words):
        w = words[i]
        arg = words[i + 1] if i + 1 < len(words) else ""
        if w == "file":
            with open(arg) as f:
                extra = []
                for line in f:
                    line = line.split("#", 1)[0].strip()
                    if line:
                        key, _, rest = line.partition(" ")
                        extra += [key] + ([rest.strip().strip('"')] if rest.strip() else [])
            words[i + 2:i + 2] = extra
            i += 2
        elif w in ("name", "user"):
            cfg["user"] = cfg["user"] or arg
            i += 2
        elif w == "password":
            cfg["password"] = cfg["password"] or arg
            i += 2
        elif w == "mru":
            cfg["mru"] = int(arg)
            i += 2
        elif w in ("ipparam", "plugin", "passwordfd", "remotename"):
            i += 2
        else:
            key = w.replace("-", "_")
            if key in ("default_asyncmap", "nopcomp", "noaccomp", "refuse_pap", "refuse_chap"):
                cfg[key] = True
            i += 1
    return cfg


def main() -> int:
    global stop_requested
    args = sys.argv[1:]
    if args and args[0].startswith("/dev/"):
        args = args[1:]                                  # the tty: it is our stdin/stdout
    cfg = read_options(args)

    def on_signal(sig, frame):
        global stop_requested
        stop_requested = sig
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGHUP, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    fd = 0
    try:
        tty.setraw(fd, termios.TCSANOW)
    except termios.error as e:
        log(f"not a tty ({e}); going on")
    os.set_blocking(fd, False)
    status = os.environ.get("FAKE_PPPD_STATUS")
    if status:
        status = status.replace("{pid}", str(os.getpid()))
    link = Link(fd, cfg, status, os.environ.get("FAKE_PPPD_PING") or None)
    log(f"started: {' '.join(sys.argv[1:])}; user {cfg['user']!r}")
    link.run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
