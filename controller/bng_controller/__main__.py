"""bng-controller: python -m bng_controller --config configs/controller/pppoe.yaml

Signals: SIGTERM/SIGINT stop the controller (sessions are terminated with
LCP Terminate-Request and PADT, or kept for the next controller when
`sessions.shutdown: keep`); SIGHUP reloads the local subscriber file.
A crash or SIGKILL keeps every session: the next start takes them over.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import signal
import sys
from logging.handlers import QueueListener

from . import log_output


class JsonFormatter(logging.Formatter):
    """One JSON object per line, for log shippers."""

    def format(self, record: logging.LogRecord) -> str:
        d = {"ts": round(record.created, 3), "level": record.levelname.lower(), "logger": record.name,
             "msg": record.getMessage()}
        if record.exc_info:
            d["exc"] = self.formatException(record.exc_info)
        elif record.exc_text:                 # formatted before it crossed the log queue
            d["exc"] = record.exc_text
        return json.dumps(d)


_log_listener: QueueListener | None = None


def setup_logging(level: str, fmt: str) -> None:
    """stdout, written by a thread of its own (see log_output)."""
    global _log_listener
    h = logging.StreamHandler(sys.stdout)
    if fmt == "json":
        h.setFormatter(JsonFormatter())
    else:
        h.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    _, _log_listener = log_output.start(h, getattr(logging, level.upper()))


def pin_to(cpus: list[int]) -> None:
    """Every thread of the process onto cpus; threads started later inherit
    the affinity of the thread that starts them."""
    for tid in os.listdir("/proc/self/task"):
        try:
            os.sched_setaffinity(int(tid), cpus)
        except ProcessLookupError:             # a thread that has just ended
            pass


async def accounting_on_if_cold(aaa, store) -> bool:
    """Accounting-On (RFC 2866 status 7) tells the server that every
    session this NAS had open is gone, which is only true on a cold start:
    sessions in the store are taken over and go on (their Interims and
    Stops follow), so the server must keep them open. True if sent."""
    log = logging.getLogger("bng")
    restoring = store.count()
    if restoring:
        log.info("Accounting-On not sent: %d sessions to take over", restoring)
        return False
    if not hasattr(aaa, "accounting_on"):
        return False
    try:
        await aaa.accounting_on()
    except Exception as e:
        log.warning("Accounting-On: %s", e)
        return False
    return True


async def amain(args: argparse.Namespace) -> int:
    from . import config as config_mod
    from .aaa import make_backend
    from .api import ApiServer
    from .controller import BngController
    from .metrics import start_metrics

    cfg = config_mod.load(args.config)
    if args.state_dir:
        cfg.state_dir = args.state_dir
    if cfg.cpus:
        pin_to(cfg.cpus)
    setup_logging(args.log_level or cfg.log_level, cfg.log_format)
    log = logging.getLogger("bng")
    aaa = make_backend(cfg.aaa)
    ctl = BngController(cfg, aaa)
    if cfg.l2tp:
        from .l2tp.service import L2tpService
        ctl.l2tp = L2tpService(ctl, cfg.l2tp)
    stop = asyncio.Event()
    terminate = cfg.sessions.shutdown == "terminate"
    loop = asyncio.get_running_loop()

    def on_stop(*_):
        stop.set()

    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, on_stop)
    if hasattr(aaa, "reload"):
        def reload() -> None:
            try:
                aaa.reload()
            except Exception as e:          # a bad file keeps the previous contents in force
                log.error("reload of the subscriber file failed, previous contents kept: %s", e)
        loop.add_signal_handler(signal.SIGHUP, reload)

    api = ApiServer(ctl, cfg.api_socket, stop)
    await api.start()
    dynauth = None
    if cfg.dynauth.listen:
        from .aaa.dynauth import DynAuthServer
        dynauth = DynAuthServer.from_config(cfg.dynauth, ctl.sessions.dynauth)
        await dynauth.start()
    if cfg.metrics_listen:
        start_metrics(ctl, cfg.metrics_listen)
    await accounting_on_if_cold(aaa, ctl.store)
    log.info("bng-controller %s starting: switch %s, api %s, cpus %s", cfg.name, cfg.switch.address,
             cfg.api_socket, ",".join(map(str, sorted(os.sched_getaffinity(0)))))
    run = asyncio.create_task(ctl.run(stop))
    await stop.wait()
    keep = api.keep_sessions or not terminate
    log.info("stopping (%s sessions)", "keeping" if keep else "terminating")
    await ctl.shutdown(terminate=not keep)
    run.cancel()
    if dynauth is not None:
        await dynauth.stop()
    await api.stop()
    if not keep and hasattr(aaa, "accounting_off"):
        try:
            await aaa.accounting_off()
        except Exception as e:
            log.warning("Accounting-Off: %s", e)
    if hasattr(aaa, "flush"):
        await aaa.flush(5.0)
    await aaa.close()
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(prog="bng-controller", description=__doc__.splitlines()[0])
    ap.add_argument("--config", required=True, help="controller YAML (see configs/controller/)")
    ap.add_argument("--state-dir", help="override state_dir (session store, discovery secret)")
    ap.add_argument("--log-level", help="override log_level")
    args = ap.parse_args()
    try:
        return asyncio.run(amain(args))
    except KeyboardInterrupt:
        return 0
    finally:
        if _log_listener is not None:
            _log_listener.stop()              # what is still queued goes out


if __name__ == "__main__":
    sys.exit(main())
