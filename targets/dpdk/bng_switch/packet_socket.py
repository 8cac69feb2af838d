"""A local packet channel for the primary controller: PacketIn/PacketOut
without gRPC.

P4Runtime's StreamChannel costs this Python server some hundred
microseconds per packet, which caps a punt-driven control plane (PPPoE,
PPP, L2TP setup) at a few thousand packets per second on a small box. A
controller on the same host may instead exchange the very same packets
over a Unix SOCK_SEQPACKET socket (`packet_socket:` in the switch config):

- it connects and sends `BNGPKTIO1 ` + JSON {"device_id", "election_id":
  [high, low], "role"}; the switch answers `OK` only if that election id is
  the role's current P4Runtime primary (the controller must hold the
  stream), else `ERR <reason>` and closes. The grant ends when that client
  stops being primary: packet-ins then go to the stream again.
- every later message, both ways, is one packet: a byte with the number of
  metadata fields, then per field its P4Info metadata id (u32) and value
  (u64), big endian, then the frame. The ids and values are those of the
  P4Info `controller_packet_metadata` (packet_in from the switch,
  packet_out to it), exactly what a PacketIn/PacketOut would carry.

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
from typing import Callable

log = logging.getLogger("bng_switch.packet_socket")

MAGIC = b"BNGPKTIO1 "
FIELD = struct.Struct("!IQ")


def encode(fields: list[tuple[int, int]], payload: bytes) -> bytes:
    return bytes([len(fields)]) + b"".join(FIELD.pack(fid, v) for fid, v in fields) + payload


def decode(msg: bytes) -> tuple[list[tuple[int, int]], bytes]:
    n = msg[0]
    end = 1 + n * FIELD.size
    if len(msg) < end:
        raise ValueError("truncated metadata")
    return [FIELD.unpack_from(msg, 1 + i * FIELD.size) for i in range(n)], msg[end:]


class PacketSocket:
    """Serves one controller at a time on `path`."""

    def __init__(self, path: str, is_primary: Callable[[int, str, tuple[int, int]], bool],
                 packet_out: Callable[[dict[int, int], bytes], object | None]):
        """is_primary(device_id, role, election_id); packet_out(values, frame)
        returns None once the frame is sent, else what went wrong."""
        self.path = path
        self._is_primary = is_primary
        self._packet_out = packet_out
        self._conn: socket.socket | None = None
        self._grant: tuple[int, str, tuple[int, int]] | None = None
        self._lock = threading.Lock()
        self.stats = {"packet_in": 0, "packet_out": 0, "packet_out_errors": 0, "grants": 0, "refused": 0}
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
                self._conn.close()
                self._conn = None
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass

    # ---- packet-in ----
    def deliver(self, fields: list[tuple[int, int]], payload: bytes) -> bool:
        """Send a packet-in to the granted controller; False if there is
        none (or it is no longer primary): the caller uses the stream."""
        conn, grant = self._conn, self._grant
        if conn is None or grant is None or not self._is_primary(*grant):
            return False
        try:
            conn.send(encode(fields, payload))
        except OSError:
            self._drop(conn)
            return False
        self.stats["packet_in"] += 1
        return True

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
            if not self._is_primary(*grant):
                raise ValueError(f"election id {grant[2]} is not the primary of role '{grant[1]}'")
        except (ValueError, KeyError, TypeError, OSError) as e:
            self.stats["refused"] += 1
            try:
                conn.send(b"ERR " + str(e).encode())
            except OSError:
                pass
            conn.close()
            return
        with self._lock:
            if self._conn is not None:
                self._conn.close()              # the primary reconnected: the newest wins
            self._conn, self._grant = conn, grant
        self.stats["grants"] += 1
        conn.send(b"OK")
        log.info("packet channel granted to election id %s", grant[2])
        while not self._stop.is_set():
            try:
                msg = conn.recv(65536)
            except OSError:
                break
            if not msg:
                break
            if not self._is_primary(*grant):
                self.stats["packet_out_errors"] += 1
                continue
            try:
                fields, payload = decode(msg)
            except (ValueError, IndexError):
                self.stats["packet_out_errors"] += 1
                continue
            err = self._packet_out(dict(fields), payload)
            if err is None:
                self.stats["packet_out"] += 1
            else:
                self.stats["packet_out_errors"] += 1
        self._drop(conn)

    def _drop(self, conn: socket.socket) -> None:
        with self._lock:
            if self._conn is conn:
                self._conn, self._grant = None, None
        try:
            conn.close()
        except OSError:
            pass
