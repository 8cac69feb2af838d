"""CHAP-MD5, MS-CHAPv2 and MPPE key derivation against the RFC vectors."""
from __future__ import annotations

import hashlib

from bng_controller.aaa import chap_verify as cv

# RFC 2759 9.2
USER = "User"
PASSWORD = "clientPass"
AUTH_CHALLENGE = bytes.fromhex("5B5D7C7D7B3F2F3E3C2C602132262628")
PEER_CHALLENGE = bytes.fromhex("21402324255E262A28295F2B3A337C7E")
CHALLENGE = bytes.fromhex("D02E4386BCE91226")
NT_RESPONSE = bytes.fromhex("82309ECD8D708B5EA08FAA3981CD83544233114A3D85D6DF")
PASSWORD_HASH = bytes.fromhex("44EBBA8D5312B8D611474411F56989AE")
PASSWORD_HASH_HASH = bytes.fromhex("41C00C584BD2D91C4017A2A12FA59F3F")
AUTHENTICATOR_RESPONSE = b"S=407A5589115FD0D6209F510FE9C04566932CDA56"
# RFC 3079 3.5.3 (same user, password and NT-Response)
MASTER_KEY = bytes.fromhex("FDECE3717A8C838CB388E527AE3CDD31")
SEND_START_KEY_128 = bytes.fromhex("8B7CDC149B993A1BA118CB153F56DCCB")


def _ppp_response(nt_response: bytes = NT_RESPONSE) -> bytes:
    return PEER_CHALLENGE + b"\x00" * 8 + nt_response + b"\x00"


def test_rfc2759_vectors():
    assert cv.challenge_hash(PEER_CHALLENGE, AUTH_CHALLENGE, USER) == CHALLENGE
    assert cv.nt_password_hash(PASSWORD) == PASSWORD_HASH
    assert cv.hash_nt_password_hash(PASSWORD_HASH) == PASSWORD_HASH_HASH
    assert cv.challenge_response(CHALLENGE, PASSWORD_HASH) == NT_RESPONSE
    assert cv.generate_nt_response(AUTH_CHALLENGE, PEER_CHALLENGE, USER, PASSWORD) == NT_RESPONSE
    assert cv.generate_authenticator_response(PASSWORD, NT_RESPONSE, PEER_CHALLENGE,
                                              AUTH_CHALLENGE, USER) == AUTHENTICATOR_RESPONSE


def test_verify_mschapv2():
    assert cv.verify_mschapv2(USER, PASSWORD, AUTH_CHALLENGE, _ppp_response()) == AUTHENTICATOR_RESPONSE
    assert cv.verify_mschapv2(USER, "wrong", AUTH_CHALLENGE, _ppp_response()) is None
    assert cv.verify_mschapv2("Other", PASSWORD, AUTH_CHALLENGE, _ppp_response()) is None
    assert cv.verify_mschapv2(USER, PASSWORD, AUTH_CHALLENGE, _ppp_response()[:-1]) is None
    # a Windows domain prefix is not part of the challenge hash
    assert cv.verify_mschapv2("DOM\\User", PASSWORD, AUTH_CHALLENGE, _ppp_response()) is not None


def test_rfc3079_mppe_keys():
    assert cv.mppe_master_key(PASSWORD, NT_RESPONSE) == MASTER_KEY
    send, recv = cv.mppe_server_keys(PASSWORD, NT_RESPONSE)
    # the server's send key is the client's receive key and vice versa
    assert send == SEND_START_KEY_128
    assert send == cv.mppe_asymmetric_start_key(MASTER_KEY, 16, is_send=False, is_server=False)
    assert recv == cv.mppe_asymmetric_start_key(MASTER_KEY, 16, is_send=True, is_server=False)
    assert send != recv


def test_chap_md5():
    challenge = cv.random_challenge()
    assert len(challenge) == 16 and challenge != cv.random_challenge()
    response = hashlib.md5(b"\x07" + b"secret" + challenge).digest()
    assert cv.chap_md5_response(7, "secret", challenge) == response
    assert cv.verify_chap_md5(7, "secret", challenge, response)
    assert not cv.verify_chap_md5(8, "secret", challenge, response)
    assert not cv.verify_chap_md5(7, "Secret", challenge, response)
