# The P4 BNG. Everything runs as root on Debian 12 (apt, namespaces, veth).
#   make lab     install, build, start the embedded default lab (Ctrl-C stops it)
#   make test    install, build, run every test
SHELL := /bin/bash
PY := .venv/bin/python
P4C_DPDK ?= $(shell command -v p4c-dpdk 2>/dev/null)
P4_PROGRAMS := $(notdir $(patsubst %/,%,$(dir $(wildcard p4src/*/*.p4))))

.PHONY: setup lab test unit-test p4 p4-check switch bench bench-tables bench-dataplane clean

setup:
	bash scripts/setup.sh

lab: setup
	$(PY) scripts/lab.py $(LAB_ARGS)

test: setup
	$(PY) -m pytest -ra tests

unit-test: setup
	$(PY) -m pytest -ra tests -m "not root"

# Compile the P4 programs with p4c-dpdk (built outside this repo, see
# README) and refresh p4src/build/ and its source stamp.
p4:
	@test -n "$(P4C_DPDK)" || { echo "p4c-dpdk not on PATH: see README, 'Compiling P4'"; exit 1; }
	for prog in $(P4_PROGRAMS); do $(PY) scripts/p4build.py --p4c "$(P4C_DPDK)" $$prog || exit 1; done

p4-check:
	$(PY) scripts/p4build.py --check $(P4_PROGRAMS)

switch: setup
	make -s -C targets/dpdk

bench: bench-tables bench-dataplane

bench-tables: setup
	$(PY) bench/bench_tables.py

bench-dataplane: setup
	$(PY) bench/bench_dataplane.py

clean:
	make -C targets/dpdk clean
