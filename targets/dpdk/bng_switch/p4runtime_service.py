"""The P4Runtime gRPC service of the switch (P4Runtime 1.x).

Writes from every client go through one committer thread: it drains all
Write requests waiting at that moment, validates them in arrival order
against the table store, and applies all their table ops in one pipeline
commit (group commit). A failed update never stops the others (P4Runtime
CONTINUE_ON_ERROR). A commit that the pipeline refuses (a full hash bucket,
no memory for a rebuild) changes nothing there; the store is rolled back and
the commit tried again in halves, so that only the update it refuses fails
(commit_table_updates), and Read always shows what forwards.
"""
from __future__ import annotations

import ctypes
import errno
import logging
import queue
import threading
import time
from concurrent import futures
from dataclasses import dataclass, field

import grpc
from google.rpc import code_pb2, status_pb2
from grpc_status import rpc_status
from p4.v1 import p4runtime_pb2 as p4r, p4runtime_pb2_grpc

from . import libbsw
from .arbitration import UNSET, Arbitration, ArbitrationError, Client
from .device import Device, DeviceConfigError, prepare
from .direct_resources import DirectResources
from .gc_policy import GcPolicy
from .packet_socket import PacketSocket
from .pipeline_map import MappingError
from .swx_spec import SpecError
from .table_store import (IDLE_TIMEOUT_UNSUPPORTED, P4RuntimeError, canonical, check_counter_data,
                          check_meter_config, decode_value, reject_meter_counts)

log = logging.getLogger("bng_switch.p4runtime")

API_VERSION = "1.4.0"
READ_CHUNK = 1000


def _election_id(msg) -> tuple[int, int]:
    """msg's election_id as (high, low); UNSET where it has none, which is
    not (0, 0) (spec, Unset Election ID)."""
    if not msg.HasField("election_id"):
        return UNSET
    return (msg.election_id.high, msg.election_id.low)


_OK = (grpc.StatusCode.OK, "")     # an update's entry in PendingWrite.errors unless it fails


@dataclass
class PendingWrite:
    request: p4r.WriteRequest
    done: threading.Event = field(default_factory=threading.Event)
    errors: list = field(default_factory=list)  # (grpc code, message) per update
    fatal: P4RuntimeError | None = None


class _UpdateErrors:
    """Records an update's failure as its entry of pw.errors, so that the
    batch goes on (CONTINUE_ON_ERROR)."""

    def __init__(self, pw: PendingWrite, i: int, kind: str | None):
        self.pw, self.i, self.kind = pw, i, kind

    def __enter__(self):
        return self

    def __exit__(self, typ, e, tb) -> bool:
        if e is None:
            return False
        if isinstance(e, P4RuntimeError):
            self.pw.errors[self.i] = (e.code, e.message)
        elif isinstance(e, libbsw.BswError):
            self.pw.errors[self.i] = (grpc.StatusCode.INTERNAL, str(e))
        elif isinstance(e, Exception):     # a bug of ours: this update fails, the batch goes on
            log.error("write: %s update %d failed", self.kind, self.i, exc_info=(typ, e, tb))
            self.pw.errors[self.i] = (grpc.StatusCode.INTERNAL, f"{typ.__name__}: {e}")
        else:
            return False
        return True


