"""Protobuf's wire format, for the few messages the controller frames by
hand because building them field by field through the protobuf runtime
was a measurable share of its CPU during setup storms (see
`p4runtime_write` and `p4runtime_entries`).

Only what those need: varints and field tags (numbers taken from the
generated descriptors, never written as literals). A message is its
fields concatenated, so framing by hand is exact as long as fields are
emitted in field-number order, which is also the order protobuf
serializes them in (the tests compare bytes).
"""
from __future__ import annotations

LEN = 2         # wire type of length-delimited fields (bytes, messages)
VARINT = 0


def varint(n: int) -> bytes:
    """An unsigned varint (n >= 0)."""
    if n < 0x80:
        return _ONE_BYTE[n]
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


_ONE_BYTE = [bytes((i,)) for i in range(0x80)]


def tag(message: type, name: str, wire_type: int) -> bytes:
    """The key (field number and wire type) that precedes field `name` of
    a generated protobuf message class."""
    return varint(message.DESCRIPTOR.fields_by_name[name].number << 3 | wire_type)
