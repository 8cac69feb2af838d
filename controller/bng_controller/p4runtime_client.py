"""A P4Runtime client for the controller (and the tests).

It keeps the StreamChannel open, becomes primary with its election id,
pushes the pipeline, writes entries in batches, and hands packet-ins to a
queue. Entries are built by name (P4InfoNames); values are ints or bytes.
"""
from __future__ import annotations

import queue
import threading
from dataclasses import dataclass
from typing import Iterable

import grpc
from google.protobuf import text_format
from google.rpc import status_pb2
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2 as p4r
from p4.v1 import p4runtime_pb2_grpc

from .p4info_names import P4InfoNames
from .p4runtime_entries import EntryBuilder, Value, encode

@dataclass
class UpdateError:
    index: int
    code: grpc.StatusCode
    message: str


class WriteError(Exception):
    """A Write batch in which some updates failed; .errors lists them."""

    def __init__(self, errors: list[UpdateError], rpc_error: grpc.RpcError):
        self.errors = errors
        self.rpc_error = rpc_error
        super().__init__("; ".join(f"update {e.index}: {e.code.name} {e.message}" for e in errors)
                         or str(rpc_error))


def _code(value: int) -> grpc.StatusCode:
    return next((c for c in grpc.StatusCode if c.value[0] == value), grpc.StatusCode.UNKNOWN)


def parse_write_error(e: grpc.RpcError) -> list[UpdateError]:
    for key, value in (e.trailing_metadata() or ()):
        if key == "grpc-status-details-bin":
            st = status_pb2.Status.FromString(value)
            out = []
            for i, any_ in enumerate(st.details):
                err = p4r.Error()
                any_.Unpack(err)
                if err.canonical_code != 0:
                    out.append(UpdateError(i, _code(err.canonical_code), err.message))
            return out
    return []


