"""bng_lab: the BNG in network namespaces — hosts, veth links, the switch,
the controller and emulated subscribers as processes. The lab command
(`make lab`), the end-to-end tests, the PTF runner and the benchmarks all
build their topologies from these pieces."""
