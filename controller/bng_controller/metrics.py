"""Prometheus metrics of the controller.

Scrapes run in prometheus_client's HTTP thread, so the collector reads a
snapshot that the controller's event loop hands over
(`BngController.stats_snapshot()` through call_soon_threadsafe), never the
loop's live dictionaries.
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import re
from typing import TYPE_CHECKING

from prometheus_client import start_http_server
from prometheus_client.core import REGISTRY, CounterMetricFamily, GaugeMetricFamily, Metric

if TYPE_CHECKING:
    from .controller import BngController


def setup_summary(s: dict) -> Metric:
    """Setup time (PADR to up) as a Prometheus summary: quantiles of the
    recent sessions (the session manager keeps the last ones), count and
    sum of all of them, so that rate(_sum) / rate(_count) gives the mean
    over any window. A gauge with a quantile label was not a summary to
    Prometheus, and had neither."""
    m = Metric("bng_session_setup_seconds", "Setup time (PADR to up): quantiles of recent sessions", "summary")
    xs = sorted(s["setup_times"])
    if xs:
        for q in (0.5, 0.95, 0.99):
            m.add_sample("bng_session_setup_seconds", {"quantile": str(q)}, xs[min(len(xs) - 1, int(q * len(xs)))])
    m.add_sample("bng_session_setup_seconds_count", {}, s["setups_total"])
    m.add_sample("bng_session_setup_seconds_sum", {}, s["setup_seconds_sum"])
    return m


class BngCollector:
    def __init__(self, ctl: "BngController", loop: asyncio.AbstractEventLoop):
        self.ctl = ctl
        self.loop = loop

    def describe(self):
        """Nothing to check up front: without this, register() would call
        collect() on the event loop's own thread, which then waits on
        itself for the snapshot."""
        return []

    def _snapshot(self) -> dict:
        fut: concurrent.futures.Future = concurrent.futures.Future()

        def take():
            try:
                fut.set_result(self.ctl.stats_snapshot())
            except Exception as e:
                fut.set_exception(e)
        self.loop.call_soon_threadsafe(take)
        return fut.result(timeout=5)

    def collect(self):
        s = self._snapshot()
        g = GaugeMetricFamily("bng_sessions", "Subscriber sessions by state", labels=["state"])
        for state, n in s["sessions"].items():
            g.add_metric([state], n)
        yield g
        yield CounterMetricFamily("bng_session_setups", "Sessions that reached the up state",
                                  value=s["setups_total"])
        yield setup_summary(s)
        ev = CounterMetricFamily("bng_events", "Protocol events and errors, by kind", labels=["event"])
        for name, n in _event_labels(s["events"]).items():
            ev.add_metric([name], n)
        yield ev
        pi = CounterMetricFamily("bng_packet_in", "Packets punted to the controller, by reason",
                                 labels=["reason"])
        for name, n in s["packet_in"].items():
            pi.add_metric([name], n)
        yield pi
        yield CounterMetricFamily("bng_packet_out", "Packets the controller injected", value=s["packet_out"])
        yield GaugeMetricFamily("bng_switch_connected", "1 when the P4Runtime stream is up",
                                value=1 if s["connected"] else 0)
        pools = GaugeMetricFamily("bng_pool_addresses", "IPv4 pool addresses", labels=["pool", "state"])
        for name, (used, free) in s["pools"].items():
            pools.add_metric([name, "used"], used)
            pools.add_metric([name, "free"], free)
        yield pools
        dp = CounterMetricFamily("bng_dataplane_packets", "Data plane drops and punts by reason",
                                 labels=["kind", "reason"])
        for kind, reasons in s["dataplane"].items():
            for reason, c in reasons.items():
                dp.add_metric([kind, reason], c["packets"])
        yield dp
        w = s["writer"]
        yield CounterMetricFamily("bng_p4runtime_write_rpcs", "Write RPCs sent to the switch", value=w["rpcs"])
        yield CounterMetricFamily("bng_p4runtime_updates", "Table/meter/counter updates written",
                                  value=w["updates"])
        yield CounterMetricFamily("bng_p4runtime_update_errors", "Updates the switch refused", value=w["errors"])
        if s["l2tp"]:
            l2 = dict(s["l2tp"])
            for name in _L2TP_GAUGES:
                yield GaugeMetricFamily(f"bng_l2tp_{name}", f"L2TP {name.replace('_', ' ')} now",
                                        value=l2.pop(name, 0))
            le = CounterMetricFamily("bng_l2tp_events", "L2TP events and errors, by kind", labels=["event"])
            for name, n in _event_labels({k: v for k, v in l2.items() if isinstance(v, (int, float))}).items():
                le.add_metric([name], n)
            yield le


_L2TP_GAUGES = ("tunnels", "tunnels_up", "sessions")
_NUMBER = re.compile(r"\d+")
MAX_EVENT_LABELS = 400


def _event_labels(counts: dict[str, int]) -> dict[str, int]:
    """Event counts under labels of bounded number: the controller's event
    names carry numbers (a line id, a peer's AVP), one series each would
    grow without bound, so numbers become N and the counts add up; past
    MAX_EVENT_LABELS distinct names the rest count as "other". The API's
    counters keep the names whole."""
    out: dict[str, int] = {}
    for name, n in counts.items():
        label = _NUMBER.sub("N", name)
        if label not in out and len(out) >= MAX_EVENT_LABELS:
            label = "other"
        out[label] = out.get(label, 0) + n
    return out


def start_metrics(ctl: "BngController", listen: str) -> None:
    host, port = listen.rsplit(":", 1)
    REGISTRY.register(BngCollector(ctl, asyncio.get_running_loop()))
    start_http_server(int(port), addr=host)
