"""Switch config: I/O spec generation and the errors an operator sees."""
import pytest

from bng_switch.pipeline_map import ControllerHeader
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
    assert "--no-huge" in cfg.eal_argv() and "-l" in cfg.eal_argv()


def test_libpcap_port_is_one_queue_pair_on_an_interface():
    cfg = from_dict({"ports": [{"id": 1, "type": "libpcap", "iface": "veth0"}]})
    assert cfg.ports[0].devargs(1) == "net_pcap_veth0,iface=veth0"
    assert "port in 1 ethdev net_pcap_veth0 rxq 0 bsz 32" in cfg.iospec(0)


@pytest.mark.parametrize("raw,words", [
    ({"ports": [{"id": 2, "type": "af_packet", "iface": "x"}]}, "without holes"),
    ({"ports": [{"id": 1, "type": "bogus"}]}, "not one of"),
    ({"ports": [{"id": 1, "type": "af_packet"}]}, "needs iface"),
    ({"colour": "red"}, "unknown switch config key"),
    ({"pipeline_mode": "fast"}, "pipeline_mode"),
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
