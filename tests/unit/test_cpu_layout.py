"""The lab's CPU layout: controllers apart from the switches' lcores."""
import pytest

from bng_lab.cpu_layout import lab_layout, taskset


def test_two_cpus_give_the_controller_one_and_everything_else_the_other():
    lay = lab_layout(workers=1, cpus={0, 1})
    assert lay.controller(0) == [1]
    assert lay.switch == (0,) and lay.emulator == (0,)


def test_two_controllers_share_their_cpu_until_there_are_enough():
    lay = lab_layout(workers=1, controllers=2, cpus={0, 1, 2})
    assert lay.controller(0) == lay.controller(1) == [2]
    assert lay.switch == (0, 1)
    lay = lab_layout(workers=1, controllers=2, cpus=range(8))
    assert (lay.controller(0), lay.controller(1)) == ([6], [7])
    assert lay.switch == tuple(range(6))
    assert lay.emulator == (2, 3, 4, 5)          # what the lcores (main 0, worker 1) leave


def test_the_emulator_shares_the_switch_main_cpu_when_nothing_is_left():
    lay = lab_layout(workers=2, cpus=range(4))
    assert lay.controller(0) == [3] and lay.switch == (0, 1, 2) and lay.emulator == (0,)


def test_one_cpu_holds_everything():
    lay = lab_layout(workers=1, cpus=[5])
    assert lay.controller(0) == [5] and lay.switch == (5,) and lay.emulator == (5,)
    with pytest.raises(ValueError):
        lab_layout(cpus=[])


def test_taskset_wraps_the_command():
    assert taskset((0, 2), ["subemu", "--iface", "x"]) == ["taskset", "-c", "0,2", "subemu", "--iface", "x"]
