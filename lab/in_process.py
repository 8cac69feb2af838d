"""Pipelines built in this process, without the switch daemon: what the
benchmarks and the table-commit test need. DPDK's EAL can be set up once per
process, so callers run in a child process of their own."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from google.protobuf import text_format
from p4.config.v1 import p4info_pb2

from bng_lab.switch_process import program_files
from bng_switch import libbsw, switch_config, swx_spec
from bng_switch.device import create_rings, decode_device_config
from bng_switch.pipeline_map import PipelineMap


def start_eal(cfg: switch_config.SwitchConfig) -> libbsw.Library:
    """libbsw with the EAL, the mempool and the rings cfg's I/O specs name
    (what Device.start does, less the ethdev ports: use pcap ports)."""
    lib = libbsw.Library()
    lib.eal_init(cfg.eal_argv())
    lib.mempool_create(switch_config.MEMPOOL, cfg.mempool_mbufs)
    create_rings(lib, cfg)
    return lib


@dataclass
class Program:
    """A compiled program of p4src/build, its spec written where
    pipeline_build can read it."""
    spec_path: Path
    build_dir: Path                  # p4src/build/<name>: the program's other outputs
    spec_text: str
    context: dict | None
    p4info: p4info_pb2.P4Info

    def pipeline_map(self) -> PipelineMap:
        return PipelineMap(self.p4info, swx_spec.parse(self.spec_text), self.context)


def load_program(name: str, work: Path, spec_name: str = "p.spec", build: Path | None = None) -> Program:
    """build: a directory laid out as p4src/build (default p4src/build)."""
    p4info_path, dc = program_files(name) if build is None else program_files(name, build)
    spec_text, context = decode_device_config(dc.read_bytes())
    spec_path = Path(work) / spec_name
    spec_path.write_text(spec_text)
    return Program(spec_path, p4info_path.parent, spec_text, context,
                   text_format.Parse(p4info_path.read_text(), p4info_pb2.P4Info()))
