"""Primary/backup arbitration (P4Runtime spec section 5)."""
import queue

import grpc
import pytest

from bng_switch.arbitration import Arbitration, ArbitrationError, Client


def client():
    return Client(queue.Queue())


def test_highest_election_id_is_primary_and_backups_are_told():
    arb = Arbitration(device_id=1)
    a, b = client(), client()
    assert arb.update(a, 1, "", (0, 5)) == [a]
    assert arb.status_for(a)[0] == grpc.StatusCode.OK
    notify = arb.update(b, 1, "", (0, 9))
    assert set(notify) == {a, b}  # the primary changed: everyone hears it
    assert arb.status_for(b)[0] == grpc.StatusCode.OK
    assert arb.status_for(a)[0] == grpc.StatusCode.ALREADY_EXISTS
    arb.check_primary(1, "", (0, 9))
    with pytest.raises(ArbitrationError) as e:
        arb.check_primary(1, "", (0, 5))
    assert e.value.code == grpc.StatusCode.PERMISSION_DENIED


def test_primary_leaving_leaves_no_primary_until_an_update_at_least_as_high():
    """Spec 5: when the primary's stream breaks the server is without a
    primary until a client sends an update with an election id at least the
    highest seen; a backup connected all along does not take over by itself
    (two controllers could then both believe they lead)."""
    arb = Arbitration(device_id=1)
    a, b = client(), client()
    arb.update(a, 1, "", (0, 5))
    arb.update(b, 1, "", (1, 0))
    assert set(arb.remove(b)) == {a}                 # a hears: no primary
    assert arb.primary() is None
    assert arb.status_for(a)[0] == grpc.StatusCode.NOT_FOUND
    assert arb.highest_election_id("") == (1, 0)    # what the notification carries
    with pytest.raises(ArbitrationError):
        arb.check_primary(1, "", (0, 5))
    assert arb.update(a, 1, "", (0, 5)) == [a]       # the same low id: still a backup
    assert arb.primary() is None
    c = client()
    assert arb.update(c, 1, "", (0, 9)) == [c]       # a newcomer below the highest seen
    assert arb.primary() is None and arb.status_for(c)[0] == grpc.StatusCode.NOT_FOUND
    assert set(arb.update(a, 1, "", (1, 1))) == {a, c}   # above it: primary, all told
    assert arb.primary() is a and arb.highest_election_id("") == (1, 1)
    arb.check_primary(1, "", (1, 1))


def test_a_primary_coming_back_with_the_same_id_is_primary_again():
    arb = Arbitration(device_id=1)
    a = client()
    arb.update(a, 1, "", (0, 10))
    arb.remove(a)
    again = client()
    assert arb.update(again, 1, "", (0, 10)) == [again]
    assert arb.primary() is again


def test_a_primary_that_downgrades_itself_leaves_no_primary():
    arb = Arbitration(device_id=1)
    a, b = client(), client()
    arb.update(a, 1, "", (0, 5))
    arb.update(b, 1, "", (0, 9))
    assert set(arb.update(b, 1, "", (0, 2))) == {a, b}
    assert arb.primary() is None
    assert arb.status_for(b)[0] == grpc.StatusCode.NOT_FOUND


def test_duplicate_election_id_and_wrong_device():
    arb = Arbitration(device_id=1)
    a, b = client(), client()
    arb.update(a, 1, "", (0, 5))
    with pytest.raises(ArbitrationError) as e:
        arb.update(b, 1, "", (0, 5))
    assert e.value.code == grpc.StatusCode.INVALID_ARGUMENT
    with pytest.raises(ArbitrationError) as e:
        arb.update(b, 2, "", (0, 6))
    assert e.value.code == grpc.StatusCode.NOT_FOUND


def test_a_live_stream_cannot_change_its_device_or_role():
    """Spec 5.3: FAILED_PRECONDITION for a live stream (a first update with
    an unknown device is NOT_FOUND, above)."""
    arb = Arbitration(device_id=1)
    a = client()
    arb.update(a, 1, "", (0, 5))
    for device_id, role in ((2, ""), (1, "pppoe")):
        with pytest.raises(ArbitrationError) as e:
            arb.update(a, device_id, role, (0, 5))
        assert e.value.code == grpc.StatusCode.FAILED_PRECONDITION
    assert arb.primary() is a


def test_roles_have_separate_primaries():
    arb = Arbitration(device_id=1)
    a, b = client(), client()
    arb.update(a, 1, "", (0, 5))
    arb.update(b, 1, "pppoe", (0, 1))
    assert arb.primary("") is a and arb.primary("pppoe") is b


def test_clients_without_an_election_id_are_backups_that_never_become_primary():
    """Spec, Unset Election ID: lower than any election id, so never primary,
    and any number of them; (0, 0) is a different, set, election id. Such a
    client was taken as (0, 0): it became primary, and a second one was
    refused as a duplicate."""
    from bng_switch.arbitration import UNSET
    arb = Arbitration(device_id=1)
    a, b, c = client(), client(), client()
    assert arb.update(a, 1, "", UNSET) == [a]
    assert arb.update(b, 1, "", UNSET) == [b]
    assert arb.primary() is None and arb.status_for(a) == (grpc.StatusCode.NOT_FOUND, "no primary")
    with pytest.raises(ArbitrationError) as e:
        arb.check_primary(1, "", UNSET)
    assert e.value.code == grpc.StatusCode.PERMISSION_DENIED
    assert set(arb.update(c, 1, "", (0, 0))) == {a, b, c}     # a primary at last: all hear it
    assert arb.primary() is c and arb.status_for(a)[0] == grpc.StatusCode.ALREADY_EXISTS
    arb.check_primary(1, "", (0, 0))
    assert set(arb.remove(c)) == {a, b} and arb.primary() is None