def commit_table_updates(store, pipeline, direct: DirectResources, updates: list[tuple[PendingWrite, int]],
                         stats: dict) -> list:
    """Applies these table updates, in order, to the store and commits
    them to the pipeline in one commit; returns the direct resources to
    set for the entries that went in.

    A commit the pipeline refuses (a hash bucket or a table full, no EAL
    memory for a rebuild) changes nothing in the data plane. The store is
    then rolled back and the updates are tried again in two halves, each
    half in turn, down to the single update that does not fit, which
    alone gets the error: a full bucket met by one client's entry no
    longer fails every other update that shared its commit, and each
    update still sees the ones before it, as it would in a commit of its
    own (an INSERT that fails takes its later MODIFY with it)."""
    if not updates:
        return []
    ops = libbsw.OpBatch()
    undo: list = []
    direct_after = []
    for pw, i in updates:
        pw.errors[i] = _OK
        u = pw.request.updates[i]
        with _UpdateErrors(pw, i, "table_entry"):
            written = store.apply_entry(u.type, u.entity.table_entry, ops, undo)
            if written is not None:
                ts, stored = written
                if ts.map.direct_counter or ts.map.direct_meter:
                    direct_after.append((pw, i, lambda u=u, ts=ts, st=stored: direct.after_write(ts, u, st)))
    store.add_rebuilds(ops)
    if not ops.ops:
        return direct_after
    try:
        pipeline.table_commit(ops)
        stats["commits"] += 1
        return direct_after
    except libbsw.BswError as e:
        store.roll_back(undo)
        applied = [(pw, i) for pw, i in updates if pw.errors[i][0] == grpc.StatusCode.OK]
        if len(applied) > 1:
            half = len(updates) // 2
            return (commit_table_updates(store, pipeline, direct, updates[:half], stats)
                    + commit_table_updates(store, pipeline, direct, updates[half:], stats))
        # ENOSPC: a table or bucket is full; ENOMEM: no EAL memory left for a rebuild.
        code = grpc.StatusCode.RESOURCE_EXHAUSTED if e.errno in (errno.ENOSPC, errno.ENOMEM) \
            else grpc.StatusCode.INTERNAL
        for pw, i in applied:
            pw.errors[i] = (code, f"pipeline commit failed: {e}")
        return []


