"""bngctl: the operator's view of a running BNG controller.

    bngctl show sessions [--user U] [--ip A] [--mac M] [--state S]
    bngctl show session ID
    bngctl show counters | pools | status
    bngctl show l2tp tunnels | sessions
    bngctl clear session ID | --user U | --ip A | --mac M | --all
    bngctl clear l2tp tunnel ID | session ID
    bngctl shutdown [--keep-sessions]

--json prints the API's answer as it is; the default is a table.
"""
from __future__ import annotations

import argparse
import json
import os
import socket
import sys

DEFAULT_SOCKET = "/run/bng-controller/api.sock"


class ApiClient:
    def __init__(self, path: str, timeout: float = 30.0):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        self.sock.connect(path)
        self.file = self.sock.makefile("rwb")

    def call(self, cmd: str, **args) -> dict:
        self.file.write(json.dumps({"cmd": cmd, **args}).encode() + b"\n")
        self.file.flush()
        line = self.file.readline()
        if not line:
            raise ConnectionError("the controller closed the connection")
        return json.loads(line)

    def close(self) -> None:
        self.file.close()
        self.sock.close()


def _fmt_uptime(s) -> str:
    if s is None:
        return "-"
    s = int(s)
    return f"{s // 86400}d{s % 86400 // 3600:02d}h" if s >= 86400 else f"{s // 3600:02d}:{s % 3600 // 60:02d}:{s % 60:02d}"


def table(rows: list[dict], cols: list[tuple[str, str]]) -> str:
    cells = [[str(r.get(k) if r.get(k) is not None else "-") for k, _ in cols] for r in rows]
    widths = [max([len(h)] + [len(c[i]) for c in cells]) for i, (_, h) in enumerate(cols)]
    lines = ["  ".join(h.ljust(w) for (_, h), w in zip(cols, widths))]
    lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths)) for row in cells]
    return "\n".join(lines)


def print_sessions(resp: dict) -> None:
    rows = resp["sessions"]
    for r in rows:
        r["uptime"] = _fmt_uptime(r.get("uptime"))
        r["vlan"] = f"{r.get('s_vid', 0)}.{r.get('c_vid', 0)}" if "s_vid" in r else "-"
    print(table(rows, [("id", "ID"), ("state", "STATE"), ("user", "USER"), ("ipv4", "IPV4"),
                       ("ipv6_prefix", "IPV6"), ("client_mac", "MAC"), ("port", "PORT"), ("vlan", "VLAN"),
                       ("pppoe_session_id", "SID"), ("uptime", "UPTIME")]))
    total = resp.get("total", len(rows))
    print(f"{len(rows)} session(s)" + (f" of {total}" if total != len(rows) else ""))


def print_tree(d, indent: int = 0) -> None:
    for k, v in d.items():
        if isinstance(v, dict):
            print(" " * indent + f"{k}:")
            print_tree(v, indent + 2)
        else:
            print(" " * indent + f"{k}: {v}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="bngctl", description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--socket", default=DEFAULT_SOCKET)
    ap.add_argument("--json", action="store_true", help="print the raw JSON answer")
    sub = ap.add_subparsers(dest="verb", required=True)
    show = sub.add_parser("show")
    show.add_argument("what", choices=["sessions", "session", "counters", "pools", "status", "l2tp"])
    show.add_argument("arg", nargs="?")
    for p in (show,):
        p.add_argument("--user")
        p.add_argument("--ip")
        p.add_argument("--mac")
        p.add_argument("--state")
        p.add_argument("--offset", type=int, help="skip this many sessions (show sessions)")
        p.add_argument("--limit", type=int, help="show at most this many sessions")
    clear = sub.add_parser("clear")
    clear.add_argument("what", choices=["session", "l2tp"])
    clear.add_argument("arg", nargs="*")
    clear.add_argument("--user")
    clear.add_argument("--ip")
    clear.add_argument("--mac")
    clear.add_argument("--all", action="store_true")
    sd = sub.add_parser("shutdown")
    sd.add_argument("--keep-sessions", action="store_true",
                    help="leave sessions up for the next controller (upgrade)")
    args = ap.parse_args(argv)

    try:
        api = ApiClient(args.socket)
    except OSError as e:
        print(f"bngctl: cannot reach the controller at {args.socket}: {e}", file=sys.stderr)
        return 2
    try:
        if args.verb == "show":
            filt = {k: getattr(args, k) for k in ("user", "ip", "mac", "state") if getattr(args, k)}
            if args.what == "sessions":
                page = {k: getattr(args, k) for k in ("offset", "limit") if getattr(args, k) is not None}
                resp = api.call("sessions", **filt, **page)
            elif args.what == "session":
                if not args.arg:
                    ap.error("show session ID")
                resp = api.call("session", id=int(args.arg))
            elif args.what == "l2tp":
                if args.arg not in ("tunnels", "sessions"):
                    ap.error("show l2tp tunnels|sessions")
                resp = api.call(f"l2tp_{args.arg}")
            else:
                resp = api.call(args.what)
        elif args.verb == "clear":
            if args.what == "l2tp":
                if len(args.arg) != 2 or args.arg[0] not in ("tunnel", "session"):
                    ap.error("clear l2tp tunnel ID | session ID")
                resp = api.call("clear_tunnel" if args.arg[0] == "tunnel" else "clear_l2tp_session",
                                id=int(args.arg[1]))
            else:
                sel = {k: getattr(args, k) for k in ("user", "ip", "mac") if getattr(args, k)}
                if args.all:
                    sel["all"] = True
                if len(args.arg) > 1:
                    ap.error("clear session takes one ID")
                if args.arg:
                    sel["id"] = int(args.arg[0])
                if not sel:
                    ap.error("clear session ID | --user U | --ip A | --mac M | --all")
                resp = api.call("clear", **sel)
        else:
            resp = api.call("shutdown", keep_sessions=args.keep_sessions)
    except (OSError, ValueError) as e:
        print(f"bngctl: {e}", file=sys.stderr)
        return 2
    finally:
        api.close()
    if "error" in resp:
        print(f"bngctl: {resp['error']}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(resp, indent=2))
    elif args.verb == "show" and args.what == "sessions":
        print_sessions(resp)
    elif args.verb == "show" and args.what == "l2tp" and args.arg == "tunnels":
        print(table(resp["tunnels"], [("id", "ID"), ("peer", "PEER"), ("local_tunnel_id", "LOCAL-TID"),
                                      ("peer_tunnel_id", "PEER-TID"), ("state", "STATE"),
                                      ("sessions", "SESSIONS"), ("uptime", "UPTIME")]))
    elif args.verb == "show" and args.what == "l2tp":
        print(table(resp["sessions"], [("id", "ID"), ("tunnel", "TUNNEL"), ("local_session_id", "LOCAL-SID"),
                                       ("peer_session_id", "PEER-SID"), ("state", "STATE"), ("role", "ROLE"),
                                       ("user", "USER"), ("ipv4", "IPV4")]))
    else:
        print_tree(resp)
    return 0


def run() -> int:
    """main(), quiet when its reader goes away (`bngctl show sessions | head`)."""
    try:
        return main()
    except BrokenPipeError:
        # stdout is gone: point it at /dev/null so the interpreter's own
        # flush at exit does not raise again
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(run())
