"""ctypes binding of libbsw.so (targets/dpdk/src/bsw.h).

Every call that can fail raises BswError with the library's own message, so
the P4Runtime layer can turn it into a status a client understands. ctypes
releases the GIL during foreign calls, so a packet-in thread blocked in
bsw_packet_in_recv() does not stall the gRPC threads.
"""
from __future__ import annotations

import ctypes
import errno
import os
import struct
from dataclasses import dataclass
from pathlib import Path

NAME_SIZE = 64
MAX_INSTANCES = 16           # BSW_MAX_INSTANCES

OP_ADD, OP_DEL, OP_DEFAULT, OP_REBUILD = 0, 1, 2, 3

MATCH_WILDCARD, MATCH_LPM, MATCH_EXACT = 0, 1, 2

BUILD_MODES = {"compiled": 0, "interpreted": 1, "compiled-only": 2}


class BswError(RuntimeError):
    def __init__(self, func: str, status: int, message: str):
        self.status = status
        self.errno = -status if status < 0 else status
        super().__init__(f"{func}: {message or os.strerror(self.errno)} ({errno.errorcode.get(self.errno, self.errno)})")


class PipelineInfo(ctypes.Structure):
    _fields_ = [(n, ctypes.c_uint32) for n in
                ("n_ports_in", "n_ports_out", "n_actions", "n_tables", "n_regarrays", "n_metarrays")]


class TableInfo(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char * NAME_SIZE)] + [
        (n, ctypes.c_uint32) for n in ("n_match_fields", "n_actions", "size", "is_exact", "key_size",
                                       "action_data_size", "default_action_is_const")]


class MatchFieldInfo(ctypes.Structure):
    _fields_ = [(n, ctypes.c_uint32) for n in ("match_type", "is_header", "n_bits", "byte_offset")]


class ActionInfo(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char * NAME_SIZE), ("n_args", ctypes.c_uint32)]


class ActionArgInfo(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char * NAME_SIZE), ("n_bits", ctypes.c_uint32),
                ("is_network_byte_order", ctypes.c_uint32)]


class TableActionInfo(ctypes.Structure):
    _fields_ = [(n, ctypes.c_uint32) for n in ("action_id", "for_entries", "for_default")]


class ArrayInfo(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char * NAME_SIZE), ("size", ctypes.c_uint32)]


class DistributorStats(ctypes.Structure):
    _fields_ = [("rx", ctypes.c_uint64), ("rx_dropped", ctypes.c_uint64), ("tx", ctypes.c_uint64),
                ("tx_dropped", ctypes.c_uint64), ("to_instance", ctypes.c_uint64 * MAX_INSTANCES)]


class ChannelField(ctypes.Structure):
    """struct bsw_channel_field: a packet_in/packet_out header field."""
    _fields_ = [("id", ctypes.c_uint32), ("bit_offset", ctypes.c_uint32), ("width", ctypes.c_uint32)]


# enum in bsw.h, in order: the packet channel's counters
CHANNEL_STATS = ("packet_in", "packet_in_drops", "packet_out", "packet_out_errors")


@dataclass(slots=True)
class EntryBytes:
    """One table entry in the pipeline's own layout."""
    key: bytes | None
    action_id: int
    action_data: bytes | None
    key_mask: bytes | None = None
    priority: int = 0


@dataclass(slots=True)
class PendingOp:
    """One op of a batch, before it is packed for bsw_table_commit_packed()."""
    kind: int
    table_id: int
    entry: EntryBytes | None = None            # ADD, DEL (key), DEFAULT (action; no key)
    undo: EntryBytes | None = None             # ADD over an existing key, DEL: the entry as it was
    entries: list[EntryBytes] | None = None    # REBUILD


# The packed batch of bsw_table_commit_packed() (see bsw.h).
_PACKED_KEY, _PACKED_MASK, _PACKED_DATA = 1, 2, 4
_PACKED_OP = struct.Struct("=III")
_PACKED_ENTRY = struct.Struct("=III")
_PACKED_NO_ENTRY = _PACKED_ENTRY.pack(0, 0, 0)


