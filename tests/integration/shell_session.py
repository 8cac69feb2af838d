"""Drives p4runtime-shell (the PyPI package, unmodified) against the switch.

Run with the shell's own venv (.venv-shell), as a user would:
    python shell_session.py ADDRESS P4INFO DEVICE_CONFIG
Prints one line per check; the pytest test reads them.
"""
import os
import sys
import traceback

import p4runtime_sh.shell as sh
from p4runtime_sh.context import P4Type

addr, p4info, device_config = sys.argv[1:4]
status = 0
try:
    sh.setup(device_id=1, grpc_addr=addr, election_id=(0, 1),
             config=sh.FwdPipeConfig(p4info, device_config))
    tables = sorted(name for name, _ in sh.context.get_objs(P4Type.table))
    print("TABLES", " ".join(tables))

    te = sh.TableEntry("MainControlImpl.l2_fwd")(action="MainControlImpl.forward")
    te.match["dst_addr"] = "02:00:00:00:00:42"
    te.action["port"] = "2"
    te.insert()
    for e in sh.TableEntry("MainControlImpl.l2_fwd").read():
        print("ENTRY", e.match["dst_addr"].exact.value.hex(), e.action["port"].value.hex())

    c = sh.CounterEntry("MainControlImpl.port_rx")
    c.index = 1
    for x in c.read():
        m = x.msg()
        print("COUNTER", m.index.index, m.data.packet_count, m.data.byte_count)
    hp = sh.TableEntry("MainControlImpl.host_policy")(action="MainControlImpl.police_host")
    hp.match["src_addr"] = "02:00:00:00:00:43"
    hp.insert()
    dc = sh.DirectCounterEntry("MainControlImpl.host_traffic")
    dc.table_entry.match["src_addr"] = "02:00:00:00:00:43"
    for x in dc.read():
        m = x.msg()
        print("DIRECT", m.table_entry.match[0].exact.value.hex(), m.data.packet_count, m.data.byte_count)
    hp.delete()
    te.delete()
    print("LEFT", len(list(sh.TableEntry("MainControlImpl.l2_fwd").read())))
except Exception:
    traceback.print_exc()
    status = 1
finally:
    sh.teardown()
    sys.stdout.flush()
    # the shell's stream thread is not a daemon: do not wait for it
    os._exit(status)
