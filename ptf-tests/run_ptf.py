#!/usr/bin/env python3
"""Run the BNG PTF suite: veth pairs, the switch with the compiled bng
program, the standard `ptf` runner on the far ends. Needs root.

    .venv/bin/python ptf-tests/run_ptf.py [ptf test names...]

Ports: switch port N <-> veth swN<tag> | ptfN<tag> <- PTF port N (N = 1..4);
port 0 is the CPU port (PacketIn/PacketOut over P4Runtime).
"""
from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bng_controller.p4runtime_client import P4RuntimeClient  # noqa: E402
from bng_lab import netlab  # noqa: E402
from bng_lab.switch_process import BUILD, SwitchProcess  # noqa: E402

N_PORTS = 4


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("tests", nargs="*", help="PTF test names (module.Class); default: all")
    ap.add_argument("--pipeline-mode", default="compiled", choices=("compiled", "interpreted"))
    ap.add_argument("--execution", default="swx", choices=("swx", "straight"),
                    help="how the switch runs the program (its config key execution)")
    args = ap.parse_args()
    build = BUILD / "bng"
    if not (build / "bng.device_config.json").exists():
        print("p4src/build/bng has no compiled outputs; run `make p4`")
        return 1
    lab = netlab.NetLab()
    sw = None
    tmp: Path | None = None
    rc = 1
    try:
        ports, ifaces = [], []
        for n in range(1, N_PORTS + 1):
            a, b = lab.veth(f"sw{n}", f"ptf{n}", mtu=9000)
            # libpcap, not af_packet: the QinQ tests need the s-tag's TPID
            ports.append({"id": n, "type": "libpcap", "iface": a})
            ifaces += ["--interface", f"{n}@{b}"]
        tmp = Path(tempfile.mkdtemp(prefix="bng-ptf-"))
        sw = SwitchProcess(tmp, f"ptf{lab.tag}", ports, pipeline_mode=args.pipeline_mode,
                           execution=args.execution).start()
        c = P4RuntimeClient(sw.address, election_id=(0, 1))
        c.connect()
        c.set_pipeline(P4RuntimeClient.load_p4info(str(build / "bng.p4info.txtpb")),
                       (build / "bng.device_config.json").read_bytes())
        c.close()
        if args.execution == "straight" and "runs as straight-line code" not in sw.log():
            print(sw.log()[-3000:])
            print("the switch did not run the program as straight-line code")
            return 1
        params = f"grpc_addr='{sw.address}';build_dir='{build}'"
        cmd = [str(Path(sys.executable).parent / "ptf"), "--test-dir", str(ROOT / "ptf-tests"),
               "--test-params", params, "--log-file", str(tmp / "ptf.log"),
               *ifaces, *args.tests]
        print(" ".join(cmd), flush=True)
        rc = subprocess.run(cmd, cwd=tmp).returncode
    finally:
        if sw is not None:
            sw_rc = sw.stop()
            if sw_rc != 0:
                print(sw.log()[-3000:])
                print(f"switch exited with {sw_rc}")
                rc = rc or 1
        lab.cleanup()
        if tmp is not None:
            if rc == 0:
                shutil.rmtree(tmp, ignore_errors=True)
            else:
                print(f"PTF log and switch work directory kept in {tmp}")
    return rc


if __name__ == "__main__":
    sys.exit(main())
