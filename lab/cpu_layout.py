"""Which CPUs the lab's processes run on.

A BNG keeps its control plane off the cores its data plane polls, and the
lab does the same: the controller gets a CPU of its own, the switch's lcores
(main and workers) and the subscriber emulator share the others.

On the 2-CPU development VM this is what decides the setup rate. Left to the
scheduler, the controller's event loop (the setup's bottleneck) shared its
CPU with the switch's worker, which runs at nice -10 and wakes thousands of
times a second: the controller was runnable all the time but ran only 77% of
it (schedstat: 25% waiting for a CPU), with 6,000 preemptions a second, while
the machine as a whole was 27% idle. Pinned like this, `make bench-setup`
(12k sessions, six alternating pairs) went from 690-975 to 1,270-1,560
sessions/s, and LAC -> LNS (4k sessions) from 267 to 584/s.
"""
from __future__ import annotations

import os
from dataclasses import dataclass


@dataclass(frozen=True)
class CpuLayout:
    controllers: tuple[tuple[int, ...], ...]   # one CPU set per controller
    switch: tuple[int, ...]                    # the switch's lcores go round robin over these
    emulator: tuple[int, ...]                  # subemu and the lab's other helpers

    def controller(self, index: int) -> list[int]:
        return list(self.controllers[index % len(self.controllers)])


def lab_layout(workers: int = 1, controllers: int = 1, cpus: set[int] | list[int] | None = None) -> CpuLayout:
    """The layout for a lab with `controllers` controllers and switches of
    `workers` workers on `cpus` (default: the CPUs this process may use).

    Controllers take the last CPUs, one each while at least two CPUs are
    left for the rest, else they share the last one. The switches get the
    remaining CPUs; the emulator those their lcores (main + workers) leave
    free, else the first, where it shares with the switch's main lcore,
    which is mostly idle (gRPC and the packet channel)."""
    allowed = sorted(cpus if cpus is not None else os.sched_getaffinity(0))
    if not allowed:
        raise ValueError("no CPU to run on")
    if len(allowed) == 1:
        one = tuple(allowed)
        return CpuLayout(controllers=(one,), switch=one, emulator=one)
    n_ctl = controllers if len(allowed) - controllers >= 2 else 1
    ctl = allowed[-n_ctl:]
    rest = allowed[:-n_ctl]
    return CpuLayout(controllers=tuple((c,) for c in ctl), switch=tuple(rest),
                     emulator=tuple(rest[workers + 1:] or rest[:1]))


def taskset(cpus: list[int] | tuple[int, ...], cmd: list[str]) -> list[str]:
    """cmd run on cpus: taskset sets the affinity before exec, so every
    thread the program starts (Go's runtime, gRPC's) inherits it."""
    return ["taskset", "-c", ",".join(str(c) for c in cpus), *cmd]