class OpBatch:
    """The ops of one commit, in order.

    Ops are kept as plain objects while a Write is checked and serialized in
    one pass at commit time into the byte string bsw_table_commit_packed()
    reads: building ctypes structures per update cost 2-3 µs, a fifth of
    what a whole insert cost; packing costs 0.2-0.5 µs per op."""

    def __init__(self) -> None:
        self.ops: list[PendingOp] = []

    def __len__(self) -> int:
        return len(self.ops)

    def add(self, table_id: int, entry: EntryBytes, undo: EntryBytes | None) -> None:
        """Insert or overwrite; undo: the entry it replaces (None: a new key)."""
        self.ops.append(PendingOp(OP_ADD, table_id, entry, undo))

    def delete(self, table_id: int, entry: EntryBytes) -> None:
        self.ops.append(PendingOp(OP_DEL, table_id, entry, entry))

    def set_default(self, table_id: int, action_id: int, action_data: bytes | None) -> None:
        self.ops.append(PendingOp(OP_DEFAULT, table_id, EntryBytes(None, action_id, action_data or None)))

    def rebuild(self, table_id: int, entries: list[EntryBytes]) -> None:
        self.ops.append(PendingOp(OP_REBUILD, table_id, entries=entries))

    def pack(self) -> bytearray:
        buf = bytearray()
        op_header = _PACKED_OP.pack
        for op in self.ops:
            if op.kind == OP_REBUILD:
                buf += op_header(op.kind, op.table_id, len(op.entries))
                for e in op.entries:
                    _pack_entry(buf, e)
                continue
            buf += op_header(op.kind, op.table_id, 0)
            _pack_entry(buf, op.entry)
            if op.undo is None:
                buf += _PACKED_NO_ENTRY
            else:
                _pack_entry(buf, op.undo)
        return buf


def _pack_entry(buf: bytearray, e: EntryBytes) -> None:
    key, mask, data = e.key, e.key_mask, e.action_data
    flags = ((_PACKED_KEY if key is not None else 0) | (_PACKED_MASK if mask is not None else 0)
             | (_PACKED_DATA if data is not None else 0))
    buf += _PACKED_ENTRY.pack(flags, e.priority, e.action_id)
    if key is not None:
        buf += key
    if mask is not None:
        buf += mask
    if data is not None:
        buf += data


def default_library_path() -> Path:
    env = os.environ.get("BSW_LIBRARY")
    if env:
        return Path(env)
    return Path(__file__).resolve().parent.parent / "build" / "libbsw.so"


