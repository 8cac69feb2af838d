"""Authenticator-side CHAP crypto: what the BNG computes when it checks a
peer itself (the local backend) instead of asking a RADIUS server.

- CHAP-MD5 (RFC 1994 4.1): response = MD5(identifier || secret || challenge).
- MS-CHAPv2 (RFC 2759 8): NT-Response from MD4 of the UTF-16LE password,
  SHA1 challenge hash and three DES blocks; the authenticator response
  ("S=<40 hex>") that proves to the peer that we know its password too.
- MPPE keys for MS-CHAPv2 (RFC 3079 3.3/3.4): the master key and the
  asymmetric start keys that RADIUS would send as MS-MPPE-Send/Recv-Key.

Everything here is pure and synchronous; comparisons of secrets use
`hmac.compare_digest` so a wrong response takes as long as a right one.
"""
from __future__ import annotations

import hashlib
import hmac
import secrets

from Crypto.Cipher import DES
from Crypto.Hash import MD4

CHAP_CHALLENGE_LEN = 16
MSCHAPV2_CHALLENGE_LEN = 16
MSCHAPV2_RESPONSE_LEN = 49          # peer challenge 16, reserved 8, NT-response 24, flags 1
_PEER_CHALLENGE = slice(0, 16)
_NT_RESPONSE = slice(24, 48)
_FLAGS_OFFSET = 48

# RFC 2759 8.7 constants
_MAGIC1 = b"Magic server to client signing constant"
_MAGIC2 = b"Pad to make it do more than one iteration"
# RFC 3079 3.4 constants
_MPPE_MAGIC1 = b"This is the MPPE Master Key"
_MPPE_MAGIC2 = (b"On the client side, this is the send key; "
                b"on the server side, it is the receive key.")
_MPPE_MAGIC3 = (b"On the client side, this is the receive key; "
                b"on the server side, it is the send key.")
_SHS_PAD1 = b"\x00" * 40
_SHS_PAD2 = b"\xf2" * 40


def random_challenge(length: int = CHAP_CHALLENGE_LEN) -> bytes:
    """An unpredictable challenge (RFC 1994 2.3: it must not repeat)."""
    return secrets.token_bytes(length)


def _as_bytes(password: str | bytes) -> bytes:
    return password.encode("utf-8") if isinstance(password, str) else password


# ------------------------------------------------------------------ CHAP-MD5

def chap_md5_response(ident: int, password: str | bytes, challenge: bytes) -> bytes:
    """RFC 1994 4.1: MD5 over the identifier, the secret and the challenge."""
    return hashlib.md5(bytes([ident & 0xFF]) + _as_bytes(password) + challenge).digest()


def verify_chap_md5(ident: int, password: str | bytes, challenge: bytes, response: bytes) -> bool:
    return hmac.compare_digest(chap_md5_response(ident, password, challenge), response)


# ----------------------------------------------------------------- MS-CHAPv2

def mschap_username(username: str) -> str:
    """RFC 2759 4: the user name in the challenge hash is without any
    Windows domain ("DOMAIN\\user" -> "user")."""
    return username.rsplit("\\", 1)[-1]


def nt_password_hash(password: str) -> bytes:
    """RFC 2759 8.3: MD4 of the password in UTF-16LE (Unicode)."""
    return MD4.new(password.encode("utf-16-le")).digest()


def hash_nt_password_hash(password_hash: bytes) -> bytes:
    """RFC 2759 8.4."""
    return MD4.new(password_hash).digest()


def challenge_hash(peer_challenge: bytes, auth_challenge: bytes, username: str) -> bytes:
    """RFC 2759 8.2: the 8-octet challenge the DES blocks encrypt."""
    digest = hashlib.sha1(peer_challenge + auth_challenge
                          + mschap_username(username).encode("utf-8")).digest()
    return digest[:8]


def _des_key(key7: bytes) -> bytes:
    """Spread 56 key bits over 8 octets (the low bit of each is parity,
    which DES ignores)."""
    bits = int.from_bytes(key7, "big")
    return bytes((((bits >> (49 - 7 * i)) & 0x7F) << 1) for i in range(8))


