"""bng-switch: the DPDK SWX switch with its P4Runtime server.

    python -m bng_switch --config configs/switch/example.yaml
"""
from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
import time

from . import switch_config
from .device import Device, prepare
from .p4runtime_service import serve


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="bng-switch", description=__doc__.splitlines()[0])
    ap.add_argument("--config", required=True, help="switch YAML config")
    ap.add_argument("--grpc", help="override the gRPC listen address")
    ap.add_argument("--p4info", help="load this P4Info (text) at start, with --device-config")
    ap.add_argument("--device-config", help="device config bundle (or .spec) to load at start")
    ap.add_argument("--log-level", default="INFO")
    ap.add_argument("--stats-interval", type=float, default=0, help="log port counters every N seconds")
    args = ap.parse_args(argv)
    logging.basicConfig(level=args.log_level, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    log = logging.getLogger("bng_switch")

    cfg = switch_config.load(args.config)
    if args.grpc:
        cfg.grpc_address = args.grpc
    device = Device(cfg)
    device.start()
    if args.p4info and args.device_config:
        from google.protobuf import text_format
        from p4.config.v1 import p4info_pb2
        p4info = text_format.Parse(open(args.p4info).read(), p4info_pb2.P4Info())
        device.commit(prepare(p4info, open(args.device_config, "rb").read()))
        log.info("pipeline loaded from %s", args.device_config)
    server, service = serve(device, cfg.grpc_address)
    log.info("P4Runtime server on %s, device id %d", cfg.grpc_address, cfg.device_id)
    print(f"bng-switch ready on {cfg.grpc_address}", flush=True)

    done = threading.Event()
    if args.stats_interval:
        threading.Thread(target=log_port_stats, args=(device, args.stats_interval, done), daemon=True).start()
    # The handler only records the signal; the main thread sets `done`. A
    # handler that sets a threading.Event can deadlock on the Event's lock
    # when it runs while the main thread is inside Event.wait().
    stop_signals: list[int] = []
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda signum, _frame: stop_signals.append(signum))
    while not stop_signals:
        time.sleep(0.2)
    done.set()
    log.info("stopping: closing P4Runtime, flushing ports")
    service.stop()
    server.stop(grace=1).wait()
    device.shutdown()
    return 0


def log_port_stats(device: Device, interval: float, done: threading.Event) -> None:
    log = logging.getLogger("bng_switch.stats")
    while not done.wait(interval):
        p = device.pipeline
        if p is None:
            continue
        ports = [c.id for c in device.config.all_ports()]
        log.info("ports: %s", "; ".join(
            f"{i}: rx {s['rx_pkts']} tx {s['tx_pkts']} drop {s['tx_drops']}"
            for i, s in ((i, p.port_stats(i)) for i in sorted(ports))))
        if device.config.packet_socket:
            log.info("packet channel: %s", ", ".join(f"{k} {v}" for k, v in device.packet_channel_stats().items()))
        for pid, d in device.distributor_stats().items():
            log.info("port %d distributor: rx %d (dropped %d) per worker %s, tx %d (dropped %d)", pid, d["rx"],
                     d["rx_dropped"], d["to_instance"], d["tx"], d["tx_dropped"])


if __name__ == "__main__":
    sys.exit(main())
