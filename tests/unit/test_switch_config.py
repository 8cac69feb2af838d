"""Switch config: I/O spec generation and the errors an operator sees."""
import pytest

from bng_switch.pipeline_map import ControllerHeader
from bng_switch import switch_config
from bng_switch.switch_config import ConfigError, from_dict


def test_iospec_per_instance_with_cpu_ring_and_pcap():
    cfg = from_dict({"name": "sw", "workers": 2, "ports": [
        {"id": 1, "type": "af_packet", "iface": "veth0"},
        {"id": 2, "type": "pcap", "rx_pcap": "/tmp/a.pcap"}]})
    io1 = cfg.iospec(1).splitlines()
    assert "port in 0 ring sw_cpu1_out bsz 1" in io1
    assert "port out 0 ring sw_cpu1_in bsz 1" in io1
    assert "port in 1 ethdev net_af_packet_veth0 rxq 1 bsz 32" in io1
    assert "port out 2 sink file none" in io1
    assert cfg.ports[0].devargs(2) == "net_af_packet_veth0,iface=veth0,qpairs=2,qdisc_bypass=1"
    argv = cfg.eal_argv()
    assert "--no-huge" in argv and "--lcores" in argv


def test_libpcap_port_is_one_queue_pair_on_an_interface():
    cfg = from_dict({"ports": [{"id": 1, "type": "libpcap", "iface": "veth0"}]})
    assert cfg.ports[0].devargs(1) == "net_pcap_veth0,iface=veth0"
    assert "port in 1 ethdev net_pcap_veth0 rxq 0 bsz 32" in cfg.iospec(0)


@pytest.mark.parametrize("raw,words", [
    ({"ports": [{"id": 2, "type": "af_packet", "iface": "x"}]}, "without holes"),
    ({"ports": [{"id": 1, "type": "bogus"}]}, "not one of"),
    ({"ports": [{"id": 1, "type": "af_packet"}]}, "needs iface"),
    ({"colour": "red"}, "switch config: unknown key colour"),
    ({"pipeline_mode": "fast"}, "pipeline_mode"),
    ({"table_lookup": "hashed"}, "table_lookup"),
    ({"execution": "fast"}, "execution .fast.: swx or straight"),
    ({"workers": 2, "ports": [{"id": 1, "type": "libpcap", "iface": "x"}]}, "one worker"),
])
def test_config_errors(raw, words):
    with pytest.raises(ConfigError, match=words):
        from_dict(raw)


def test_controller_header_round_trip_with_odd_widths():
    h = ControllerHeader("packet_in", [(1, "port", 9), (2, "reason", 7), (3, "x", 16)])
    data = h.encode({1: 300, 2: 5, 3: 0xBEEF})
    assert len(data) == 4
    assert dict(h.decode(data + b"payload")) == {1: 300, 2: 5, 3: 0xBEEF}


def test_distributed_port_is_a_ring_pair_per_instance_on_one_queue():
    cfg = switch_config.from_dict({"name": "sw", "workers": 2, "ports": [
        {"id": 1, "type": "libpcap", "iface": "acc0", "distribute": True},
        {"id": 2, "type": "af_packet", "iface": "core0"}]})
    acc, core = cfg.ports
    assert acc.queues(2) == 1 and core.queues(2) == 2
    for k in (0, 1):
        io = cfg.iospec(k)
        assert f"port in 1 ring sw_d1_{k}_rx bsz 32" in io and f"port out 1 ring sw_d1_{k}_tx bsz 32" in io
        assert f"port in 2 ethdev net_af_packet_core0 rxq {k} bsz 32" in io


def test_lcores_beyond_the_cpus_are_mapped_round_robin(monkeypatch):
    monkeypatch.setattr(switch_config.os, "sched_getaffinity", lambda pid: {0, 1})
    argv = switch_config.from_dict({"name": "sw", "workers": 3, "ports": []}).eal_argv()
    assert argv[argv.index("--lcores") + 1] == "0@0,1@1,2@0,3@1"
    argv = switch_config.from_dict({"name": "sw", "workers": 1, "ports": []}).eal_argv()
    assert argv[argv.index("--lcores") + 1] == "0@0,1@1"


def test_cpus_place_the_lcores_and_must_be_usable(monkeypatch):
    monkeypatch.setattr(switch_config.os, "sched_getaffinity", lambda pid: {0, 1, 2, 3})
    argv = switch_config.from_dict({"name": "sw", "workers": 2, "cpus": [2, 3], "ports": []}).eal_argv()
    assert argv[argv.index("--lcores") + 1] == "0@2,1@3,2@2"
    argv = switch_config.from_dict({"name": "sw", "workers": 1, "cpus": [0], "ports": []}).eal_argv()
    assert argv[argv.index("--lcores") + 1] == "0@0,1@0"
    with pytest.raises(switch_config.ConfigError, match=r"cpus \[5\] are not among"):
        switch_config.from_dict({"name": "sw", "workers": 1, "cpus": [3, 5], "ports": []})
    with pytest.raises(switch_config.ConfigError, match="with eal_args"):
        switch_config.from_dict({"name": "sw", "cpus": [0], "eal_args": ["-l", "0-1"], "ports": []})


def test_eal_memory_holds_two_pipelines_per_worker(monkeypatch):
    """Without hugepages the EAL gets the mbufs' memory plus, per worker,
    room for the running pipeline and the one a new program builds beside it
    (tests/integration/test_switch_memory.py builds them); eal_memory_mb
    overrides that, and only where the size is fixed."""
    monkeypatch.setattr(switch_config.os, "sched_getaffinity", lambda pid: {0, 1})
    for workers in (1, 4, 8):
        argv = switch_config.from_dict({"name": "sw", "workers": workers, "ports": []}).eal_argv()
        assert int(argv[argv.index("-m") + 1]) == 512 + 2 * switch_config.PIPELINE_INSTANCE_MB * workers
    argv = switch_config.from_dict({"name": "sw", "workers": 8, "ports": [], "eal_memory_mb": 900}).eal_argv()
    assert int(argv[argv.index("-m") + 1]) == 900
    with pytest.raises(ConfigError, match="only without hugepages"):
        switch_config.from_dict({"name": "sw", "ports": [], "hugepages": True, "eal_memory_mb": 900})
    with pytest.raises(ConfigError, match="a size in MB"):
        switch_config.from_dict({"name": "sw", "ports": [], "eal_memory_mb": -1})


def test_undistributed_libpcap_with_workers_and_distributed_pcap_are_refused():
    with pytest.raises(switch_config.ConfigError, match="distribute: true"):
        switch_config.from_dict({"name": "sw", "workers": 2,
                                 "ports": [{"id": 1, "type": "libpcap", "iface": "a"}]})
    with pytest.raises(switch_config.ConfigError, match="cannot be distributed"):
        switch_config.from_dict({"name": "sw", "workers": 2,
                                 "ports": [{"id": 1, "type": "pcap", "rx_pcap": "x.pcap", "distribute": True}]})


def test_unknown_keys_are_named():
    with pytest.raises(ConfigError, match=r"ports\[1\]: unknown key ifname"):
        from_dict({"name": "sw", "ports": [{"id": 1, "type": "af_packet", "iface": "a"},
                                           {"id": 2, "type": "af_packet", "ifname": "b"}]})
    with pytest.raises(ConfigError, match="switch config: unknown keys threads, wokers"):
        from_dict({"name": "sw", "wokers": 2, "threads": 1, "ports": []})
    with pytest.raises(ConfigError, match=r"ports\[0\]: id and type are required"):
        from_dict({"name": "sw", "ports": [{"iface": "a"}]})
