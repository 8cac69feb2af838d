// Package traffic is the test traffic's payload format and the receive-side
// accounting: every stream packet carries "SUBEMU", the session index and a
// per-session sequence number, so a receiver (this emulator for downstream,
// a sink on the core side for upstream) counts loss and reordering per
// subscriber without any shared state.
//
// Payload layout (big-endian), at least HeaderLen bytes, zero padded:
//
//	0  6  magic "SUBEMU"
//	6  1  version (1)
//	7  1  flags (0)
//	8  4  session index (1-based)
//	12 8  sequence number (0, 1, 2, ... per session)
//	20 8  sender's clock in ns (informational)
package traffic

import (
	"encoding/binary"
)

// Magic opens every stream payload.
const Magic = "SUBEMU"

// HeaderLen is the fixed part of a payload.
const (
	HeaderLen = 28
	Version   = 1
)

// AppendPayload appends a payload of size bytes (at least HeaderLen).
func AppendPayload(b []byte, session uint32, seq uint64, clockNanos int64, size int) []byte {
	start := len(b)
	b = append(b, Magic...)
	b = append(b, Version, 0)
	b = binary.BigEndian.AppendUint32(b, session)
	b = binary.BigEndian.AppendUint64(b, seq)
	b = binary.BigEndian.AppendUint64(b, uint64(clockNanos))
	for len(b)-start < size {
		b = append(b, 0)
	}
	return b
}

// ParsePayload decodes a payload; ok is false for anything else.
func ParsePayload(b []byte) (session uint32, seq uint64, ok bool) {
	if len(b) < HeaderLen || string(b[:6]) != Magic || b[6] != Version {
		return 0, 0, false
	}
	return binary.BigEndian.Uint32(b[8:]), binary.BigEndian.Uint64(b[12:]), true
}

// SeqTracker counts one flow's packets: loss is the gap between the
// sequence numbers seen (first to highest) and the packets received;
// a packet older than the highest seen is counted as reordered.
// Duplicates count as received, so they can hide an equal number of losses.
type SeqTracker struct {
	started   bool
	first     uint64
	next      uint64 // highest seen + 1
	Received  uint64
	Reordered uint64
}

// Observe records one packet.
func (t *SeqTracker) Observe(seq uint64) {
	t.Received++
	switch {
	case !t.started:
		t.started, t.first, t.next = true, seq, seq+1
	case seq >= t.next:
		t.next = seq + 1
	default:
		t.Reordered++
		if seq < t.first {
			t.first = seq
		}
	}
}

// Started says whether any packet has been received.
func (t *SeqTracker) Started() bool { return t.started }

// Lost is the number of sequence numbers in [first, highest] not received.
// A flow that received nothing has lost nothing by this count: its sender
// knows what it sent (see Session.StreamSilent).
func (t *SeqTracker) Lost() uint64 {
	if !t.started {
		return 0
	}
	span := t.next - t.first
	if t.Received >= span {
		return 0
	}
	return span - t.Received
}
