"""A local packet channel for the primary controller: PacketIn/PacketOut
without gRPC.

P4Runtime's StreamChannel costs this Python server some hundred
microseconds per packet, which caps a punt-driven control plane (PPPoE,
PPP, L2TP setup) at a few thousand packets per second on a small box. A
controller on the same host may instead exchange the very same packets
over a Unix SOCK_SEQPACKET socket (`packet_socket:` in the switch config):

- it connects and sends `BNGPKTIO1 ` + JSON {"device_id", "election_id":
  [high, low], "role"}; the switch answers `OK` only if the role is the
  default one ("", which gets the stream's packet-ins too) and that election
  id is its current P4Runtime primary (the controller must hold the
  stream), else `ERR <reason>` and closes. The grant ends when that client
  stops being primary: packet-ins then go to the stream again.
- every later message, both ways, is one packet: a byte with the number of
  metadata fields, then per field its P4Info metadata id (u32) and value
  (u64), big endian, then the frame. The ids and values are those of the
  P4Info `controller_packet_metadata` (packet_in from the switch,
  packet_out to it), exactly what a PacketIn/PacketOut would carry.

Once granted, the socket is served by libbsw's packet channel thread
(targets/dpdk/src/bsw_packet_channel.c), not by Python: the packets never
take the server's GIL. This module does the hello, the grant, and ends the
grant when the client stops being primary (`revalidate`, called on every
arbitration change) or closes the socket.

Nothing else changes: tables, counters, the pipeline, arbitration and
other clients' PacketOuts stay on P4Runtime, and without a socket client
packet-ins take the stream as before.
"""
from __future__ import annotations

import json
import logging
import os
import socket
import struct
import threading
from typing import Callable, Protocol

log = logging.getLogger("bng_switch.packet_socket")

MAGIC = b"BNGPKTIO1 "
FIELD = struct.Struct("!IQ")
SO_SNDBUFFORCE = getattr(socket, "SO_SNDBUFFORCE", 32)     # beyond net.core.wmem_max (needs CAP_NET_ADMIN)
SEND_BUFFER = 8 << 20


def encode(fields: list[tuple[int, int]], payload: bytes) -> bytes:
    return bytes([len(fields)]) + b"".join(FIELD.pack(fid, v) for fid, v in fields) + payload


def decode(msg: bytes) -> tuple[list[tuple[int, int]], bytes]:
    n = msg[0]
    end = 1 + n * FIELD.size
    if len(msg) < end:
        raise ValueError("truncated metadata")
    return [FIELD.unpack_from(msg, 1 + i * FIELD.size) for i in range(n)], msg[end:]


class Channel(Protocol):
    """Who moves the granted client's packets (the Device, through libbsw)."""

    def packet_channel_attach(self, fd: int | None) -> bool: ...

    def packet_channel_serving(self) -> bool: ...


class PacketSocket:
    """Serves one controller at a time on `path`."""

    def __init__(self, path: str, is_primary: Callable[[int, str, tuple[int, int]], bool], channel: Channel):
        """is_primary(device_id, role, election_id)."""
        self.path = path
        self._is_primary = is_primary
        self._channel = channel
        self._conn: socket.socket | None = None
        self._grant: tuple[int, str, tuple[int, int]] | None = None
        self._lock = threading.Lock()
        self.stats = {"grants": 0, "refused": 0, "revoked": 0}
        if os.path.exists(path):
            os.unlink(path)
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self._listener.bind(path)
        os.chmod(path, 0o600)
        self._listener.listen(2)
        self._stop = threading.Event()
        threading.Thread(target=self._accept_loop, name="packet-socket", daemon=True).start()

    def close(self) -> None:
        self._stop.set()
        self._listener.close()
        with self._lock:
            if self._conn is not None:
                self._end(self._conn)
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass

    def revalidate(self) -> None:
        """End the grant if its holder is no longer the primary (after an
        arbitration change): from then on packet-ins take the stream."""
        with self._lock:
            conn, grant = self._conn, self._grant
            if conn is not None and grant is not None and not self._is_primary(*grant):
                log.info("packet channel of election id %s revoked: no longer primary", grant[2])
                self.stats["revoked"] += 1
                self._end(conn)

    # ---- connections ----
    def _accept_loop(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), name="packet-socket-client", daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        try:
            hello = conn.recv(4096)
            if not hello.startswith(MAGIC):
                raise ValueError("not a packet channel client")
            req = json.loads(hello[len(MAGIC):])
            grant = (int(req["device_id"]), str(req.get("role", "")), tuple(int(x) for x in req["election_id"]))
            if grant[1]:
                # as on the stream, packet-ins go to the default role's primary
                raise ValueError(f"role '{grant[1]}': the packet channel is for the default role")
            if not self._is_primary(*grant):
                raise ValueError(f"election id {grant[2]} is not the primary of role '{grant[1]}'")
        # OverflowError (Infinity in an int) and RecursionError (deep nesting)
        # come from hellos too; whatever the client sent, it hears why
        except (ValueError, KeyError, TypeError, OSError, OverflowError, RecursionError) as e:
            self.stats["refused"] += 1
            try:
                conn.send(b"ERR " + str(e).encode())
            except OSError:
                pass
            conn.close()
            return
        try:
            # room for a setup storm's packet-ins while the controller is busy
            conn.setsockopt(socket.SOL_SOCKET, SO_SNDBUFFORCE, SEND_BUFFER)
        except OSError:
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SEND_BUFFER)
        with self._lock:
            # checked again under the lock: revalidate() may have run since
            refused = "switch stopping" if self._stop.is_set() else None
            if refused is None and not self._is_primary(*grant):
                refused = f"election id {grant[2]} is no longer the primary of role '{grant[1]}'"
            try:
                # before the library's thread may send its first packet-in
                conn.send(b"OK" if refused is None else b"ERR " + refused.encode())
            except OSError:
                refused = refused or "client gone"
            if refused is None:
                if self._conn is not None:
                    self._end(self._conn)           # the primary reconnected: the newest wins
                if self._channel.packet_channel_attach(conn.fileno()):
                    self._conn, self._grant = conn, grant
                else:                               # the client sees the channel close: stream
                    self._channel.packet_channel_attach(None)
                    refused = "the switch could not serve the channel (see its log)"
                    log.error("packet channel of election id %s: %s", grant[2], refused)
            if refused is not None:
                self.stats["refused"] += 1
                conn.close()
                return
        self.stats["grants"] += 1
        log.info("packet channel granted to election id %s", grant[2])
        # The library serves the socket; this thread only notices the end.
        while not self._stop.wait(0.2):
            serving = self._channel.packet_channel_serving()
            with self._lock:
                if self._conn is not conn:
                    return
                if not serving:
                    log.info("packet channel of election id %s closed by the client", grant[2])
                    self._end(conn)
                    return

    def _end(self, conn: socket.socket) -> None:
        """With the lock held: stop serving conn, then close it. The shutdown
        comes first and needs no other lock: the library's thread sees the
        socket end and stops moving packets at once, even while detaching
        waits for the device (a pipeline commit holds it for seconds)."""
        try:
            conn.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        if self._conn is conn:
            self._channel.packet_channel_attach(None)
            self._conn, self._grant = None, None
        try:
            conn.close()
        except OSError:
            pass
