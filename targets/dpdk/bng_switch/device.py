"""The switch device: DPDK resources, the running pipeline, and its state.

One Device per process. It owns the ports (they outlive pipeline changes),
builds the pipeline from a P4Runtime pipeline config, and serialises every
change to the data plane through one lock, so the P4Runtime service can be
multi-threaded without the pipeline ever seeing two writers.
"""
from __future__ import annotations

import contextlib
import ctypes
import hashlib
import json
import logging
import os
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from p4.config.v1 import p4info_pb2

from . import libbsw, swx_spec
from .pipeline_map import MappingError, PipelineMap
from .switch_config import MEMPOOL, SwitchConfig, cpu_ring, cpu_ring_prefix, dist_ring, dist_ring_prefix, null_ring
from .swx_spec import SpecError
from .table_store import TableStore

log = logging.getLogger("bng_switch.device")

DEVICE_CONFIG_FORMAT = "bng-swx-device-config/1"

# p4c-dpdk's per-port PNA direction register, and PNA_Direction_t values.
PNA_DIRECTION_REGARRAY = "direction"
PNA_NET_TO_HOST, PNA_HOST_TO_NET = 0, 1


class DeviceConfigError(ValueError):
    pass


@dataclass
class PipelineConfig:
    """What SetForwardingPipelineConfig carries: P4Info + our device config."""
    p4info: p4info_pb2.P4Info
    device_config: bytes
    cookie: int | None          # None: the client sent none (Get leaves it unset)
    spec_text: str
    context: dict | None
    spec: swx_spec.Spec
    pmap: PipelineMap

    @property
    def digest(self) -> str:
        return hashlib.sha256(self.spec_text.encode() + self.p4info.SerializeToString(deterministic=True)).hexdigest()


def decode_device_config(data: bytes) -> tuple[str, dict | None]:
    """The device config is a JSON bundle {format, spec, context} made by
    `make p4`; a bare .spec text is accepted too (names then map by suffix)."""
    try:
        text = data.decode("utf-8", errors="strict") if data else ""
    except UnicodeDecodeError as e:
        raise DeviceConfigError(f"p4_device_config is not UTF-8 text: {e}") from e
    if not text.strip():
        raise DeviceConfigError("empty p4_device_config: expected a bng-swx device config bundle or a .spec")
    if text.lstrip().startswith("{"):
        try:
            bundle = json.loads(text)
        except (json.JSONDecodeError, RecursionError) as e:
            raise DeviceConfigError(f"device config is not valid JSON: {e}") from e
        if not isinstance(bundle, dict) or bundle.get("format") != DEVICE_CONFIG_FORMAT:
            fmt = bundle.get("format") if isinstance(bundle, dict) else None
            raise DeviceConfigError(f"device config format {fmt!r}, expected {DEVICE_CONFIG_FORMAT}")
        spec, context = bundle.get("spec"), bundle.get("context")
        if not isinstance(spec, str) or not (context is None or isinstance(context, dict)):
            raise DeviceConfigError("device config bundle: spec must be text and context an object (or absent)")
        return spec, context
    return text, None


def encode_device_config(spec_text: str, context: dict | None) -> bytes:
    return json.dumps({"format": DEVICE_CONFIG_FORMAT, "spec": spec_text, "context": context},
                      sort_keys=True).encode()


def prepare(p4info: p4info_pb2.P4Info, device_config: bytes, cookie: int | None = None) -> PipelineConfig:
    """Check a pipeline config without touching the data plane (VERIFY)."""
    spec_text, context = decode_device_config(device_config)
    spec = swx_spec.parse(spec_text)
    spec.check_limits()
    try:
        pmap = PipelineMap(p4info, spec, context)
    except MappingError:
        raise
    except (KeyError, TypeError, AttributeError, ValueError) as e:
        # a P4Info that refers to what it does not hold (an action id, say),
        # or a context of the wrong shape
        raise MappingError(f"the P4Info, spec and context do not fit together: {type(e).__name__}: {e}") from e
    return PipelineConfig(p4info, device_config, cookie, spec_text, context, spec, pmap)


def create_rings(lib: libbsw.Library, cfg: SwitchConfig) -> None:
    """The rings the I/O specs name: CPU port per instance, input padding."""
    lib.ring_create(null_ring(cfg.name), 64)
    for k in range(cfg.workers):
        lib.ring_create(cpu_ring(cfg.name, k, "in"), 4096)
        lib.ring_create(cpu_ring(cfg.name, k, "out"), 4096)
        for p in cfg.ports:
            if p.distribute:
                lib.ring_create(dist_ring(cfg.name, p.id, k, "rx"), 2048)
                lib.ring_create(dist_ring(cfg.name, p.id, k, "tx"), 2048)