def challenge_response(challenge: bytes, password_hash: bytes) -> bytes:
    """RFC 2759 8.5: three DES encryptions of the challenge, keyed by the
    password hash zero-padded to 21 octets."""
    z = password_hash + b"\x00" * (21 - len(password_hash))
    return b"".join(DES.new(_des_key(z[i:i + 7]), DES.MODE_ECB).encrypt(challenge)
                    for i in (0, 7, 14))


def generate_nt_response(auth_challenge: bytes, peer_challenge: bytes,
                         username: str, password: str) -> bytes:
    """RFC 2759 8.1: what the peer sends (used by tests and the emulator)."""
    return challenge_response(challenge_hash(peer_challenge, auth_challenge, username),
                              nt_password_hash(password))


def generate_authenticator_response(password: str, nt_response: bytes, peer_challenge: bytes,
                                    auth_challenge: bytes, username: str) -> bytes:
    """RFC 2759 8.7: b"S=" and 40 upper-case hex digits."""
    password_hash_hash = hash_nt_password_hash(nt_password_hash(password))
    digest = hashlib.sha1(password_hash_hash + nt_response + _MAGIC1).digest()
    challenge = challenge_hash(peer_challenge, auth_challenge, username)
    digest = hashlib.sha1(digest + challenge + _MAGIC2).digest()
    return b"S=" + digest.hex().upper().encode("ascii")


def split_mschapv2_response(response: bytes) -> tuple[bytes, bytes, int]:
    """`(peer_challenge, nt_response, flags)` of the 49-octet PPP
    MS-CHAPv2 Response value."""
    if len(response) != MSCHAPV2_RESPONSE_LEN:
        raise ValueError(f"MS-CHAPv2 response is {len(response)} octets, "
                         f"expected {MSCHAPV2_RESPONSE_LEN}")
    return response[_PEER_CHALLENGE], response[_NT_RESPONSE], response[_FLAGS_OFFSET]


def verify_mschapv2(username: str, password: str, auth_challenge: bytes,
                    response: bytes) -> bytes | None:
    """Check a peer's 49-octet response; the authenticator response
    (b"S=...") when it is right, else None."""
    try:
        peer_challenge, nt_response, _flags = split_mschapv2_response(response)
    except ValueError:
        return None
    expected = generate_nt_response(auth_challenge, peer_challenge, username, password)
    if not hmac.compare_digest(expected, nt_response):
        return None
    return generate_authenticator_response(password, nt_response, peer_challenge,
                                           auth_challenge, username)


# ------------------------------------------------------------ MPPE (RFC 3079)

def mppe_master_key(password: str, nt_response: bytes) -> bytes:
    """RFC 3079 3.4 GetMasterKey."""
    password_hash_hash = hash_nt_password_hash(nt_password_hash(password))
    return hashlib.sha1(password_hash_hash + nt_response + _MPPE_MAGIC1).digest()[:16]


def mppe_asymmetric_start_key(master_key: bytes, key_len: int, is_send: bool,
                              is_server: bool) -> bytes:
    """RFC 3079 3.4 GetAsymmetricStartKey."""
    magic = _MPPE_MAGIC3 if is_send == is_server else _MPPE_MAGIC2
    return hashlib.sha1(master_key + _SHS_PAD1 + magic + _SHS_PAD2).digest()[:key_len]


def mppe_server_keys(password: str, nt_response: bytes, key_len: int = 16) -> tuple[bytes, bytes]:
    """`(send, recv)` keys of the authenticator (the BNG), as RADIUS sends
    them in MS-MPPE-Send-Key / MS-MPPE-Recv-Key."""
    master = mppe_master_key(password, nt_response)
    return (mppe_asymmetric_start_key(master, key_len, is_send=True, is_server=True),
            mppe_asymmetric_start_key(master, key_len, is_send=False, is_server=True))
