"""The switch's YAML configuration: EAL, ports, CPU port, workers.

Ports are numbered as the P4 program sees them. SWX wants port ids 0..N-1
without holes, so the configuration must list them that way; the CPU port
(packet-in/out through rings) is one of those ids, 0 by default.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field, fields
from pathlib import Path

import yaml

PORT_TYPES = ("af_packet", "libpcap", "tap", "pci", "pcap")
# What one pipeline instance of the BNG program (p4src/bng) holds in EAL
# memory: every table allocated at its compiled size, exact tables twice
# (active and standby), the fib_v4 rte_lpm (src/bsw_table_lpm.c: 64 MB of
# first level) among them. Measured 160.4 MB with the line tables
# (src/bsw_table_line_em.c; 154 MB before them); tests/integration/
# test_switch_memory.py fails if the program outgrows it.
PIPELINE_INSTANCE_MB = 168


class ConfigError(ValueError):
    pass


@dataclass
class PortConfig:
    id: int
    type: str
    iface: str = ""      # af_packet, libpcap, tap
    pci: str = ""        # pci: bus address
    rx_pcap: str = ""    # pcap: source file (looped)
    tx_pcap: str = "none"  # pcap: sink file, "none" discards
    mtu: int = 0
    burst: int = 32
    direction: str = "net"  # PNA direction of packets from this port: net (NET_TO_HOST) or host
    # Software distribution: the port is opened with one queue pair and an
    # I/O thread spreads its frames over the workers by subscriber (for a
    # port without queues, or a NIC whose RSS does not hash PPPoE).
    distribute: bool = False

    @property
    def dev_name(self) -> str:
        if self.type == "af_packet":
            return f"net_af_packet_{self.iface}"
        if self.type == "libpcap":
            return f"net_pcap_{self.iface}"
        if self.type == "tap":
            return f"net_tap_{self.iface}"
        return self.pci

    def queues(self, workers: int) -> int:
        """Queue pairs to open: one per worker, or one for a distributed port."""
        return 1 if self.distribute or self.type == "libpcap" else workers

    def devargs(self, n_queues: int) -> str:
        if self.type == "af_packet":
            # qdisc_bypass skips the kernel's egress qdisc, as a NIC driver would.
            return f"{self.dev_name},iface={self.iface},qpairs={n_queues},qdisc_bypass=1"
        if self.type == "libpcap":
            # One queue pair. Slower than af_packet, but exact: DPDK's
            # af_packet driver re-inserts the VLAN tag the kernel stripped
            # with TPID 0x8100 whatever it was, so an 802.1ad s-tag arrives
            # as 802.1Q; libpcap re-inserts it with the TPID the kernel saw.
            return f"{self.dev_name},iface={self.iface}"
        if self.type == "tap":
            return f"{self.dev_name},iface={self.iface}"
        return self.pci


@dataclass
class SwitchConfig:
    device_id: int = 1
    grpc_address: str = "0.0.0.0:9559"
    packet_socket: str = ""   # local PacketIn/PacketOut channel for the primary (packet_socket.py); "" = off
    workers: int = 1
    idle_us: int = 200
    worker_nice: int = -10    # workers ahead of the control plane on shared cores (0: as started)
    # CPUs for the lcores: the main lcore (gRPC, packet channel) on the
    # first, worker k on the (k+1)-th, round robin when there are fewer
    # CPUs than lcores. Empty: the CPUs the process may use. Keep the
    # controller's CPUs out of this list (lab/cpu_layout.py says why).
    cpus: list[int] = field(default_factory=list)
    eal_args: list[str] = field(default_factory=list)
    hugepages: bool = False
    # EAL memory in MB without hugepages; 0: eal_memory() sizes it for the
    # BNG program. Set it for a program with larger tables.
    eal_memory_mb: int = 0
    mempool_mbufs: int = 16384
    cpu_port: int = 0
    ports: list[PortConfig] = field(default_factory=list)
    work_dir: str = "/var/lib/bng-switch"
    dpdk_include: str = ""
    name: str = "bng-switch"
    pipeline_mode: str = "compiled"  # compiled (interpreted if gcc fails) | interpreted | compiled-only
    # Exact-match lookups: one-step, or SWX's staged lookup that prefetches
    # and serves another packet between stages (bsw_table_lookup.c). One
    # step measured faster here with 40k sessions (make bench-bng --lookup).
    table_lookup: str = "one-step"
    # How the workers run the program: straight (C generated from the spec
    # as one function, straight_codegen.py; SWX if the generator does not
    # handle the program or gcc fails) or swx (SWX's instruction groups).
    execution: str = "straight"

    def eal_argv(self) -> list[str]:
        if self.eal_args:
            return [self.name] + list(self.eal_args)
        cpus = list(self.cpus) or sorted(os.sched_getaffinity(0))
        # More lcores than CPUs (a multi-worker test on a small box, a lab
        # that keeps a CPU for its controller) go round robin: the idle
        # back-off keeps that bearable, but it measures nothing about speed.
        lcores = ["--lcores", ",".join(f"{k}@{cpus[k % len(cpus)]}" for k in range(self.workers + 1))]
        argv = [self.name, *lcores, "--no-telemetry", "--log-level", "*:notice"]
        if not any(p.type == "pci" for p in self.ports):
            argv.append("--no-pci")
        # No shared runtime files either way, so that several switches (the
        # LAC and LNS of the lab) run side by side.
        if self.hugepages:
            argv.append("--in-memory")
        else:
            argv += ["--no-huge", "--no-shconf", "-m", str(self.eal_memory())]
        return argv

    def eal_memory(self) -> int:
        """EAL memory in MB without hugepages, where it cannot grow after
        start: the mbufs with room to spare, plus two BNG pipelines per
        worker, because a new program is built before the one it replaces
        is freed (one pipeline and the second fib_v4, 66 MB, that a FIB
        change builds beside the first fit in that too). The pages are only
        touched as tables are allocated, so the headroom costs address
        space, not RAM."""
        if self.eal_memory_mb:
            return self.eal_memory_mb
        return self.eal_memory_for(2 * self.workers)

    def eal_memory_for(self, pipelines: int) -> int:
        """EAL memory in MB without hugepages for the mbufs and `pipelines`
        BNG pipeline instances alive at once (eal_memory() plans two per
        worker; a benchmark that keeps more builds needs more)."""
        return max(512, self.mempool_mbufs * 3 // 1024 + 256) + PIPELINE_INSTANCE_MB * pipelines

    def iospec(self, instance: int) -> str:
        """The SWX I/O spec of one pipeline instance.

        SWX wants a power-of-two number of input ports (its rx round robin is
        a mask), so the inputs are padded with readers of an always-empty
        ring; no output port is added."""
        lines_in, lines_out = [], []
        for p in sorted(self.all_ports(), key=lambda p: p.id):
            if p.id == self.cpu_port:
                lines_in.append(f"port in {p.id} ring {cpu_ring(self.name, instance, 'out')} bsz 1")
                lines_out.append(f"port out {p.id} ring {cpu_ring(self.name, instance, 'in')} bsz 1")
            elif p.type == "pcap":
                lines_in.append(f"port in {p.id} source mempool {MEMPOOL} file {p.rx_pcap} loop 0 packets 0")
                lines_out.append(f"port out {p.id} sink file {p.tx_pcap}")
            elif p.distribute:
                lines_in.append(f"port in {p.id} ring {dist_ring(self.name, p.id, instance, 'rx')} bsz {p.burst}")
                lines_out.append(f"port out {p.id} ring {dist_ring(self.name, p.id, instance, 'tx')} bsz {p.burst}")
            else:
                lines_in.append(f"port in {p.id} ethdev {p.dev_name} rxq {instance} bsz {p.burst}")
                lines_out.append(f"port out {p.id} ethdev {p.dev_name} txq {instance} bsz {p.burst}")
        n_in = len(lines_in)
        for pad in range(n_in, 1 << (n_in - 1).bit_length()):
            lines_in.append(f"port in {pad} ring {null_ring(self.name)} bsz 1")
        return "\n".join(lines_in + lines_out) + "\n"

    def all_ports(self) -> list[PortConfig]:
        return self.ports + [PortConfig(self.cpu_port, "cpu", direction="host")]

    def validate(self) -> None:
        ids = sorted(p.id for p in self.all_ports())
        if ids != list(range(len(ids))):
            raise ConfigError(f"port ids (with cpu_port {self.cpu_port}) must be 0..N-1 without holes, got {ids}")
        for p in self.ports:
            if p.type not in PORT_TYPES:
                raise ConfigError(f"port {p.id}: type {p.type!r} not one of {PORT_TYPES}")
            if p.type in ("af_packet", "libpcap", "tap") and not p.iface:
                raise ConfigError(f"port {p.id}: {p.type} needs iface")
            if p.type == "pci" and not p.pci:
                raise ConfigError(f"port {p.id}: pci needs a bus address")
            if p.direction not in ("net", "host"):
                raise ConfigError(f"port {p.id}: direction {p.direction!r} is net or host")
            if p.type == "libpcap" and self.workers > 1 and not p.distribute:
                raise ConfigError(f"port {p.id}: libpcap has one queue pair: one worker, or distribute: true")
            if p.distribute and p.type == "pcap":
                raise ConfigError(f"port {p.id}: a pcap port is read by every worker, it cannot be distributed")
            if p.type == "pcap" and not p.rx_pcap:
                raise ConfigError(f"port {p.id}: pcap needs rx_pcap")
        if self.pipeline_mode not in ("compiled", "interpreted", "compiled-only"):
            raise ConfigError(f"pipeline_mode {self.pipeline_mode!r}: compiled, interpreted or compiled-only")
        if self.execution not in ("swx", "straight"):
            raise ConfigError(f"execution {self.execution!r}: swx or straight")
        if self.table_lookup not in TABLE_LOOKUPS:
            raise ConfigError(f"table_lookup {self.table_lookup!r}: one of {TABLE_LOOKUPS}")
        if not 1 <= self.workers <= 16:
            raise ConfigError("workers must be 1..16")
        if self.eal_memory_mb < 0 or (self.eal_memory_mb and self.hugepages):
            raise ConfigError("eal_memory_mb: a size in MB, and only without hugepages (with them the EAL grows)")
        if self.cpus and self.eal_args:
            raise ConfigError("cpus and eal_args: with eal_args, name the lcores there (--lcores)")
        if self.cpus:
            allowed = os.sched_getaffinity(0)
            outside = sorted(set(self.cpus) - allowed)
            if outside:
                raise ConfigError(f"cpus {outside} are not among the CPUs this process may use "
                                  f"({','.join(map(str, sorted(allowed)))})")


MEMPOOL = "MEMPOOL0"
TABLE_LOOKUPS = ("one-step", "staged")


def cpu_ring(switch_name: str, instance: int, direction: str) -> str:
    return f"{cpu_ring_prefix(switch_name)}{instance}_{direction}"


def dist_ring_prefix(switch_name: str, port_id: int) -> str:
    return f"{switch_name[:16]}_d{port_id}_"


def dist_ring(switch_name: str, port_id: int, instance: int, direction: str) -> str:
    """A distributed port's ring toward ("rx") or from ("tx") one instance."""
    return f"{dist_ring_prefix(switch_name, port_id)}{instance}_{direction}"