class P4RuntimeService(p4runtime_pb2_grpc.P4RuntimeServicer):
    def __init__(self, device: Device):
        self.device = device
        self.arb = Arbitration(device.config.device_id)
        self.stats = {"writes": 0, "updates": 0, "commits": 0, "packet_in": 0, "packet_out": 0,
                      "packet_in_no_primary": 0, "packet_out_errors": 0}
        self._writes: "queue.Queue[PendingWrite]" = queue.Queue()
        self._streams: set[Client] = set()
        self._stop = threading.Event()
        self.gc = GcPolicy()
        self.packet_socket: PacketSocket | None = None
        if device.config.packet_socket:
            self.packet_socket = PacketSocket(device.config.packet_socket, self._is_primary, device)
        self._threads = [threading.Thread(target=self._committer, name="p4rt-commit", daemon=True),
                         threading.Thread(target=self._packet_in_reader, name="p4rt-packet-in", daemon=True)]
        for t in self._threads:
            t.start()

    def _is_primary(self, device_id: int, role: str, election_id: tuple[int, int]) -> bool:
        return device_id == self.device.config.device_id and self.arb.primary_election_id(role) == election_id

    def stop(self) -> None:
        if self.packet_socket is not None:
            self.packet_socket.close()
        self._stop.set()
        self._writes.put(None)  # type: ignore[arg-type]
        for c in list(self._streams):  # end every StreamChannel generator
            c.queue.put(None)
        for t in self._threads:
            t.join(timeout=2)

    # ------------------------------------------------------------------
    def Capabilities(self, request, context):
        return p4r.CapabilitiesResponse(p4runtime_api_version=API_VERSION)

    # ---- pipeline config ----
    def SetForwardingPipelineConfig(self, request, context):
        A = p4r.SetForwardingPipelineConfigRequest
        try:
            self.arb.check_primary(request.device_id, request.role, _election_id(request))
        except ArbitrationError as e:
            context.abort(e.code, e.message)
        dev = self.device
        try:
            if request.action == A.COMMIT:
                # spec 14: no saved config is NOT_FOUND, a config given here
                # INVALID_ARGUMENT
                if request.HasField("config"):
                    context.abort(grpc.StatusCode.INVALID_ARGUMENT, "COMMIT takes no config: it commits the saved one")
                if dev.saved is None:
                    context.abort(grpc.StatusCode.NOT_FOUND, "COMMIT without a saved config (VERIFY_AND_SAVE)")
                dev.commit(dev.saved)
                dev.saved = None
                return p4r.SetForwardingPipelineConfigResponse()
            if request.action not in (A.VERIFY, A.VERIFY_AND_SAVE, A.VERIFY_AND_COMMIT, A.RECONCILE_AND_COMMIT):
                context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"unsupported action {request.action}")
            if not request.HasField("config"):
                context.abort(grpc.StatusCode.INVALID_ARGUMENT, "config missing")
            pc = prepare(request.config.p4info, request.config.p4_device_config,
                         request.config.cookie.cookie if request.config.HasField("cookie") else None)
            if request.action in (A.VERIFY, A.VERIFY_AND_SAVE):
                dev.verify(pc)          # the COMMIT actions find out by building it
            if request.action == A.VERIFY:
                return p4r.SetForwardingPipelineConfigResponse()
            if request.action == A.VERIFY_AND_SAVE:
                dev.saved = pc
                return p4r.SetForwardingPipelineConfigResponse()
            dev.commit(pc, reconcile=request.action == A.RECONCILE_AND_COMMIT)
            dev.saved = None            # a later COMMIT must not bring an older saved config back
            log.info("pipeline committed: %d tables, %d counters, %d meters", len(pc.pmap.tables), len(pc.pmap.counters), len(pc.pmap.meters))
        except (DeviceConfigError, SpecError, MappingError) as e:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(e))
        except libbsw.BswError as e:
            context.abort(grpc.StatusCode.INTERNAL, f"pipeline build or reconcile failed: {e}")
        return p4r.SetForwardingPipelineConfigResponse()

    def GetForwardingPipelineConfig(self, request, context):
        R = p4r.GetForwardingPipelineConfigRequest
        if request.device_id != self.device.config.device_id:
            context.abort(grpc.StatusCode.NOT_FOUND, f"unknown device id {request.device_id}")
        resp = p4r.GetForwardingPipelineConfigResponse()
        pc = self.device.current
        if pc is None:
            return resp
        cfg = resp.config
        if pc.cookie is not None:       # unset when the client set none (spec 15)
            cfg.cookie.cookie = pc.cookie
        if request.response_type in (R.ALL, R.P4INFO_AND_COOKIE):
            cfg.p4info.CopyFrom(pc.p4info)
        if request.response_type in (R.ALL, R.DEVICE_CONFIG_AND_COOKIE):
            cfg.p4_device_config = pc.device_config
        return resp

    # ---- writes ----
    def Write(self, request, context):
        try:
            self.arb.check_primary(request.device_id, request.role, _election_id(request))
        except ArbitrationError as e:
            context.abort(e.code, e.message)
        if self.device.current is None:
            context.abort(grpc.StatusCode.FAILED_PRECONDITION, "no forwarding pipeline config set")
        if request.atomicity != p4r.WriteRequest.CONTINUE_ON_ERROR:
            context.abort(grpc.StatusCode.UNIMPLEMENTED, "only CONTINUE_ON_ERROR atomicity is supported")
        pw = PendingWrite(request)
        self._writes.put(pw)
        pw.done.wait()
        if pw.fatal is not None:
            context.abort(pw.fatal.code, pw.fatal.message)
        if any(code != grpc.StatusCode.OK for code, _ in pw.errors):
            context.abort_with_status(rpc_status.to_status(self._write_status(pw.errors)))
        return p4r.WriteResponse()

    @staticmethod
    def _write_status(errors) -> status_pb2.Status:
        """P4Runtime batch error: UNKNOWN with one p4.v1.Error per update."""
        n_bad = sum(1 for code, _ in errors if code != grpc.StatusCode.OK)
        st = status_pb2.Status(code=code_pb2.UNKNOWN, message=f"{n_bad} of {len(errors)} updates failed")
        for code, msg in errors:
            st.details.add().Pack(p4r.Error(canonical_code=code.value[0], message=msg,
                                            space="targets.dpdk" if msg else ""))
        return st

    def _committer(self) -> None:
        while not self._stop.is_set():
            first = self._writes.get()
            if first is None:
                return
            batch = [first]
            while True:
                try:
                    nxt = self._writes.get_nowait()
                except queue.Empty:
                    break
                if nxt is None:
                    self._stop.set()
                    break
                batch.append(nxt)
            try:
                self._commit_batch(batch)
            except Exception as e:  # never leave a client hanging
                log.exception("commit failed")
                for pw in batch:
                    pw.fatal = P4RuntimeError(grpc.StatusCode.INTERNAL, f"commit failed: {e}")
            for pw in batch:
                pw.done.set()
            self.gc.settle()                 # the store's entries out of the collector's scans

    def _commit_batch(self, batch: list[PendingWrite]) -> None:
        dev = self.device
        with dev.lock:
            store = dev.store
            if store is None:
                raise P4RuntimeError(grpc.StatusCode.FAILED_PRECONDITION, "no pipeline")
            direct = DirectResources(dev.pipeline)
            table_updates: list[tuple[PendingWrite, int]] = []
            # direct counter/meter entries are set once the table entries of
            # the batch are in the data plane: (write, update index, setter)
            direct_after: list[tuple[PendingWrite, int, object]] = []
            for pw in batch:
                pw.errors = [_OK] * len(pw.request.updates)
                for i, u in enumerate(pw.request.updates):
                    kind = u.entity.WhichOneof("entity")
                    if kind == "table_entry":
                        table_updates.append((pw, i))
                        continue
                    with _UpdateErrors(pw, i, kind):
                        if kind == "counter_entry":
                            self._write_counter(u)
                        elif kind == "meter_entry":
                            self._write_meter(u)
                        elif kind == "register_entry":
                            self._write_register(u)
                        elif kind in ("direct_counter_entry", "direct_meter_entry"):
                            if u.type != p4r.Update.MODIFY:
                                raise P4RuntimeError(grpc.StatusCode.INVALID_ARGUMENT,
                                                     f"{kind} can only be modified")
                            write = self._write_direct_counter if kind == "direct_counter_entry" \
                                else self._write_direct_meter
                            direct_after.append((pw, i, lambda u=u, write=write: write(u, direct)))
                        elif kind is None:
                            raise P4RuntimeError(grpc.StatusCode.INVALID_ARGUMENT, "update without an entity")
                        else:
                            raise P4RuntimeError(grpc.StatusCode.UNIMPLEMENTED, f"{kind} writes are not supported")
            direct_after += commit_table_updates(store, dev.pipeline, direct, table_updates, self.stats)
            order = {id(pw): n for n, pw in enumerate(batch)}
            direct_after.sort(key=lambda d: (order[id(d[0])], d[1]))     # in arrival order, as written
            for pw, i, fn in direct_after:
                if pw.errors[i][0] != grpc.StatusCode.OK:
                    continue
                with _UpdateErrors(pw, i, "direct"):
                    fn()
            self.stats["writes"] += len(batch)
            self.stats["updates"] += sum(len(pw.request.updates) for pw in batch)

    # ---- counters, meters, registers ----
    def _counter(self, counter_id: int):
        c = self.device.current.pmap.counters.get(counter_id)
        if c is None:
            raise P4RuntimeError(grpc.StatusCode.NOT_FOUND, f"counter id {counter_id} is not in the P4Info")
        return c

    @staticmethod
    def _check_index(what: str, index: int, size: int) -> None:
        if index < 0:
            raise P4RuntimeError(grpc.StatusCode.INVALID_ARGUMENT, f"{what}: index {index} is negative")
        if index >= size:
            raise P4RuntimeError(grpc.StatusCode.OUT_OF_RANGE, f"{what}: index {index} out of 0..{size - 1}")

    def _write_counter(self, u: p4r.Update) -> None:
        ce = u.entity.counter_entry
        c = self._counter(ce.counter_id)
        if u.type != p4r.Update.MODIFY:
            raise P4RuntimeError(grpc.StatusCode.INVALID_ARGUMENT, "counter entries can only be modified")
        check_counter_data(ce.data, f"counter {c.name}")
        indices = [ce.index.index] if ce.HasField("index") else range(c.size)
        for idx in indices:
            self._check_index(c.name, idx, c.size)
            c.write(self.device.pipeline, idx, ce.data)

    def _write_meter(self, u: p4r.Update) -> None:
        me = u.entity.meter_entry
        m = self.device.current.pmap.meters.get(me.meter_id)
        if m is None:
            raise P4RuntimeError(grpc.StatusCode.NOT_FOUND, f"meter id {me.meter_id} is not in the P4Info")
        if u.type != p4r.Update.MODIFY:
            raise P4RuntimeError(grpc.StatusCode.INVALID_ARGUMENT, "meter entries can only be modified")
        # no index: every meter of the array (spec, MeterEntry), as for counters
        indices = [me.index.index] if me.HasField("index") else range(m.size)
        what = f"meter {m.name}" + (f"[{me.index.index}]" if me.HasField("index") else "")
        reject_meter_counts(me, "counter_data", what)
        cfg = me.config if me.HasField("config") else None
        if cfg is not None:
            check_meter_config(cfg, what)
        for idx in indices:
            self._check_index(m.name, idx, m.size)
            m.configure(self.device.pipeline, idx, cfg)
            if cfg is not None:
                self.device.meter_configs[(m.id, idx)] = p4r.MeterConfig.FromString(cfg.SerializeToString())
            else:
                self.device.meter_configs.pop((m.id, idx), None)

    def _direct_table(self, table_id: int, kind: str):
        """The table a direct counter/meter request names, which must have one."""
        ts = self.device.store.tables.get(table_id)
        if ts is None:
            raise P4RuntimeError(grpc.StatusCode.NOT_FOUND, f"table id {table_id} is not in the P4Info")
        if getattr(ts.map, kind) is None:
            raise P4RuntimeError(grpc.StatusCode.INVALID_ARGUMENT,
                                 f"table {ts.map.name} has no {kind.replace('_', ' ')}")
        return ts

    def _write_direct_counter(self, u: p4r.Update, direct: DirectResources) -> None:
        dce = u.entity.direct_counter_entry
        self._direct_table(dce.table_entry.table_id, "direct_counter")
        ts, stored = self.device.store.find(dce.table_entry)
        check_counter_data(dce.data, f"table {ts.map.name} direct counter")
        direct.write_counter(ts.map, stored, dce.data)

    def _write_direct_meter(self, u: p4r.Update, direct: DirectResources) -> None:
        """A config sets the entry's meter; none resets it (never red)."""
        dme = u.entity.direct_meter_entry
        self._direct_table(dme.table_entry.table_id, "direct_meter")
        ts, stored = self.device.store.find(dme.table_entry)
        reject_meter_counts(dme, "counter_data", f"table {ts.map.name} direct meter")
        cfg = dme.config if dme.HasField("config") else None
        if cfg is not None:
            check_meter_config(cfg, f"table {ts.map.name} direct meter")
        direct.write_meter(ts.map, stored, cfg)
        if stored is None:
            ts.default_meter_config = cfg
        else:
            stored.meter_config = cfg

    def _write_register(self, u: p4r.Update) -> None:
        re_ = u.entity.register_entry
        r = self.device.current.pmap.registers.get(re_.register_id)
        if r is None:
            raise P4RuntimeError(grpc.StatusCode.NOT_FOUND, f"register id {re_.register_id} is not in the P4Info")
        if u.type != p4r.Update.MODIFY:
            raise P4RuntimeError(grpc.StatusCode.INVALID_ARGUMENT, "register entries can only be modified")
        if re_.data.WhichOneof("data") != "bitstring":
            raise P4RuntimeError(grpc.StatusCode.INVALID_ARGUMENT, f"register {r.name}: data must be a bitstring")
        value = decode_value(re_.data.bitstring, r.bitwidth, f"register {r.name}")
        indices = [re_.index.index] if re_.HasField("index") else range(r.size)
        for idx in indices:
            self._check_index(r.name, idx, r.size)
            self.device.pipeline.regarray_write(r.swx_name, idx, value)

    # ---- reads ----
    def Read(self, request, context):
        if request.device_id != self.device.config.device_id:
            context.abort(grpc.StatusCode.NOT_FOUND, f"unknown device id {request.device_id}")
        if self.device.current is None:
            context.abort(grpc.StatusCode.FAILED_PRECONDITION, "no forwarding pipeline config set")
        try:
            out: list[p4r.Entity] = []
            for ent in request.entities:
                for e in self._read_entity(ent):
                    out.append(e)
                    if len(out) >= READ_CHUNK:
                        yield p4r.ReadResponse(entities=out)
                        out = []
            yield p4r.ReadResponse(entities=out)
        except P4RuntimeError as e:
            context.abort(e.code, e.message)
        except libbsw.BswError as e:
            context.abort(grpc.StatusCode.INTERNAL, str(e))

    def _read_entity(self, ent: p4r.Entity):
        kind = ent.WhichOneof("entity")
        dev = self.device
        if kind == "table_entry":
            q = ent.table_entry
            if q.HasField("time_since_last_hit"):
                raise P4RuntimeError(grpc.StatusCode.INVALID_ARGUMENT, IDLE_TIMEOUT_UNSUPPORTED)
            if not (q.HasField("counter_data") or q.HasField("meter_config") or q.HasField("meter_counter_data")):
                with dev.lock:
                    entries = list(dev.store.read(q))
                for te in entries:
                    yield p4r.Entity(table_entry=te)
                return
            # The request asks for the entries' direct counter data, meter
            # config and/or meter colour counts along with them (its
            # counter_data / meter_config / meter_counter_data are set).
            with dev.lock:
                direct = DirectResources(dev.pipeline)
                out = []
                for ts, stored, proto in dev.store.read_stored(q):
                    te = p4r.TableEntry()
                    te.CopyFrom(proto)
                    if q.HasField("counter_data") and ts.map.direct_counter is not None:
                        te.counter_data.CopyFrom(direct.read_counter(ts.map, stored))
                    if q.HasField("meter_config") and ts.map.direct_meter is not None:
                        cfg = ts.meter_config(stored)
                        if cfg is not None:
                            te.meter_config.CopyFrom(cfg)
                    if q.HasField("meter_counter_data") and ts.map.direct_meter is not None:
                        te.meter_counter_data.CopyFrom(direct.read_meter_counters(ts.map, stored))
                    out.append(te)
            for te in out:
                yield p4r.Entity(table_entry=te)
        elif kind in ("direct_counter_entry", "direct_meter_entry"):
            yield from self._read_direct(kind, getattr(ent, kind))
        elif kind == "counter_entry":
            ce = ent.counter_entry
            pipeline, current = dev.pipeline, dev.current
            counters = [self._counter(ce.counter_id)] if ce.counter_id else current.pmap.counters.values()
            for c in counters:
                indices = [ce.index.index] if ce.HasField("index") else range(c.size)
                for idx in indices:
                    self._check_index(c.name, idx, c.size)
                    out = p4r.CounterEntry(counter_id=c.id)
                    out.index.index = idx
                    out.data.CopyFrom(self._on(pipeline, lambda: c.read(pipeline, idx)))
                    yield p4r.Entity(counter_entry=out)
        elif kind == "meter_entry":
            me = ent.meter_entry
            pipeline, current = dev.pipeline, dev.current
            meters = ([current.pmap.meters[me.meter_id]] if me.meter_id in current.pmap.meters
                      else [] if me.meter_id else current.pmap.meters.values())
            if me.meter_id and not meters:
                raise P4RuntimeError(grpc.StatusCode.NOT_FOUND, f"meter id {me.meter_id} is not in the P4Info")
            for m in meters:
                indices = [me.index.index] if me.HasField("index") else range(m.size)
                for idx in indices:
                    self._check_index(m.name, idx, m.size)
                    out = p4r.MeterEntry(meter_id=m.id)
                    out.index.index = idx
                    cfg = dev.meter_configs.get((m.id, idx))
                    if cfg is not None:
                        out.config.CopyFrom(cfg)
                    out.counter_data.CopyFrom(self._on(pipeline, lambda: m.read_counters(pipeline, idx)))
                    yield p4r.Entity(meter_entry=out)
        elif kind == "register_entry":
            re_ = ent.register_entry
            pipeline, regs = dev.pipeline, dev.current.pmap.registers
            if re_.register_id and re_.register_id not in regs:
                raise P4RuntimeError(grpc.StatusCode.NOT_FOUND, f"register id {re_.register_id} is not in the P4Info")
            for r in ([regs[re_.register_id]] if re_.register_id else regs.values()):
                indices = [re_.index.index] if re_.HasField("index") else range(r.size)
                for idx in indices:
                    self._check_index(r.name, idx, r.size)
                    out = p4r.RegisterEntry(register_id=r.id)
                    out.index.index = idx
                    value = self._on(pipeline, lambda: pipeline.regarray_read(r.swx_name, idx))
                    out.data.bitstring = canonical(value, r.bitwidth)
                    yield p4r.Entity(register_entry=out)
        elif kind is None:
            raise P4RuntimeError(grpc.StatusCode.INVALID_ARGUMENT, "read of an empty entity")
        else:
            raise P4RuntimeError(grpc.StatusCode.UNIMPLEMENTED, f"reading {kind} is not supported")

    def _on(self, pipeline, read):
        """read() under the device lock, if pipeline is still the device's:
        a SetForwardingPipelineConfig frees the pipeline it replaces, and a
        read of it after that would touch freed memory. Indexed reads take
        the lock one index at a time, so a wildcard read of 64k indexes
        does not hold writes back for its whole length."""
        with self.device.lock:
            if self.device.pipeline is not pipeline:
                raise P4RuntimeError(grpc.StatusCode.ABORTED, "the forwarding pipeline changed during the read")
            return read()

    def _read_direct(self, kind: str, entry):
        """Direct counter/meter entries of the table entries the request's
        table_entry selects; with no table id, of every table that has one."""
        dev = self.device
        attr = "direct_counter" if kind == "direct_counter_entry" else "direct_meter"
        q = entry.table_entry
        with dev.lock:
            if q.table_id:
                self._direct_table(q.table_id, attr)
            tables = [ts for ts in dev.store.tables.values() if getattr(ts.map, attr) is not None]
            direct = DirectResources(dev.pipeline)
            out = []
            for ts, stored, proto in dev.store.read_stored(q, tables):
                if attr == "direct_counter":
                    o = p4r.DirectCounterEntry(table_entry=proto)
                    o.data.CopyFrom(direct.read_counter(ts.map, stored))
                    out.append(p4r.Entity(direct_counter_entry=o))
                else:
                    o = p4r.DirectMeterEntry(table_entry=proto)
                    cfg = ts.meter_config(stored)
                    if cfg is not None:
                        o.config.CopyFrom(cfg)
                    o.counter_data.CopyFrom(direct.read_meter_counters(ts.map, stored))
                    out.append(p4r.Entity(direct_meter_entry=o))
        yield from out

    # ---- stream channel ----
    def StreamChannel(self, request_iterator, context):
        client = Client(queue.Queue())
        self._streams.add(client)
        reader = threading.Thread(target=self._stream_reader, args=(request_iterator, client),
                                  name=f"p4rt-stream-{client.id}", daemon=True)
        reader.start()
        try:
            while True:
                item = client.queue.get()
                if item is None:
                    return
                if isinstance(item, ArbitrationError):
                    context.abort(item.code, item.message)
                yield item
        finally:
            self._streams.discard(client)
            for c in self.arb.remove(client):
                self._send_arbitration(c)
            self._arbitration_changed()

    def _stream_reader(self, request_iterator, client: Client) -> None:
        try:
            for req in request_iterator:
                kind = req.WhichOneof("update")
                if kind == "arbitration":
                    a = req.arbitration
                    try:
                        notify = self.arb.update(client, a.device_id, a.role.name, _election_id(a))
                    except ArbitrationError as e:
                        client.queue.put(e)
                        return
                    for c in notify:
                        self._send_arbitration(c)
                    self._arbitration_changed()
                elif kind == "packet":
                    self._packet_out(client, req.packet)
                elif client.election_id is None:
                    client.queue.put(ArbitrationError(grpc.StatusCode.FAILED_PRECONDITION,
                                                      "the first stream message must be an arbitration update"))
                    return
        except grpc.RpcError:
            pass
        except Exception:
            log.exception("stream reader")
        finally:
            client.queue.put(None)

    def _arbitration_changed(self) -> None:
        if self.packet_socket is not None:
            self.packet_socket.revalidate()

    def _send_arbitration(self, c: Client) -> None:
        code, msg = self.arb.status_for(c)
        resp = p4r.StreamMessageResponse()
        a = resp.arbitration
        a.device_id = self.device.config.device_id
        a.role.name = c.role
        high = self.arb.highest_election_id(c.role)
        if high is not None:    # no primary yet, ever: left unset (spec, Client Arbitration Notifications)
            a.election_id.high, a.election_id.low = high
        a.status.code = code.value[0]
        a.status.message = msg
        c.queue.put(resp)

    def _stream_error(self, client: Client, code: grpc.StatusCode, msg: str, packet: p4r.PacketOut) -> None:
        self.stats["packet_out_errors"] += 1
        resp = p4r.StreamMessageResponse()
        resp.error.canonical_code = code.value[0]
        resp.error.message = msg
        resp.error.packet_out.packet_out.CopyFrom(packet)
        client.queue.put(resp)

    def _packet_out(self, client: Client, packet: p4r.PacketOut) -> None:
        if client.election_id is None or self.arb.primary(client.role) is not client:
            return self._stream_error(client, grpc.StatusCode.PERMISSION_DENIED, "packet-out from a non-primary client", packet)
        values = {}
        for md in packet.metadata:
            if md.metadata_id in values:
                return self._stream_error(client, grpc.StatusCode.INVALID_ARGUMENT,
                                          f"packet_out metadata id {md.metadata_id} given twice", packet)
            values[md.metadata_id] = md.value
        err = self._send_packet_out(values, packet.payload)
        if err is not None:
            code, msg = err
            self._stream_error(client, code, msg, packet)

    def _send_packet_out(self, values: dict, payload: bytes):
        """Encode the packet_out header from metadata (ids -> bytestrings or
        ints) and inject the frame; None, or (grpc code, message)."""
        pc = self.device.current
        if pc is None:
            return grpc.StatusCode.FAILED_PRECONDITION, "no pipeline"
        hdr = pc.pmap.controller_headers.get("packet_out")
        header = b""
        if hdr is not None:
            widths = hdr.widths
            # the metadata must match the P4Info (spec, Stream Error Reporting):
            # a field left out is not silently sent as 0
            missing = sorted(set(widths) - set(values))
            if missing:
                return grpc.StatusCode.INVALID_ARGUMENT, f"packet_out metadata ids {missing} missing"
            ints = {}
            for fid, v in values.items():
                if fid not in widths:
                    return grpc.StatusCode.INVALID_ARGUMENT, f"packet_out metadata id {fid} unknown"
                if isinstance(v, int):
                    if v >> widths[fid]:
                        return grpc.StatusCode.INVALID_ARGUMENT, f"packet_out metadata {fid}: {v} too wide"
                    ints[fid] = v
                else:
                    try:
                        ints[fid] = decode_value(v, widths[fid], f"packet_out metadata {fid}")
                    except P4RuntimeError as e:
                        return e.code, e.message
            header = hdr.encode(ints)
        try:
            self.device.packet_out(header + payload)
            self.stats["packet_out"] += 1
        except libbsw.BswError as e:
            # a frame larger than one mbuf is the client's; no mbuf or a full
            # ring is the moment's
            if e.errno == errno.EMSGSIZE:
                return grpc.StatusCode.INVALID_ARGUMENT, str(e)
            return grpc.StatusCode.UNAVAILABLE, str(e)
        except RuntimeError as e:
            return grpc.StatusCode.UNAVAILABLE, str(e)
        return None

    def _packet_in_reader(self) -> None:
        buf = ctypes.create_string_buffer(16384)
        while not self._stop.is_set():
            try:
                n = self.device.packet_in(buf, 100_000)
            except libbsw.BswError as e:
                log.warning("packet-in: %s", e)
                continue
            if n <= 0:
                if self.device.pipeline is None:
                    time.sleep(0.1)
                continue
            data = buf.raw[:n]
            pc = self.device.current
            if pc is None:
                self.stats["packet_in_no_primary"] += 1
                continue
            hdr = pc.pmap.controller_headers.get("packet_in")
            fields = hdr.decode(data) if hdr is not None else []
            if hdr is not None:
                data = data[hdr.n_bytes:]
            primary = self.arb.primary("")
            if primary is None:
                self.stats["packet_in_no_primary"] += 1
                continue
            resp = p4r.StreamMessageResponse()
            if hdr is not None:
                for fid, value in fields:
                    resp.packet.metadata.add(metadata_id=fid, value=canonical(value, hdr.widths[fid]))
            resp.packet.payload = data
            self.stats["packet_in"] += 1
            primary.queue.put(resp)


def serve(device: Device, address: str, max_workers: int = 16):
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=max_workers),
                         options=[("grpc.max_receive_message_length", 256 << 20),
                                  ("grpc.max_send_message_length", 256 << 20)])
    service = P4RuntimeService(device)
    p4runtime_pb2_grpc.add_P4RuntimeServicer_to_server(service, server)
    server.add_insecure_port(address)
    server.start()
    return server, service