class Device:
    def __init__(self, config: SwitchConfig, library: libbsw.Library | None = None):
        self.config = config
        self.lib = library or libbsw.Library()
        self.lock = threading.RLock()
        self.pipeline: libbsw.Pipeline | None = None
        self.current: PipelineConfig | None = None
        self.saved: PipelineConfig | None = None
        self.store: TableStore | None = None
        self.meter_configs: dict[tuple[int, int], object] = {}
        self._packet_out_lock = threading.Lock()
        # Held by the packet-in reader while it is inside the library, and
        # by commit while it frees a pipeline.
        self._packet_in_lock = threading.Lock()
        self._eal_up = False
        self.distributors: dict[int, int] = {}   # port id -> libbsw distributor index
        # The packet channel's socket (packet_socket.py) while one is granted,
        # served by the library on whichever pipeline is running.
        self._channel_fd: int | None = None
        self._channel_totals = dict.fromkeys(libbsw.CHANNEL_STATS, 0)

    # ---- start-up ----
    def start(self) -> None:
        cfg = self.config
        Path(cfg.work_dir).mkdir(parents=True, exist_ok=True)
        self.lib.eal_init(cfg.eal_argv())
        self._eal_up = True
        workers = self.lib.n_worker_lcores()
        if workers < cfg.workers:
            raise RuntimeError(f"EAL gave {workers} worker lcores, config asks for {cfg.workers}")
        self.lib.mempool_create(MEMPOOL, cfg.mempool_mbufs)
        dpdk_ports = {}
        for p in cfg.ports:
            if p.type == "pcap":
                continue
            q = p.queues(cfg.workers)
            dpdk_ports[p.id] = self.lib.ethdev_open(p.devargs(q), p.dev_name, q, p.mtu, MEMPOOL)
        create_rings(self.lib, cfg)
        for p in cfg.ports:
            if p.distribute:
                idx = self.lib.distributor_start(dpdk_ports[p.id], dist_ring_prefix(cfg.name, p.id), cfg.workers,
                                                 cfg.idle_us)
                self.distributors[p.id] = idx
        log.info("switch %s up: %d ports + CPU port %d, %d worker(s)", cfg.name, len(cfg.ports), cfg.cpu_port,
                 cfg.workers)

    # ---- pipeline config ----
    def commit(self, pc: PipelineConfig, reconcile: bool = False) -> None:
        """Build and start pc's pipeline, replacing the running one."""
        with self.lock:
            if reconcile and self.current is not None and self.current.digest == pc.digest:
                log.info("RECONCILE_AND_COMMIT with the running program: forwarding state kept")
                self.current = pc
                return
            old_entries = self._exported_entries() if reconcile else []
            old_meters = self._exported_meters() if reconcile else []
            new = self._build(pc)
            # neither a packet-in nor a packet-out may be using it meanwhile
            with self._packet_in_lock, self._packet_out_lock:
                if self.pipeline is not None:
                    self._channel_stop()
                    self.pipeline.free()  # stops its workers first
                self.pipeline, self.current = new, pc
            self._channel_start()
            self.store = TableStore(pc.pmap)
            self.meter_configs.clear()
            self.pipeline.workers_start(self.config.idle_us, self.config.worker_nice)
            if old_meters:
                self._reconfigure_meters(old_meters)
            if old_entries:
                self._reinstall(old_entries)

    def verify(self, pc: PipelineConfig) -> None:
        """VERIFY's last step: DPDK itself checks the spec (prepare() checked
        what Python can: its shape, the limits, the mapping to the P4Info),
        so that a config VERIFY accepts does not fail to build at COMMIT."""
        with self._spec_file(pc) as spec_path:
            try:
                self.lib.spec_check(spec_path)
            except libbsw.BswError as e:
                raise SpecError(f"DPDK refuses the spec: {e}") from e

    @contextlib.contextmanager
    def _spec_file(self, pc: PipelineConfig) -> Iterator[str]:
        """pc's spec in a file of the work dir while DPDK reads it (its
        build and check take a path)."""
        fd, spec_path = tempfile.mkstemp(suffix=".spec", dir=self.config.work_dir)
        try:
            with os.fdopen(fd, "w") as f:
                f.write(pc.spec_text)
            yield spec_path
        finally:
            os.unlink(spec_path)

    def _build(self, pc: PipelineConfig) -> libbsw.Pipeline:
        cfg = self.config
        with self._spec_file(pc) as spec_path:
            iospecs = [cfg.iospec(k) for k in range(cfg.workers)]
            pipeline = self.lib.pipeline_build(spec_path, cfg.work_dir, cfg.dpdk_include, iospecs,
                                               cfg.pipeline_mode)
            log.info("pipeline built (%s), %d instance(s)", pipeline.mode, len(iospecs))
            try:
                pc.pmap.bind(pipeline)
                pipeline.table_lookup_set(cfg.table_lookup == "one-step")
                if cfg.execution == "straight":
                    self._load_straight(pipeline, spec_path)
            except Exception:
                pipeline.free()
                raise
        try:
            pipeline.cpu_port_config(cpu_ring_prefix(cfg.name), MEMPOOL)
            self._set_port_directions(pipeline, pc)
        except Exception:
            pipeline.free()
            raise
        return pipeline

    def _load_straight(self, pipeline: libbsw.Pipeline, spec_path: str) -> None:
        """execution: straight. A program the generator does not handle, or
        a build that fails, runs on SWX instead, with a warning."""
        from .straight_codegen import StraightError, build
        try:
            lib_path = build(spec_path, self.config.work_dir, self.config.dpdk_include)
            pipeline.straight_load(lib_path)
        except (StraightError, libbsw.BswError) as e:
            log.warning("execution straight: %s; the program runs on SWX", e)
            return
        log.info("the program runs as straight-line code (%s)", lib_path)

    def _set_port_directions(self, pipeline: libbsw.Pipeline, pc: PipelineConfig) -> None:
        """p4c-dpdk reads PNA's istd.direction from the register array
        `direction`, indexed by input port: the switch fills it from the
        ports' configured direction (the CPU port is a host port)."""
        size = pc.spec.regarrays.get(PNA_DIRECTION_REGARRAY)
        if size is None:
            return
        for port in self.config.all_ports():
            if port.id < size:
                pipeline.regarray_write(PNA_DIRECTION_REGARRAY, port.id,
                                        PNA_HOST_TO_NET if port.direction == "host" else PNA_NET_TO_HOST)

    def _exported_entries(self) -> list:
        """Entries by name with their direct meter configs, to reinstall on a
        new program (RECONCILE_AND_COMMIT); a default entry the client set
        comes as a MODIFY of the new table's default."""
        if self.store is None or self.current is None:
            return []
        out = []
        for ts in self.store.tables.values():
            for e in ts.entries.values():
                out.append((ts.map.name, e.proto, e.meter_config))
            if ts.default_proto is not None:
                out.append((ts.map.name, ts.default_proto, ts.default_meter_config))
        return out

    def _exported_meters(self) -> list[tuple[str, int, int, object]]:
        """The indirect meters' configs by meter name and index: a BNG's
        per-subscriber policers, which a new program must not lose."""
        if self.current is None:
            return []
        meters = self.current.pmap.meters
        return [(meters[mid].name, meters[mid].unit, idx, cfg) for (mid, idx), cfg in self.meter_configs.items()
                if mid in meters]

    def _reconfigure_meters(self, configs: list[tuple[str, int, int, object]]) -> None:
        """Configure the new program's meters of the same name and unit
        (bytes, packets) at the indexes that held a config; one it has no
        such meter or index for, or that fails, is logged, not kept (as an
        entry the new program refuses)."""
        by_name = {m.name: m for m in self.current.pmap.meters.values()}
        kept = dropped = 0
        for name, unit, idx, cfg in configs:
            m = by_name.get(name)
            if m is None or m.unit != unit or idx >= m.size:
                dropped += 1
                continue
            try:
                m.configure(self.pipeline, idx, cfg)
            except libbsw.BswError as e:
                log.info("reconcile: meter %s[%d] dropped: %s", name, idx, e)
                dropped += 1
                continue
            self.meter_configs[(m.id, idx)] = cfg
            kept += 1
        log.info("reconcile: %d meter configs kept, %d dropped (no such meter or index)", kept, dropped)

    def _reinstall(self, entries: list) -> None:
        """The new program's arrays start from zero: its counters count
        afresh, its direct meters get the configs the entries had."""
        from p4.v1 import p4runtime_pb2 as p4r

        from .direct_resources import DirectResources
        by_name = {t.name: t for t in self.current.pmap.tables.values()}
        kept = dropped = 0
        ops, undo, metered = libbsw.OpBatch(), [], []
        for name, proto, meter_config in entries:
            t = by_name.get(name)
            if t is None:
                dropped += 1
                continue
            u = p4r.Update(type=p4r.Update.MODIFY if proto.is_default_action else p4r.Update.INSERT)
            u.entity.table_entry.CopyFrom(proto)
            u.entity.table_entry.table_id = t.id
            if meter_config is not None and t.direct_meter is not None:
                u.entity.table_entry.meter_config.CopyFrom(meter_config)
            try:
                ts, stored = self.store.apply(u, ops, undo)   # stored None: the default entry
                kept += 1
            except Exception as e:  # the new program no longer accepts it
                log.info("reconcile: entry of %s dropped: %s", name, e)
                dropped += 1
                continue
            if ts.meter_config(stored) is not None:
                metered.append((ts, stored))
        self.store.add_rebuilds(ops)
        try:
            self.pipeline.table_commit(ops)
        except libbsw.BswError:
            # none of it reached the data plane: the store must not hold it
            # either (the new program runs with empty tables)
            self.store.roll_back(undo)
            log.warning("reconcile: the %d entries kept could not be committed: the tables are empty", kept)
            raise
        direct = DirectResources(self.pipeline)
        for ts, stored in metered:
            direct.write_meter(ts.map, stored, ts.meter_config(stored))
        log.info("reconcile: %d entries kept (%d with a direct meter), %d dropped", kept, len(metered), dropped)

    # ---- data plane access ----
    def require_pipeline(self) -> libbsw.Pipeline:
        if self.pipeline is None:
            raise RuntimeError("no forwarding pipeline config set")
        return self.pipeline

    def packet_out(self, data: bytes) -> None:
        with self._packet_out_lock:  # the CPU ring has a single producer
            self.require_pipeline().packet_out_send(data)

    def packet_in(self, buf: ctypes.Array, timeout_us: int) -> int:
        with self._packet_in_lock:
            p = self.pipeline
            if p is None:
                return 0
            return p.packet_in_recv(buf, timeout_us)

    # ---- packet channel ----
    def packet_channel_attach(self, fd: int | None) -> bool:
        """Serve the granted controller's socket fd from the library's
        thread (on this pipeline and the ones that replace it), or stop
        serving (None). The caller owns fd and closes it after detaching.
        False if fd is not served (the library refused it)."""
        with self.lock:
            self._channel_stop()
            self._channel_fd = fd
            self._channel_start()
            return self.packet_channel_serving()

    def packet_channel_serving(self) -> bool:
        """False once the library stopped serving the attached socket (the
        peer closed it or it failed); True while it serves, or while it
        waits for a pipeline."""
        with self.lock:
            if self._channel_fd is None:
                return False
            return self.pipeline is None or self.pipeline.packet_channel_stats()[0]

    def packet_channel_stats(self) -> dict[str, int]:
        """The channel's counters since the switch started."""
        with self.lock:
            out = dict(self._channel_totals)
            if self.pipeline is not None and self._channel_fd is not None:
                for k, v in self.pipeline.packet_channel_stats()[1].items():
                    out[k] += v
            return out

    def _channel_start(self) -> None:
        if self._channel_fd is None or self.pipeline is None or self.current is None:
            return
        headers = self.current.pmap.controller_headers
        pin, pout = headers.get("packet_in"), headers.get("packet_out")
        try:
            self.pipeline.packet_channel_start(self._channel_fd, pin.layout if pin else [],
                                               pin.n_bytes if pin else 0, pout.layout if pout else [],
                                               pout.n_bytes if pout else 0)
        except libbsw.BswError as e:
            log.error("packet channel: %s", e)      # packet_channel_serving() says False: the grant ends

    def _channel_stop(self) -> None:
        if self.pipeline is None or self._channel_fd is None:
            return
        for k, v in self.pipeline.packet_channel_stats()[1].items():
            self._channel_totals[k] += v
        self.pipeline.packet_channel_stop()

    def distributor_stats(self) -> dict[int, dict]:
        return {pid: self.lib.distributor_stats(idx, self.config.workers) for pid, idx in self.distributors.items()}

    def shutdown(self) -> None:
        with self.lock, self._packet_in_lock, self._packet_out_lock:
            if self.pipeline is not None:
                self._channel_stop()
                self.pipeline.free()
                self.pipeline = None
        # after the workers: what they flushed last still leaves its port
        self.lib.distributors_stop()
        self.distributors.clear()
