import pytest

from bng_lab import netlab


def pytest_collection_modifyitems(config, items):
    """Tests marked `root` need root and network namespaces: skip them, with
    the reason, where those are missing (CI runs as root and has them)."""
    if netlab.have_root_and_netns():
        return
    skip = pytest.mark.skip(reason="needs root and network namespaces (run `make test` as root)")
    for item in items:
        if "root" in item.keywords:
            item.add_marker(skip)
