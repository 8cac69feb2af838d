"""The switch refuses specs that DPDK 22.11 would build but run wrongly."""
import pytest

from bng_switch import swx_spec


def spec_with_metadata(n_fields: int) -> str:
    fields = "\n".join(f"\tbit<32> f{i}" for i in range(n_fields))
    return (f"struct m_t {{\n{fields}\n}}\nmetadata instanceof m_t\n"
            "struct h_t {\n\tbit<16> a\n}\nheader h instanceof h_t\napply {\n\trx m.f0\n\ttx m.f0\n}\n")


def test_metadata_within_reach_is_accepted():
    spec = swx_spec.parse(spec_with_metadata(64))          # 256 bytes
    assert spec.metadata_struct == "m_t" and spec.headers == {"h": "h_t"}
    spec.check_limits()


def test_metadata_beyond_256_bytes_is_refused_with_the_reason():
    spec = swx_spec.parse(spec_with_metadata(65))          # 260 bytes
    with pytest.raises(swx_spec.SpecError, match=r"metadata \(struct m_t\) is 260 bytes.*256"):
        spec.check_limits()
