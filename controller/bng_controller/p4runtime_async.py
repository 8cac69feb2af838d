"""The controller's connection to the switch: P4Runtime over grpc.aio.

It becomes primary with its election id, keeps the StreamChannel open,
hands PacketIns to a callback as they arrive, and sends PacketOuts from a
queue so protocol code never waits for the network. Table writes go
through `EntryWriter`, which coalesces everything submitted while the
previous Write RPC was in flight into the next one: under load, batches
grow by themselves; when idle, a write leaves at once.

When the stream breaks (switch restart, network), `run()` reconnects with
exponential back-off and calls `on_connected` again, so the owner can
resynchronise the switch.
"""
from __future__ import annotations

import asyncio
import collections
import functools
import json
import logging
import socket
import struct
from dataclasses import dataclass, field
from typing import Awaitable, Callable

import grpc
from google.rpc import code_pb2
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2 as p4r
from p4.v1 import p4runtime_pb2_grpc

from .p4info_names import P4InfoNames
from .p4runtime_client import UpdateError, parse_write_error
from .p4runtime_write import WRITE_METHOD, Update, write_request

log = logging.getLogger("bng.p4runtime")

MAX_BATCH = 4000

# The switch's local packet channel (targets/dpdk/bng_switch/packet_socket.py):
# a hello, then per packet: n fields, n x (metadata id u32, value u64), frame.
PKTIO_MAGIC = b"BNGPKTIO1 "
PKTIO_FIELD = struct.Struct("!IQ")


@functools.lru_cache(maxsize=None)
def _pktio_fields(n: int) -> struct.Struct:
    """n packet channel fields (PKTIO_FIELD each), unpacked in one call."""
    return struct.Struct(PKTIO_FIELD.format[0] + PKTIO_FIELD.format[1:] * n)


class NotPrimary(Exception):
    pass


@dataclass
class PacketIn:
    payload: bytes
    metadata: dict[str, int]


@dataclass
class _Pending:
    updates: list[Update]
    future: asyncio.Future = field(default_factory=lambda: asyncio.get_running_loop().create_future())


class EntryWriter:
    """Group commit on the client side: one Write RPC in flight, the next
    one carries everything queued meanwhile. Updates keep their order, so
    an INSERT followed by a DELETE of the same entry stays correct."""

    def __init__(self, client: "AsyncP4RuntimeClient"):
        self.client = client
        self._queue: list[_Pending] = []
        self._wake = asyncio.Event()
        self._task: asyncio.Task | None = None
        self.stats = {"rpcs": 0, "updates": 0, "errors": 0, "rpc_time": 0.0}

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="p4rt-writer")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass
            self._task = None

    async def write(self, updates: list[Update]) -> list[UpdateError]:
        """Queue updates; returns the errors of those that failed (empty:
        all applied). Raises grpc.RpcError if the RPC itself failed."""
        if not updates:
            return []
        p = _Pending(updates)
        self._queue.append(p)
        self._wake.set()
        return await p.future

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            await self._wake.wait()
            self._wake.clear()
            while self._queue:
                batch: list[_Pending] = []
                n = 0
                while self._queue and (n == 0 or n + len(self._queue[0].updates) <= MAX_BATCH):
                    p = self._queue.pop(0)
                    batch.append(p)
                    n += len(p.updates)
                t0 = loop.time()
                try:
                    errors = await self.client.write_now([u for p in batch for u in p.updates])
                    exc = None
                except grpc.RpcError as e:
                    errors, exc = [], e
                self.stats["rpcs"] += 1
                self.stats["updates"] += n
                self.stats["errors"] += len(errors)
                self.stats["rpc_time"] += loop.time() - t0
                base = 0
                for p in batch:
                    if p.future.done():
                        continue
                    if exc is not None:
                        p.future.set_exception(exc)
                    else:
                        mine = [UpdateError(e.index - base, e.code, e.message) for e in errors
                                if base <= e.index < base + len(p.updates)]
                        p.future.set_result(mine)
                    base += len(p.updates)


def _updates(kind: int, entities) -> list[Update]:
    return [Update(kind, e) for e in entities]


def inserts(entities) -> list[Update]:
    return _updates(p4r.Update.INSERT, entities)


