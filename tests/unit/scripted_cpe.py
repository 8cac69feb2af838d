"""A scripted PPPoE CPE for controller unit tests, written from RFC 2516,
1661, 1332, 1334 and 1994 with struct (no controller code): it reacts to
what the BNG sends the way a plain client does, and records what it saw,
so tests can assert on the conversation. Knobs make it misbehave."""
from __future__ import annotations

import hashlib
import struct

BCAST = b"\xff" * 6
LCP, PAP, CHAP, IPCP, IPV6CP = 0xC021, 0xC023, 0xC223, 0x8021, 0x8057


def eth(dst: bytes, src: bytes, etype: int, s_vid: int = 0, c_vid: int = 0) -> bytes:
    if s_vid and c_vid:
        return dst + src + struct.pack("!HHHHH", 0x88A8, s_vid, 0x8100, c_vid, etype)
    if s_vid:
        return dst + src + struct.pack("!HHH", 0x8100, s_vid, etype)
    return dst + src + struct.pack("!H", etype)


def tags(*items: tuple[int, bytes]) -> bytes:
    return b"".join(struct.pack("!HH", t, len(v)) + v for t, v in items)


def parse_tags(data: bytes) -> dict[int, bytes]:
    out, off = {}, 0
    while off + 4 <= len(data):
        t, n = struct.unpack_from("!HH", data, off)
        out.setdefault(t, data[off + 4:off + 4 + n])
        off += 4 + n
    return out


def opts(*items: tuple[int, bytes]) -> bytes:
    return b"".join(bytes((t, len(v) + 2)) + v for t, v in items)


def parse_opts(data: bytes) -> list[tuple[int, bytes]]:
    out, off = [], 0
    while off + 2 <= len(data):
        t, n = data[off], data[off + 1]
        out.append((t, data[off + 2:off + n]))
        off += n
    return out


def ctl(code: int, ident: int, data: bytes = b"") -> bytes:
    return struct.pack("!BBH", code, ident, 4 + len(data)) + data