class P4RuntimeClient:
    def __init__(self, address: str, device_id: int = 1, election_id: tuple[int, int] = (0, 1),
                 role: str = ""):
        self.address = address
        self.device_id = device_id
        self.election_id = election_id
        self.role = role
        self.channel = grpc.insecure_channel(address, options=[("grpc.max_receive_message_length", 256 << 20)])
        self.stub = p4runtime_pb2_grpc.P4RuntimeStub(self.channel)
        self.packet_ins: "queue.Queue[p4r.PacketIn]" = queue.Queue()
        self.arbitration: "queue.Queue[p4r.MasterArbitrationUpdate]" = queue.Queue()
        self.stream_errors: "queue.Queue[p4r.StreamError]" = queue.Queue()
        self._requests: "queue.Queue[p4r.StreamMessageRequest | None]" = queue.Queue()
        self._stream = None
        self._reader: threading.Thread | None = None
        self.names: P4InfoNames | None = None

    # ---- session ----
    def connect(self, timeout: float = 10.0) -> p4r.MasterArbitrationUpdate:
        """Open the stream and send the arbitration update; returns the answer."""
        grpc.channel_ready_future(self.channel).result(timeout=timeout)
        self._stream = self.stub.StreamChannel(iter(self._requests.get, None))
        self._reader = threading.Thread(target=self._read_stream, daemon=True)
        self._reader.start()
        self.send_arbitration()
        return self.arbitration.get(timeout=timeout)

    def send_arbitration(self, election_id: tuple[int, int] | None = None) -> None:
        if election_id is not None:
            self.election_id = election_id
        req = p4r.StreamMessageRequest()
        a = req.arbitration
        a.device_id = self.device_id
        a.election_id.high, a.election_id.low = self.election_id
        if self.role:
            a.role.name = self.role
        self._requests.put(req)

    def _read_stream(self) -> None:
        try:
            for resp in self._stream:
                kind = resp.WhichOneof("update")
                if kind == "arbitration":
                    self.arbitration.put(resp.arbitration)
                elif kind == "packet":
                    self.packet_ins.put(resp.packet)
                elif kind == "error":
                    self.stream_errors.put(resp.error)
        except grpc.RpcError:
            pass

    def close(self) -> None:
        self._requests.put(None)
        if self._stream is not None:
            self._stream.cancel()
        self.channel.close()

    # ---- pipeline ----
    def set_pipeline(self, p4info: p4info_pb2.P4Info, device_config: bytes,
                     action=p4r.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT, cookie: int = 0) -> None:
        req = p4r.SetForwardingPipelineConfigRequest(device_id=self.device_id, action=action)
        req.election_id.high, req.election_id.low = self.election_id
        if self.role:
            req.role = self.role
        req.config.p4info.CopyFrom(p4info)
        req.config.p4_device_config = device_config
        req.config.cookie.cookie = cookie
        self.stub.SetForwardingPipelineConfig(req)
        self.names = P4InfoNames(p4info)

    def use_p4info(self, p4info: p4info_pb2.P4Info) -> None:
        self.names = P4InfoNames(p4info)

    @staticmethod
    def load_p4info(path: str) -> p4info_pb2.P4Info:
        return text_format.Parse(open(path).read(), p4info_pb2.P4Info())

    # ---- entries by name ----
    def table_entry(self, table: str, match: dict[str, object] | None = None, action: str | None = None,
                    params: dict[str, Value] | None = None, priority: int = 0,
                    default: bool = False) -> p4r.TableEntry:
        """See EntryBuilder.table_entry."""
        return EntryBuilder(self.names).table_entry(table, match, action, params, priority, default)

    # ---- write / read ----
    def write(self, updates: Iterable[tuple[int, p4r.Entity | p4r.TableEntry]]) -> None:
        """Write (type, entity) pairs in one batch; raises WriteError."""
        req = p4r.WriteRequest(device_id=self.device_id)
        req.election_id.high, req.election_id.low = self.election_id
        if self.role:
            req.role = self.role
        for typ, ent in updates:
            u = req.updates.add(type=typ)
            if isinstance(ent, p4r.TableEntry):
                u.entity.table_entry.CopyFrom(ent)
            else:
                u.entity.CopyFrom(ent)
        try:
            self.stub.Write(req)
        except grpc.RpcError as e:
            raise WriteError(parse_write_error(e), e) from e

    def insert(self, *entries: p4r.TableEntry) -> None:
        self.write((p4r.Update.INSERT, e) for e in entries)

    def modify(self, *entries: p4r.TableEntry) -> None:
        self.write((p4r.Update.MODIFY, e) for e in entries)

    def delete(self, *entries: p4r.TableEntry) -> None:
        self.write((p4r.Update.DELETE, e) for e in entries)

    def read(self, *entities: p4r.Entity) -> list[p4r.Entity]:
        req = p4r.ReadRequest(device_id=self.device_id)
        for e in entities:
            req.entities.add().CopyFrom(e)
        out: list[p4r.Entity] = []
        for resp in self.stub.Read(req):
            out.extend(resp.entities)
        return out

    def read_table(self, table: str | None = None) -> list[p4r.TableEntry]:
        te = p4r.TableEntry(table_id=self.names.table(table).preamble.id if table else 0)
        return [e.table_entry for e in self.read(p4r.Entity(table_entry=te))]

    def read_counter(self, counter: str, index: int) -> p4r.CounterData:
        ce = p4r.CounterEntry(counter_id=self.names.counter(counter).preamble.id)
        ce.index.index = index
        return self.read(p4r.Entity(counter_entry=ce))[0].counter_entry.data

    # ---- packet I/O ----
    def packet_out(self, payload: bytes, **metadata: int) -> None:
        req = p4r.StreamMessageRequest()
        req.packet.payload = payload
        for name, value in metadata.items():
            m = self.names.header_field("packet_out", name)
            req.packet.metadata.add(metadata_id=m.id, value=encode(value, m.bitwidth))
        self._requests.put(req)

    def packet_in_metadata(self, pin: p4r.PacketIn) -> dict[str, int]:
        hdr = self.names.controller_header("packet_in")
        by_id = {m.id: m.name for m in hdr.metadata}
        return {by_id[m.metadata_id]: int.from_bytes(m.value, "big") for m in pin.metadata}
