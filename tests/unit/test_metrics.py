"""The Prometheus collector (metrics.py) renders a controller snapshot into
valid metric families: L2TP event counts were gauges named after their
free-text names (`bng_l2tp_tunnel_down:_result_2__by_peer_`, which a strict
scrape refuses, losing every metric), and event names that carry numbers
(a line id, a peer's AVP) made one series each, without bound."""
from __future__ import annotations

import re

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from bng_controller import metrics
from bng_controller.metrics import BngCollector


def snapshot(l2tp: dict) -> dict:
    return {"sessions": {"up": 3}, "setups_total": 3, "setup_times": [0.1, 0.2], "setup_seconds_sum": 0.6,
            "packet_in": {"ARP": 2},
            "events": {"line 17 has no free PPPoE session id": 2, "line 18 has no free PPPoE session id": 1,
                       "pppoe PADT received": 4},
            "packet_out": 9, "connected": True, "pools": {"default": (3, 5)},
            "dataplane": {"drop": {"NO_SESSION": {"packets": 1}}},
            "writer": {"rpcs": 1, "updates": 2, "errors": 0}, "l2tp": l2tp}


def scrape(snap: dict) -> dict:
    collector = BngCollector.__new__(BngCollector)
    collector._snapshot = lambda: snap
    registry = CollectorRegistry()
    registry.register(collector)
    text = generate_latest(registry).decode()
    for line in text.splitlines():
        if not line.startswith("#"):
            assert re.match(r"^[a-zA-Z_][a-zA-Z0-9_]*(\{.*\})? ", line), line
    return {f.name: f for f in text_string_to_metric_families(text)}


def test_l2tp_gauges_and_events():
    fams = scrape(snapshot({"tunnels": 2, "tunnels_up": 1, "sessions": 7, "endpoint hello sent": 5,
                            "tunnel down: result 2 (by peer)": 1, "tunnel down: result 4 (by peer)": 2}))
    assert fams["bng_l2tp_tunnels"].type == "gauge" and fams["bng_l2tp_tunnels"].samples[0].value == 2
    assert fams["bng_l2tp_sessions"].samples[0].value == 7
    events = {s.labels["event"]: s.value for s in fams["bng_l2tp_events"].samples if s.name.endswith("_total")}
    assert fams["bng_l2tp_events"].type == "counter"
    assert events == {"endpoint hello sent": 5, "tunnel down: result N (by peer)": 3}


def test_event_labels_are_bounded():
    fams = scrape(snapshot({}))
    events = {s.labels["event"]: s.value for s in fams["bng_events"].samples if s.name.endswith("_total")}
    assert events == {"line N has no free PPPoE session id": 3, "pppoe PADT received": 4}
    assert "bng_l2tp_events" not in fams
    many = metrics._event_labels({f"reason{'x' * i}": 1 for i in range(metrics.MAX_EVENT_LABELS + 50)})
    assert len(many) == metrics.MAX_EVENT_LABELS + 1 and many["other"] == 50


def test_setup_time_is_a_summary_with_count_and_sum():
    fams = scrape(snapshot({}))
    f = fams["bng_session_setup_seconds"]
    assert f.type == "summary"
    samples = {(x.name, x.labels.get("quantile")): x.value for x in f.samples}
    assert samples[("bng_session_setup_seconds_count", None)] == 3
    assert samples[("bng_session_setup_seconds_sum", None)] == 0.6
    assert samples[("bng_session_setup_seconds", "0.5")] == 0.2