class ScriptedCpe:
    def __init__(self, mac: bytes, bng_mac: bytes, user: str = "alice", password: str = "secret",
                 s_vid: int = 0, c_vid: int = 0, magic: int = 0x11223344, host_uniq: bytes = b"hu01"):
        self.mac, self.bng_mac = mac, bng_mac
        self.user, self.password = user, password
        self.s_vid, self.c_vid = s_vid, c_vid
        self.magic = magic
        self.mru = 1492
        self.host_uniq = host_uniq
        self.session_id = 0
        self.cookie = b""
        self.ac_mac = b""
        self.ip = b"\0\0\0\0"
        self.dns = b"\0\0\0\0"
        self.lcp_acked_by_peer = self.lcp_acked_peer = False
        self.ipcp_acked_by_peer = self.ipcp_acked_peer = False
        self.auth_ok: bool | None = None
        self.padt_received = False
        self.term_req_received = False
        self.seen: list[tuple[int, int]] = []           # (protocol, code) of session packets
        self.ident = 0
        self.auth_proto = b""
        self.pap_sent = False
        self.answer_echo = True
        self.out: list[bytes] = []

    # ---- frames to the BNG ----
    def _disc(self, code: int, sid: int, body: bytes, dst: bytes) -> bytes:
        return eth(dst, self.mac, 0x8863, self.s_vid, self.c_vid) + struct.pack("!BBHH", 0x11, code, sid,
                                                                                 len(body)) + body

    def padi(self, service: bytes = b"") -> bytes:
        return self._disc(0x09, 0, tags((0x0101, service), (0x0103, self.host_uniq)), BCAST)

    def padr(self, service: bytes = b"", cookie: bytes | None = None) -> bytes:
        return self._disc(0x19, 0, tags((0x0101, service), (0x0103, self.host_uniq),
                                        (0x0104, self.cookie if cookie is None else cookie)), self.ac_mac)

    def padt(self) -> bytes:
        return self._disc(0xA7, self.session_id, b"", self.ac_mac)

    def ppp(self, proto: int, info: bytes) -> bytes:
        return (eth(self.ac_mac, self.mac, 0x8864, self.s_vid, self.c_vid)
                + struct.pack("!BBHHH", 0x11, 0, self.session_id, len(info) + 2, proto) + info)

    def next_id(self) -> int:
        self.ident = (self.ident + 1) & 0xFF
        return self.ident

    def lcp_request(self) -> bytes:
        return self.ppp(LCP, ctl(1, self.next_id(), opts((1, struct.pack("!H", self.mru)),
                                                         (5, struct.pack("!I", self.magic)))))

    def ipcp_request(self) -> bytes:
        return self.ppp(IPCP, ctl(1, self.next_id(), opts((3, self.ip), (129, self.dns))))

    # ---- reacting to the BNG ----
    def receive(self, frame: bytes) -> list[bytes]:
        """Frames the CPE sends in answer."""
        etype = struct.unpack_from("!H", frame, 12)[0]
        off = 14
        while etype in (0x8100, 0x88A8):
            etype = struct.unpack_from("!H", frame, off + 2)[0]
            off += 4
        if frame[:6] != self.mac:
            return []
        if etype == 0x8863:
            return self._discovery(frame, off)
        if etype != 0x8864:
            return []
        proto = struct.unpack_from("!H", frame, off + 6)[0]
        length = struct.unpack_from("!H", frame, off + 4)[0]
        info = frame[off + 8:off + 6 + length]
        code, ident = info[0], info[1]
        self.seen.append((proto, code))
        data = info[4:struct.unpack_from("!H", info, 2)[0]]
        if proto == LCP:
            return self._lcp(code, ident, data)
        if proto == PAP:
            self.auth_ok = code == 2
            return []
        if proto == CHAP:
            if code == 1:
                n = data[0]
                challenge = data[1:1 + n]
                resp = hashlib.md5(bytes([ident]) + self.password.encode() + challenge).digest()
                return [self.ppp(CHAP, ctl(2, ident, bytes([16]) + resp + self.user.encode()))]
            self.auth_ok = code == 3
            return []
        if proto == IPCP:
            return self._ipcp(code, ident, data)
        if proto == IPV6CP and code == 1:
            return [self.ppp(LCP, ctl(8, self.next_id(), struct.pack("!H", IPV6CP) + info))]
        return []

    def _discovery(self, frame: bytes, off: int) -> list[bytes]:
        code, sid = frame[off + 1], struct.unpack_from("!H", frame, off + 2)[0]
        length = struct.unpack_from("!H", frame, off + 4)[0]
        t = parse_tags(frame[off + 6:off + 6 + length])
        if code == 0x07:                                  # PADO
            self.ac_mac = frame[6:12]
            self.cookie = t.get(0x0104, b"")
            self.pado_tags = t
            return [self.padr()]
        if code == 0x65:                                  # PADS
            self.session_id = sid
            self.pads_tags = t
            return [self.lcp_request()] if sid else []
        if code == 0xA7:
            self.padt_received = True
        return []

    def _lcp(self, code: int, ident: int, data: bytes) -> list[bytes]:
        if code == 1:
            out = []
            options = parse_opts(data)
            auth = [v for t, v in options if t == 3]
            if auth and auth[0] not in (struct.pack("!H", PAP), struct.pack("!HB", CHAP, 5)):
                return [self.ppp(LCP, ctl(3, ident, opts((3, struct.pack("!H", PAP)))))]
            self.auth_proto = auth[0] if auth else b""
            self.lcp_acked_peer = True
            out.append(self.ppp(LCP, ctl(2, ident, data)))
            return out + self._maybe_pap()
        if code == 2:
            self.lcp_acked_by_peer = True
            return self._maybe_pap()
        if code == 5:
            self.term_req_received = True
            return [self.ppp(LCP, ctl(6, ident))]
        if code == 9 and self.answer_echo:
            return [self.ppp(LCP, ctl(10, ident, struct.pack("!I", self.magic) + data[4:]))]
        return []

    def _maybe_pap(self) -> list[bytes]:
        if (self.lcp_acked_peer and self.lcp_acked_by_peer and not self.pap_sent
                and self.auth_proto == struct.pack("!H", PAP)):
            self.pap_sent = True
            return [self.pap_request()]
        return []

    def pap_request(self) -> bytes:
        u, p = self.user.encode(), self.password.encode()
        return self.ppp(PAP, ctl(1, self.next_id(), bytes([len(u)]) + u + bytes([len(p)]) + p))

    def _ipcp(self, code: int, ident: int, data: bytes) -> list[bytes]:
        if code == 1:
            self.ipcp_acked_peer = True
            out = [self.ppp(IPCP, ctl(2, ident, data))]
            if not self.ipcp_acked_by_peer:
                out.append(self.ipcp_request())
            return out
        if code == 3:                                     # Nak: take the suggestions
            for t, v in parse_opts(data):
                if t == 3:
                    self.ip = v
                elif t == 129:
                    self.dns = v
            return [self.ipcp_request()]
        if code == 2:
            self.ipcp_acked_by_peer = True
        return []

    @property
    def ipcp_up(self) -> bool:
        return self.ipcp_acked_by_peer and self.ipcp_acked_peer