def null_ring(switch_name: str) -> str:
    """A ring nothing ever writes: the padding input ports read it."""
    return f"{switch_name[:16]}_null"


def cpu_ring_prefix(switch_name: str) -> str:
    return f"{switch_name[:16]}_cpu"


def default_dpdk_include() -> str:
    env = os.environ.get("BSW_DPDK_INCLUDE")
    if env:
        return env
    return str(Path(__file__).resolve().parent.parent / "build" / "dpdk-src" / "lib" / "pipeline")


def load(path: str | Path) -> SwitchConfig:
    raw = yaml.safe_load(Path(path).read_text()) or {}
    return from_dict(raw)


def _known_keys(cls, raw: dict, where: str) -> dict:
    """raw, refusing any key the dataclass does not have (by name)."""
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: expected a mapping, got {type(raw).__name__}")
    unknown = sorted(set(raw) - {f.name for f in fields(cls)})
    if unknown:
        raise ConfigError(f"{where}: unknown key{'s' if len(unknown) > 1 else ''} {', '.join(unknown)}")
    return raw


def from_dict(raw: dict) -> SwitchConfig:
    raw = dict(_known_keys(SwitchConfig, raw, "switch config"))
    ports = []
    for i, p in enumerate(raw.pop("ports", None) or []):
        p = _known_keys(PortConfig, p, f"ports[{i}]")
        if "id" not in p or "type" not in p:
            raise ConfigError(f"ports[{i}]: id and type are required")
        ports.append(PortConfig(**p))
    cfg = SwitchConfig(ports=ports, **raw)
    if not cfg.dpdk_include:
        cfg.dpdk_include = default_dpdk_include()
    cfg.validate()
    return cfg
