# The P4 BNG. Everything runs as root on Debian 12 (apt, namespaces, veth).
#   make lab     install, build, start the embedded default lab (Ctrl-C stops it)
#   make test    install, build, run every test
SHELL := /bin/bash
PY := .venv/bin/python

.PHONY: setup lab test unit-test p4 p4-check switch emulator bench bench-tables bench-dataplane bench-bng bench-ab bench-path bench-profile bench-setup bench-l2tp clean

setup:
	bash scripts/setup.sh

lab: setup
	$(PY) scripts/lab.py $(LAB_ARGS)

test: setup
	$(PY) -m pytest -ra tests

unit-test: setup
	$(PY) -m pytest -ra tests -m "not root"

# Compile the P4 programs of p4src/programs.yaml (all, or P4_PROGRAMS=...) with
# p4c-dpdk / p4c-barefoot (built outside this repo, see README) and refresh
# p4src/build/ and its source stamps.
p4:
	$(PY) scripts/p4build.py $(P4_PROGRAMS)

p4-check:
	$(PY) scripts/p4build.py --check $(P4_PROGRAMS)

switch: setup
	make -s -C targets/dpdk

emulator:
	make -s -C emulator

# every benchmark, one report (JSON, Markdown, PNG plots) under bench/results/
# (BENCH_ARGS="--quick", or "--workers 1,2,4,8" on a bigger machine; see bench/report.py --help)
bench: setup
	$(PY) bench/report.py $(BENCH_ARGS)

bench-tables: setup
	$(PY) bench/bench_tables.py

bench-dataplane: setup
	$(PY) bench/bench_dataplane.py
	$(PY) bench/bench_bng.py --straight

# PPPoE session setup rate up to 40k sessions (BENCH_SETUP_ARGS="--sessions 2000")
bench-setup: setup
	$(PY) bench/bench_setup.py $(BENCH_SETUP_ARGS)

# subscribers through our LAC and LNS over one tunnel (BENCH_L2TP_ARGS="--sessions 2000"),
# and the L2TP roles of the data plane against l2fwd
bench-l2tp: setup
	$(PY) bench/bench_setup.py --topology lac-lns $(BENCH_L2TP_ARGS)
	$(PY) bench/bench_bng.py --roles lac_up,lac_down,lns_up,lns_down

# the BNG program alone, by role (also part of bench-dataplane)
bench-bng: setup
	$(PY) bench/bench_bng.py --straight

# a switch compile option A/B, interleaved in one process (BENCH_AB_ARGS="--env BSW_SWX_GROUP_CHAIN=1,0")
bench-ab: setup
	$(PY) bench/bench_ab.py $(BENCH_AB_ARGS)

# SWX instructions per packet by role (DPDK's trace), a figure the VM's noise does not move
bench-path: setup
	$(PY) bench/bench_path_length.py $(BENCH_PATH_ARGS)

# ns per packet by part of the data path (perf), by role beside p4_l2fwd (BENCH_PROFILE_ARGS="--roles pppoe_up")
bench-profile: setup
	command -v perf >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq linux-perf
	$(PY) bench/bench_profile.py $(BENCH_PROFILE_ARGS)

clean:
	make -C targets/dpdk clean
	make -C emulator clean