def modifies(entities) -> list[Update]:
    return _updates(p4r.Update.MODIFY, entities)


def deletes(entities) -> list[Update]:
    return _updates(p4r.Update.DELETE, entities)


def next_election_id(election_id: tuple[int, int]) -> tuple[int, int]:
    """The 128-bit election id one above (high, low)."""
    high, low = election_id
    return (high + 1, 0) if low == (1 << 64) - 1 else (high, low + 1)


class AsyncP4RuntimeClient:
    def __init__(self, address: str, device_id: int = 1, election_id: tuple[int, int] = (0, 1),
                 on_packet_in: Callable[[PacketIn], None] | None = None, packet_socket: str = ""):
        """packet_socket: the switch's local packet channel, used for
        PacketIn/PacketOut once we are primary ("" or refused: the stream)."""
        self.address = address
        self.packet_socket = packet_socket
        self._pkt: socket.socket | None = None
        self._pkt_backlog: collections.deque[bytes] = collections.deque()
        self.device_id = device_id
        self.election_id = election_id
        # each connection starts from the configured id: an id claimed in a
        # takeover (_open) must not outrank a configured primary once the
        # switch has forgotten the ids it saw (a restart)
        self.configured_election_id = election_id
        self.on_packet_in = on_packet_in
        self.names: P4InfoNames | None = None
        self.writer = EntryWriter(self)
        self.connected = asyncio.Event()
        self.stats = {"packet_in": 0, "packet_out": 0, "reconnects": 0, "stream_errors": 0,
                      "packet_channel": 0}
        self._channel: grpc.aio.Channel | None = None
        self._stub: p4runtime_pb2_grpc.P4RuntimeStub | None = None
        self._write: grpc.aio.UnaryUnaryMultiCallable | None = None
        self._stream = None
        self._out: asyncio.Queue[p4r.StreamMessageRequest] = asyncio.Queue()
        self._in_ids: dict[int, str] = {}
        self._out_port_id = 0
        self._out_port_width = 32
        self._stop = asyncio.Event()

    def use_p4info(self, p4info: p4info_pb2.P4Info) -> None:
        self.names = P4InfoNames(p4info)
        self._in_ids = {m.id: m.name for m in self.names.controller_header("packet_in").metadata}
        out = self.names.header_field("packet_out", "egress_port")
        self._out_port_id, self._out_port_width = out.id, out.bitwidth

    # ---- connection ----
    async def _open(self, timeout: float) -> None:
        self._channel = grpc.aio.insecure_channel(
            self.address, options=[("grpc.max_receive_message_length", 256 << 20),
                                   ("grpc.max_send_message_length", 256 << 20)])
        await asyncio.wait_for(self._channel.channel_ready(), timeout)
        self._stub = p4runtime_pb2_grpc.P4RuntimeStub(self._channel)
        # Write with the request already serialized (see p4runtime_write)
        self._write = self._channel.unary_unary(WRITE_METHOD, request_serializer=None,
                                                response_deserializer=p4r.WriteResponse.FromString)
        self._stream = self._stub.StreamChannel()
        self.election_id = self.configured_election_id
        await self._send_arbitration()
        claimed = False
        while True:
            resp = await asyncio.wait_for(self._stream.read(), timeout)
            if resp is grpc.aio.EOF:
                raise ConnectionError("stream closed during arbitration")
            if resp.WhichOneof("update") != "arbitration":
                continue
            a = resp.arbitration
            if a.status.code == code_pb2.OK:
                return
            highest = (a.election_id.high, a.election_id.low)
            if a.status.code == code_pb2.NOT_FOUND and a.HasField("election_id") and not claimed:
                # No primary (the last one left): the switch waits for an id
                # at least the highest it has seen (P4Runtime spec 5). A
                # standby claims the role above it; a primary that comes
                # back later with its configured id is then the standby.
                new_id = next_election_id(max(highest, self.election_id))
                log.warning("no primary on the switch (highest election id seen %s): taking over with %s",
                            highest, new_id)
                self.election_id = new_id
                claimed = True
                await self._send_arbitration()
                continue
            raise NotPrimary(f"not primary: {a.status.message}")

    async def _send_arbitration(self) -> None:
        req = p4r.StreamMessageRequest()
        a = req.arbitration
        a.device_id = self.device_id
        a.election_id.high, a.election_id.low = self.election_id
        await self._stream.write(req)

    # ---- the local packet channel ----
    async def _open_packet_channel(self) -> None:
        if not self.packet_socket:
            return
        loop = asyncio.get_running_loop()
        s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        s.setblocking(False)
        try:
            await loop.sock_connect(s, self.packet_socket)
            hello = {"device_id": self.device_id, "election_id": list(self.election_id), "role": ""}
            await loop.sock_sendall(s, PKTIO_MAGIC + json.dumps(hello).encode())
            answer = await asyncio.wait_for(loop.sock_recv(s, 4096), 5)
            if answer != b"OK":
                raise ConnectionError(answer.decode(errors="replace"))
        except (OSError, ConnectionError, asyncio.TimeoutError) as e:
            log.warning("packet channel %s refused (%s): packets go over P4Runtime", self.packet_socket, e)
            s.close()
            return
        self._pkt = s
        self.stats["packet_channel"] = 1
        loop.add_reader(s.fileno(), self._packet_channel_readable)
        log.info("packet-in/out over the switch's local channel %s", self.packet_socket)

    def _close_packet_channel(self) -> None:
        s, self._pkt = self._pkt, None
        self.stats["packet_channel"] = 0
        self._pkt_backlog.clear()
        if s is not None:
            loop = asyncio.get_running_loop()
            loop.remove_reader(s.fileno())
            loop.remove_writer(s.fileno())
            s.close()

    def _packet_channel_readable(self) -> None:
        s = self._pkt
        names = self._in_ids
        for _ in range(256):                  # then let the loop breathe
            try:
                msg = s.recv(65536)
            except BlockingIOError:
                return
            except OSError as e:
                log.warning("packet channel lost (%s): back to P4Runtime", e)
                self._close_packet_channel()
                return
            if not msg:
                log.warning("packet channel closed by the switch: back to P4Runtime")
                self._close_packet_channel()
                return
            n = msg[0]
            fields = _pktio_fields(n)
            v = fields.unpack_from(msg, 1)
            md = {names.get(v[i], str(v[i])): v[i + 1] for i in range(0, 2 * n, 2)}
            end = 1 + fields.size
            self.stats["packet_in"] += 1
            if self.on_packet_in is not None:
                try:
                    self.on_packet_in(PacketIn(msg[end:], md))
                except Exception:
                    log.exception("packet-in handler")

    def _packet_channel_writable(self) -> None:
        s = self._pkt
        while self._pkt_backlog:
            try:
                s.send(self._pkt_backlog[0])
            except BlockingIOError:
                return
            except OSError:
                self._close_packet_channel()
                return
            self._pkt_backlog.popleft()
        asyncio.get_running_loop().remove_writer(s.fileno())

    async def _close(self) -> None:
        self._close_packet_channel()
        if self._stream is not None:
            self._stream.cancel()
            self._stream = None
        if self._channel is not None:
            await self._channel.close()
            self._channel = None

    async def run(self, on_connected: Callable[[], Awaitable[None]], timeout: float = 10.0) -> None:
        """Connect, call on_connected, pump the stream; on loss, back off
        and start over. Returns when stop() is called."""
        backoff = 0.5
        while not self._stop.is_set():
            try:
                await self._open(timeout)
                self.writer.start()
                await self._open_packet_channel()
                backoff = 0.5
                pump_in = asyncio.create_task(self._pump_in(), name="p4rt-in")
                pump_out = asyncio.create_task(self._pump_out(), name="p4rt-out")
                self.connected.set()
                try:
                    await on_connected()
                    done, _ = await asyncio.wait(
                        [pump_in, pump_out, asyncio.create_task(self._stop.wait())],
                        return_when=asyncio.FIRST_COMPLETED)
                finally:
                    self.connected.clear()
                    for t in (pump_in, pump_out):
                        t.cancel()
                    await asyncio.gather(pump_in, pump_out, return_exceptions=True)
                    await self.writer.stop()
                if self._stop.is_set():
                    break
                log.warning("switch stream to %s lost; reconnecting", self.address)
            except (grpc.RpcError, OSError, ConnectionError, asyncio.TimeoutError, NotPrimary) as e:
                log.warning("switch %s: %s; retrying in %.1f s", self.address, e, backoff)
            self.stats["reconnects"] += 1
            await self._close()
            try:
                await asyncio.wait_for(self._stop.wait(), backoff)
            except asyncio.TimeoutError:
                pass
            backoff = min(backoff * 2, 10.0)
        await self._close()

    def stop(self) -> None:
        self._stop.set()

    async def _pump_in(self) -> None:
        ids = self._in_ids
        while True:
            resp = await self._stream.read()
            if resp is grpc.aio.EOF:
                return
            kind = resp.WhichOneof("update")
            if kind == "packet":
                self.stats["packet_in"] += 1
                pkt = resp.packet
                md = {ids.get(m.metadata_id, str(m.metadata_id)): int.from_bytes(m.value, "big")
                      for m in pkt.metadata}
                if self.on_packet_in is not None:
                    try:
                        self.on_packet_in(PacketIn(pkt.payload, md))
                    except Exception:
                        log.exception("packet-in handler")
            elif kind == "error":
                self.stats["stream_errors"] += 1
                log.warning("stream error from switch: %s", resp.error.message)
            elif kind == "arbitration" and resp.arbitration.status.code != code_pb2.OK:
                log.error("lost primary role: %s", resp.arbitration.status.message)
                return

    async def _pump_out(self) -> None:
        while True:
            req = await self._out.get()
            await self._stream.write(req)

    def packet_out(self, frame: bytes, port: int) -> None:
        """Queue a frame to leave `port` untouched (never blocks)."""
        self.stats["packet_out"] += 1
        s = self._pkt
        if s is not None:
            msg = b"\x01" + PKTIO_FIELD.pack(self._out_port_id, port) + frame
            if not self._pkt_backlog:
                try:
                    s.send(msg)
                    return
                except BlockingIOError:
                    asyncio.get_running_loop().add_writer(s.fileno(), self._packet_channel_writable)
                except OSError:
                    self._close_packet_channel()
            if self._pkt is not None:
                self._pkt_backlog.append(msg)
                return
        req = p4r.StreamMessageRequest()
        req.packet.payload = frame
        req.packet.metadata.add(metadata_id=self._out_port_id,
                                value=port.to_bytes(max(1, (port.bit_length() + 7) // 8), "big"))
        self._out.put_nowait(req)

    # ---- RPCs ----
    async def write_now(self, updates: list[Update | p4r.Update]) -> list[UpdateError]:
        req = write_request(self.device_id, self.election_id, updates)
        try:
            await self._write(req)
        except grpc.aio.AioRpcError as e:
            errors = parse_write_error(e)
            if not errors:
                raise
            return errors
        return []

    async def write(self, updates: list[Update]) -> list[UpdateError]:
        return await self.writer.write(updates)

    async def read(self, *entities: p4r.Entity) -> list[p4r.Entity]:
        req = p4r.ReadRequest(device_id=self.device_id)
        for e in entities:
            req.entities.add().CopyFrom(e)
        out: list[p4r.Entity] = []
        async for resp in self._stub.Read(req):
            out.extend(resp.entities)
        return out

    async def get_pipeline(self) -> p4r.ForwardingPipelineConfig | None:
        req = p4r.GetForwardingPipelineConfigRequest(
            device_id=self.device_id, response_type=p4r.GetForwardingPipelineConfigRequest.P4INFO_AND_COOKIE)
        resp = await self._stub.GetForwardingPipelineConfig(req)
        return resp.config if resp.config.HasField("p4info") else None

    async def set_pipeline(self, p4info: p4info_pb2.P4Info, device_config: bytes, cookie: int) -> None:
        req = p4r.SetForwardingPipelineConfigRequest(
            device_id=self.device_id, action=p4r.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT)
        req.election_id.high, req.election_id.low = self.election_id
        req.config.p4info.CopyFrom(p4info)
        req.config.p4_device_config = device_config
        req.config.cookie.cookie = cookie
        await self._stub.SetForwardingPipelineConfig(req)