class Library:
    """The loaded libbsw.so; one per process (DPDK's EAL is per process)."""

    def __init__(self, path: Path | None = None):
        self.path = path or default_library_path()
        if not self.path.exists():
            raise FileNotFoundError(f"{self.path} not built: run `make -C targets/dpdk`")
        self.lib = ctypes.CDLL(str(self.path), mode=ctypes.RTLD_GLOBAL)
        self.lib.bsw_last_error.restype = ctypes.c_char_p
        self.lib.bsw_n_worker_lcores.restype = ctypes.c_uint32
        self.lib.bsw_flow_hash.restype = ctypes.c_uint32
        self.lib.bsw_distributors_stop.restype = None
        self.lib.bsw_table_type.restype = ctypes.c_char_p

    def _call(self, name: str, *args) -> int:
        status = getattr(self.lib, name)(*args)
        if status < 0:
            raise BswError(name, status, self.lib.bsw_last_error().decode(errors="replace"))
        return status

    # ---- process ----
    def eal_init(self, args: list[str]) -> None:
        argv = (ctypes.c_char_p * (len(args) + 1))(*[a.encode() for a in args], None)
        self._call("bsw_eal_init", len(args), argv)

    def mempool_create(self, name: str, n_mbufs: int, mbuf_size: int = 2048 + 128) -> None:
        self._call("bsw_mempool_create", name.encode(), n_mbufs, mbuf_size)

    def ethdev_open(self, devargs: str, dev_name: str, n_queues: int, mtu: int, mempool: str) -> int:
        return self._call("bsw_ethdev_open", devargs.encode(), dev_name.encode(), n_queues, mtu,
                          mempool.encode())

    def ring_create(self, name: str, size: int) -> None:
        self._call("bsw_ring_create", name.encode(), size)

    def n_worker_lcores(self) -> int:
        return self.lib.bsw_n_worker_lcores()

    # ---- software distribution ----
    def distributor_start(self, port_id: int, ring_prefix: str, n_instances: int, idle_us: int) -> int:
        return self._call("bsw_distributor_start", ctypes.c_uint16(port_id), ring_prefix.encode(), n_instances,
                          idle_us)

    def distributor_stats(self, index: int, n_instances: int) -> dict:
        st = DistributorStats()
        self._call("bsw_distributor_stats", index, ctypes.byref(st))
        return {"rx": st.rx, "rx_dropped": st.rx_dropped, "tx": st.tx, "tx_dropped": st.tx_dropped,
                "to_instance": list(st.to_instance[:n_instances])}

    def distributors_stop(self) -> None:
        self.lib.bsw_distributors_stop()

    def flow_hash(self, frame: bytes) -> int:
        return self.lib.bsw_flow_hash(frame, len(frame))

    # ---- pipeline ----
    def spec_check(self, spec_path: str) -> None:
        """Raises BswError where DPDK would not build the spec."""
        self._call("bsw_spec_check", spec_path.encode())

    def pipeline_build(self, spec_path: str, work_dir: str, include_dir: str, iospecs: list[str],
                       mode: str = "compiled") -> "Pipeline":
        """Build one pipeline instance per I/O spec; mode: compiled (falls
        back to interpreted), interpreted, compiled-only."""
        handle = ctypes.c_void_p()
        used = ctypes.c_uint32()
        texts = (ctypes.c_char_p * len(iospecs))(*[t.encode() for t in iospecs])
        self._call("bsw_pipeline_build", spec_path.encode(), work_dir.encode(), include_dir.encode(),
                   BUILD_MODES[mode], len(iospecs), texts, ctypes.byref(handle), ctypes.byref(used))
        pipeline = Pipeline(self, handle)
        pipeline.mode = "interpreted" if used.value == BUILD_MODES["interpreted"] else "compiled"
        return pipeline


