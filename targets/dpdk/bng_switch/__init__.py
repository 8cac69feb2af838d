"""The BNG switch: DPDK SWX pipeline (libbsw, C) driven by a P4Runtime server."""
