package ipv4

import (
	"encoding/binary"
	"errors"
	"time"
)

// Fragmentation as a host does it (RFC 791 section 3.2): a BNG fragments
// downstream IPv4 without DF that is larger than a subscriber's MRU, and a
// subscriber fragments what it sends that is larger than the BNG's.

const (
	flagDF     = 0x4000
	flagMF     = 0x2000
	offsetMask = 0x1fff
	maxIPv4Len = 65535
)

// ReassemblyTimeout is how long an incomplete datagram is kept (RFC 1122
// 3.3.2 recommends 60 to 120 seconds; a subscriber's fragments arrive within
// milliseconds of each other, so a shorter one frees memory sooner).
const ReassemblyTimeout = 30 * time.Second

// MaxPendingDatagrams bounds the incomplete datagrams a session holds.
const MaxPendingDatagrams = 8

// Errors from Reassembler.Add.
var (
	ErrBadFragment = errors.New("ipv4: bad fragment")
	ErrTooMany     = errors.New("ipv4: too many incomplete datagrams")
)

// IsFragment reports whether b (a header Parse would accept otherwise) is a
// fragment: MF set or a non-zero offset.
func IsFragment(b []byte) bool {
	return len(b) >= HeaderLen && binary.BigEndian.Uint16(b[6:])&(flagMF|offsetMask) != 0
}

type span struct{ from, to int }

type datagram struct {
	src, dst [4]byte
	id       uint16
	proto    uint8
	header   []byte // the first fragment's, once it came
	data     []byte
	have     []span
	total    int // data bytes, -1 until the last fragment came
	deadline time.Duration
}

// Reassembler puts datagrams back together from their fragments (RFC 815:
// received ranges, complete when they cover the data up to the last
// fragment's end). The zero value is ready to use.
type Reassembler struct {
	pending []*datagram
	// Expired counts datagrams dropped incomplete after ReassemblyTimeout.
	Expired uint64
}

// Add takes one fragment received at now (the emulator's clock) and returns
// the whole datagram once its last missing piece came, nil before. The
// datagram is a fresh buffer: its header is the first fragment's with MF
// and offset cleared, Total Length set and the checksum redone.
func (r *Reassembler) Add(b []byte, now time.Duration) ([]byte, error) {
	r.expire(now)
	ihl, total, err := checkHeader(b)
	if err != nil {
		return nil, ErrBadFragment
	}
	fo := binary.BigEndian.Uint16(b[6:])
	off, more := int(fo&offsetMask)*8, fo&flagMF != 0
	piece := b[ihl:total]
	end := off + len(piece)
	if end+ihl > maxIPv4Len || (more && len(piece)%8 != 0) || len(piece) == 0 {
		return nil, ErrBadFragment
	}
	d := r.find(b)
	if d == nil {
		if len(r.pending) >= MaxPendingDatagrams {
			return nil, ErrTooMany
		}
		d = &datagram{id: binary.BigEndian.Uint16(b[4:]), proto: b[9], total: -1, deadline: now + ReassemblyTimeout}
		copy(d.src[:], b[12:16])
		copy(d.dst[:], b[16:20])
		r.pending = append(r.pending, d)
	}
	if !more {
		if d.total >= 0 && d.total != end || end < d.maxEnd() {
			r.drop(d)
			return nil, ErrBadFragment // two different ends
		}
		d.total = end
	} else if d.total >= 0 && end > d.total {
		r.drop(d)
		return nil, ErrBadFragment
	}
	if off == 0 {
		d.header = append([]byte(nil), b[:ihl]...)
	}
	if len(d.data) < end {
		d.data = append(d.data, make([]byte, end-len(d.data))...)
	}
	copy(d.data[off:end], piece)
	d.have = addSpan(d.have, span{off, end})
	if d.total < 0 || d.header == nil || len(d.have) != 1 || d.have[0].from != 0 || d.have[0].to != d.total {
		return nil, nil
	}
	r.drop(d)
	return withHeader(d.header, d.data[:d.total], binary.BigEndian.Uint16(d.header[6:])&flagDF), nil
}

// withHeader is header then data in a fresh buffer, the header's Total
// Length, flags and fragment offset (flagsOffset) and checksum set.
func withHeader(header, data []byte, flagsOffset uint16) []byte {
	out := make([]byte, 0, len(header)+len(data))
	out = append(out, header...)
	out = append(out, data...)
	binary.BigEndian.PutUint16(out[2:], uint16(len(out)))
	binary.BigEndian.PutUint16(out[6:], flagsOffset)
	out[10], out[11] = 0, 0
	binary.BigEndian.PutUint16(out[10:], Finish(Checksum(0, out[:len(header)])))
	return out
}

func (d *datagram) maxEnd() int {
	if len(d.have) == 0 {
		return 0
	}
	return d.have[len(d.have)-1].to
}

func (r *Reassembler) find(b []byte) *datagram {
	id := binary.BigEndian.Uint16(b[4:])
	for _, d := range r.pending {
		if d.id == id && d.proto == b[9] && string(d.src[:]) == string(b[12:16]) && string(d.dst[:]) == string(b[16:20]) {
			return d
		}
	}
	return nil
}

func (r *Reassembler) drop(d *datagram) {
	for i, x := range r.pending {
		if x == d {
			r.pending = append(r.pending[:i], r.pending[i+1:]...)
			return
		}
	}
}

func (r *Reassembler) expire(now time.Duration) {
	kept := r.pending[:0]
	for _, d := range r.pending {
		if now < d.deadline {
			kept = append(kept, d)
		} else {
			r.Expired++
		}
	}
	r.pending = kept
}

// addSpan merges s into the sorted, disjoint spans.
func addSpan(spans []span, s span) []span {
	out := spans[:0:0]
	placed := false
	for _, x := range spans {
		switch {
		case x.to < s.from:
			out = append(out, x)
		case s.to < x.from:
			if !placed {
				out = append(out, s)
				placed = true
			}
			out = append(out, x)
		default: // touching or overlapping: widen s
			if x.from < s.from {
				s.from = x.from
			}
			if x.to > s.to {
				s.to = x.to
			}
		}
	}
	if !placed {
		out = append(out, s)
	}
	return out
}

// Fragment splits an IPv4 packet without options into packets of at most
// mtu bytes, DF cleared, each one's data but the last a multiple of 8
// bytes; a packet that fits comes back as it is. nil when mtu leaves no
// 8 data bytes.
func Fragment(b []byte, mtu int) [][]byte {
	if len(b) <= mtu {
		return [][]byte{b}
	}
	room := (mtu - HeaderLen) &^ 7
	if room <= 0 || len(b) < HeaderLen {
		return nil
	}
	data := b[HeaderLen:]
	var out [][]byte
	for off := 0; off < len(data); off += room {
		end := off + room
		if end > len(data) {
			end = len(data)
		}
		fo := uint16(off / 8)
		if end < len(data) {
			fo |= flagMF
		}
		out = append(out, withHeader(b[:HeaderLen], data[off:end], fo))
	}
	return out
}