class Pipeline:
    """A built pipeline (all its instances) and the calls that act on it."""

    def __init__(self, library: Library, handle: ctypes.c_void_p):
        self.library = library
        self.handle = handle
        self._call = library._call
        self.mode = "compiled"

    def free(self) -> None:
        if self.handle:
            self.library.lib.bsw_pipeline_free(self.handle)
            self.handle = None

    def workers_start(self, idle_us: int, nice: int = 0) -> None:
        self._call("bsw_workers_start", self.handle, idle_us, ctypes.c_int32(nice))

    def workers_stop(self) -> None:
        self._call("bsw_workers_stop", self.handle)

    def cpu_port_config(self, ring_prefix: str, mempool: str) -> None:
        self._call("bsw_cpu_port_config", self.handle, ring_prefix.encode(), mempool.encode())

    # ---- introspection ----
    def info(self) -> PipelineInfo:
        out = PipelineInfo()
        self._call("bsw_pipeline_info", self.handle, ctypes.byref(out))
        return out

    def table_info(self, table_id: int) -> TableInfo:
        out = TableInfo()
        self._call("bsw_table_info", self.handle, table_id, ctypes.byref(out))
        return out

    def match_field_info(self, table_id: int, field_id: int) -> MatchFieldInfo:
        out = MatchFieldInfo()
        self._call("bsw_match_field_info", self.handle, table_id, field_id, ctypes.byref(out))
        return out

    def table_action_info(self, table_id: int, i: int) -> TableActionInfo:
        out = TableActionInfo()
        self._call("bsw_table_action_info", self.handle, table_id, i, ctypes.byref(out))
        return out

    def action_info(self, action_id: int) -> ActionInfo:
        out = ActionInfo()
        self._call("bsw_action_info", self.handle, action_id, ctypes.byref(out))
        return out

    def action_arg_info(self, action_id: int, arg_id: int) -> ActionArgInfo:
        out = ActionArgInfo()
        self._call("bsw_action_arg_info", self.handle, action_id, arg_id, ctypes.byref(out))
        return out

    def regarray_info(self, i: int) -> ArrayInfo:
        out = ArrayInfo()
        self._call("bsw_regarray_info", self.handle, i, ctypes.byref(out))
        return out

    def metarray_info(self, i: int) -> ArrayInfo:
        out = ArrayInfo()
        self._call("bsw_metarray_info", self.handle, i, ctypes.byref(out))
        return out

    # ---- tables ----
    def table_commit(self, batch: OpBatch) -> None:
        """Apply a batch as one update; raises BswError (nothing applied) on failure."""
        if not batch:
            return
        buf = batch.pack()
        n_done = ctypes.c_uint32()
        self._call("bsw_table_commit_packed", self.handle, (ctypes.c_char * len(buf)).from_buffer(buf),
                   ctypes.c_size_t(len(buf)), len(batch), ctypes.byref(n_done))

    def thread_rotation(self) -> tuple[int, int]:
        """(SWX threads the packets rotate over, yielding instruction
        handlers pointed at the compiled library's copies)."""
        n, own = ctypes.c_uint32(), ctypes.c_uint32()
        self._call("bsw_pipeline_thread_rotation", self.handle, ctypes.byref(n), ctypes.byref(own))
        return n.value, own.value

    def table_lookup_set(self, one_step: bool) -> None:
        """Exact-match lookups in one step or in SWX's prefetching stages
        (see bsw_table_lookup.c); before the workers start."""
        self._call("bsw_table_lookup_set", self.handle, int(one_step))

    def table_entry_index(self, table_id: int, key: bytes) -> int | None:
        """The direct counter/meter index of an exact-match entry (see
        bsw_table_entry_index); None when the key is not in the table."""
        v = ctypes.c_uint64()
        try:
            self._call("bsw_table_entry_index", self.handle, table_id, key, ctypes.byref(v))
        except BswError as e:
            if e.errno == errno.ENOENT:
                return None
            raise
        return v.value

    def table_entry_read(self, table_id: int, key: bytes, data_size: int) -> tuple[int, bytes, int] | None:
        """The entry with this key as the data plane finds it: (action id,
        action data of the table's data_size, index); None when the key is
        not in the table (see bsw_table_entry_read)."""
        aid, index = ctypes.c_uint64(), ctypes.c_uint64()
        data = ctypes.create_string_buffer(max(1, data_size))
        try:
            self._call("bsw_table_entry_read", self.handle, table_id, key, ctypes.byref(aid), data,
                       ctypes.byref(index))
        except BswError as e:
            if e.errno == errno.ENOENT:
                return None
            raise
        return aid.value, data.raw[:data_size], index.value

    def table_type(self, table_id: int) -> str:
        """Which table type holds the table: "line", "index", "lpm32",
        "exact" (DPDK's), "dpdk" (another of DPDK's) or "stub"."""
        name = self.library.lib.bsw_table_type(self.handle, table_id)
        if name is None:
            raise BswError("bsw_table_type", -errno.EINVAL, f"table {table_id}: no such table")
        return name.decode()

    # ---- externs ----
    def regarray_read(self, name: str, index: int) -> int:
        v = ctypes.c_uint64()
        self._call("bsw_regarray_read", self.handle, name.encode(), index, ctypes.byref(v))
        return v.value

    def regarray_write(self, name: str, index: int, value: int) -> None:
        self._call("bsw_regarray_write", self.handle, name.encode(), index, ctypes.c_uint64(value))

    def meter_set(self, name: str, index: int, cir: int, pir: int, cbs: int, pbs: int) -> None:
        self._call("bsw_meter_set", self.handle, name.encode(), index, *(ctypes.c_uint64(v) for v in (cir, pir, cbs, pbs)))

    def meter_reset(self, name: str, index: int) -> None:
        self._call("bsw_meter_reset", self.handle, name.encode(), index)

    def meter_stats(self, name: str, index: int) -> tuple[list[int], list[int]]:
        """(packets, bytes) the meter coloured green, yellow and red since
        it was last set or reset."""
        pkts, nbytes = (ctypes.c_uint64 * 3)(), (ctypes.c_uint64 * 3)()
        self._call("bsw_meter_stats_read", self.handle, name.encode(), index, pkts, nbytes)
        return list(pkts), list(nbytes)

    def port_stats(self, port_id: int) -> dict[str, int]:
        vals = [ctypes.c_uint64() for _ in range(5)]
        self._call("bsw_port_stats", self.handle, port_id, *(ctypes.byref(v) for v in vals))
        return dict(zip(("rx_pkts", "rx_bytes", "tx_pkts", "tx_bytes", "tx_drops"), (v.value for v in vals)))

    # ---- CPU port ----
    def packet_in_recv(self, buf: ctypes.Array, timeout_us: int) -> int:
        return self._call("bsw_packet_in_recv", self.handle, buf, len(buf), timeout_us)

    def packet_out_send(self, data: bytes) -> None:
        self._call("bsw_packet_out_send", self.handle, data, len(data))

    # ---- packet channel (bsw_packet_channel.c) ----
    def packet_channel_start(self, fd: int, packet_in: list[tuple[int, int, int]], in_bytes: int,
                             packet_out: list[tuple[int, int, int]], out_bytes: int) -> None:
        """Serve the connected socket fd from the library's thread; the
        headers as (metadata id, bit offset, width) per field."""
        def fields(fs):
            return (ChannelField * max(len(fs), 1))(*(ChannelField(*f) for f in fs))
        self._call("bsw_packet_channel_start", self.handle, fd, fields(packet_in), len(packet_in), in_bytes,
                   fields(packet_out), len(packet_out), out_bytes)

    def packet_channel_stop(self) -> None:
        self.library.lib.bsw_packet_channel_stop(self.handle)

    def packet_channel_stats(self) -> tuple[bool, dict[str, int]]:
        """(still served, counters) of the channel being served."""
        vals = (ctypes.c_uint64 * len(CHANNEL_STATS))()
        running = self._call("bsw_packet_channel_stats", self.handle, vals)
        return bool(running), dict(zip(CHANNEL_STATS, vals))

    # ---- benchmark ----
    def bench_stock_ctl(self, table: str, action_id: int, n: int, batch: int, checkpoints: list[int]) -> list[int]:
        cps = (ctypes.c_uint32 * len(checkpoints))(*checkpoints)
        out = (ctypes.c_uint64 * len(checkpoints))()
        self._call("bsw_bench_stock_ctl", self.handle, table.encode(), action_id, n, batch, cps,
                   len(checkpoints), out)
        return list(out)

    def straight_load(self, lib_path: str) -> None:
        """Workers started from now on run the program as the straight-line
        code in lib_path (straight_codegen.build), instead of SWX."""
        self._call("bsw_straight_load", self.handle, lib_path.encode())

    def bench_hand_path(self, role: str, port: int) -> None:
        """Workers started from now on run the hand-written path of `role`
        (pppoe_up or lns_up) polling `port`, instead of the pipeline; ""
        puts the pipeline back (bsw_bench_hand_path.c)."""
        self._call("bsw_bench_hand_path_set", self.handle, role.encode(), port)
