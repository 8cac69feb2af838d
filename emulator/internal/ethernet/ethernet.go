// Package ethernet decodes and builds the Ethernet II header with up to two
// VLAN tags (802.1Q, or 802.1ad QinQ), which is all a PPPoE access line
// carries in front of the PPPoE header.
package ethernet

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// EtherTypes and tag protocol identifiers used on access lines.
const (
	TypeIPv4           = 0x0800
	TypeIPv6           = 0x86dd
	TypePPPoEDiscovery = 0x8863
	TypePPPoESession   = 0x8864
	TPID8021Q          = 0x8100 // customer tag, or the only tag
	TPID8021AD         = 0x88a8 // service tag of QinQ
	TPID9100           = 0x9100 // pre-standard QinQ service tag
)

// HeaderLen is the untagged header length; each tag adds TagLen.
const (
	HeaderLen = 14
	TagLen    = 4
	// MinFrameLen is the shortest frame a NIC puts on the wire (without FCS);
	// we pad to it as hardware would, so the BNG must honour the PPPoE
	// length field rather than the frame length.
	MinFrameLen = 60
)

// MAC is an IEEE 802 48-bit address.
type MAC [6]byte

// Broadcast is ff:ff:ff:ff:ff:ff.
var Broadcast = MAC{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}

func (m MAC) String() string {
	const hexd = "0123456789abcdef"
	var b [17]byte
	for i, v := range m {
		if i > 0 {
			b[3*i-1] = ':'
		}
		b[3*i] = hexd[v>>4]
		b[3*i+1] = hexd[v&0xf]
	}
	return string(b[:])
}

// Uint64 is the address as a 48-bit integer, for arithmetic on MAC ranges.
func (m MAC) Uint64() uint64 {
	var v uint64
	for _, b := range m {
		v = v<<8 | uint64(b)
	}
	return v
}

// MACFromUint64 is the inverse of Uint64 (the top 16 bits are ignored).
func MACFromUint64(v uint64) MAC {
	var m MAC
	for i := 5; i >= 0; i-- {
		m[i] = byte(v)
		v >>= 8
	}
	return m
}

// IsMulticast reports the group bit, which broadcast also has.
func (m MAC) IsMulticast() bool { return m[0]&1 != 0 }

// ParseMAC reads aa:bb:cc:dd:ee:ff (or with '-').
func ParseMAC(s string) (MAC, error) {
	var m MAC
	parts := strings.FieldsFunc(s, func(r rune) bool { return r == ':' || r == '-' })
	if len(parts) != 6 {
		return m, fmt.Errorf("bad MAC address %q", s)
	}
	for i, p := range parts {
		v, err := strconv.ParseUint(p, 16, 8)
		if err != nil || len(p) > 2 {
			return m, fmt.Errorf("bad MAC address %q", s)
		}
		m[i] = byte(v)
	}
	return m, nil
}

// Tag is one VLAN tag: its TPID and TCI (PCP, DEI, VID).
type Tag struct {
	TPID uint16
	TCI  uint16
}

// VID is the 12-bit VLAN identifier.
func (t Tag) VID() uint16 { return t.TCI & 0x0fff }

// Tags is a line's tag stack, outermost first; unused entries are zero, so
// two stacks compare equal with == exactly when they are the same on the wire.
type Tags struct {
	N   int
	Tag [2]Tag
}

// Untagged, SingleTagged and DoubleTagged build the three kinds of line.
func Untagged() Tags { return Tags{} }

// SingleTagged is one 802.1Q tag.
func SingleTagged(vid uint16) Tags {
	return Tags{N: 1, Tag: [2]Tag{{TPID8021Q, vid}}}
}

// DoubleTagged is QinQ: an outer service tag with TPID stpid and an inner
// 802.1Q customer tag.
func DoubleTagged(stpid, svid, cvid uint16) Tags {
	return Tags{N: 2, Tag: [2]Tag{{stpid, svid}, {TPID8021Q, cvid}}}
}

// VIDs returns (outer, inner) VLAN ids, zero where absent.
func (t Tags) VIDs() (uint16, uint16) {
	return t.Tag[0].VID(), t.Tag[1].VID()
}

func (t Tags) String() string {
	switch t.N {
	case 0:
		return "untagged"
	case 1:
		return fmt.Sprintf("vlan %d", t.Tag[0].VID())
	default:
		return fmt.Sprintf("s-vlan %d (0x%04x) c-vlan %d", t.Tag[0].VID(), t.Tag[0].TPID, t.Tag[1].VID())
	}
}

// Len is the number of header bytes the tags take.
func (t Tags) Len() int { return t.N * TagLen }

// Frame is a decoded view of one received frame; Payload aliases the buffer.
type Frame struct {
	Dst, Src MAC
	Tags     Tags
	Type     uint16
	Payload  []byte
}

// Errors from Parse.
var (
	ErrShort       = errors.New("ethernet: frame too short")
	ErrTooManyTags = errors.New("ethernet: more than two VLAN tags")
)

func isTPID(t uint16) bool { return t == TPID8021Q || t == TPID8021AD || t == TPID9100 }

// Parse decodes b into f without copying.
func Parse(b []byte, f *Frame) error {
	if len(b) < HeaderLen {
		return ErrShort
	}
	copy(f.Dst[:], b[0:6])
	copy(f.Src[:], b[6:12])
	f.Tags = Tags{}
	off := 12
	typ := binary.BigEndian.Uint16(b[off:])
	for isTPID(typ) {
		if f.Tags.N == 2 {
			return ErrTooManyTags
		}
		if len(b) < off+2+TagLen {
			return ErrShort
		}
		f.Tags.Tag[f.Tags.N] = Tag{TPID: typ, TCI: binary.BigEndian.Uint16(b[off+2:])}
		f.Tags.N++
		off += TagLen
		typ = binary.BigEndian.Uint16(b[off:])
	}
	f.Type = typ
	f.Payload = b[off+2:]
	return nil
}

// AppendHeader appends dst, src, the tags and the EtherType to b.
func AppendHeader(b []byte, dst, src MAC, tags Tags, etherType uint16) []byte {
	b = append(b, dst[:]...)
	b = append(b, src[:]...)
	for i := 0; i < tags.N; i++ {
		b = binary.BigEndian.AppendUint16(b, tags.Tag[i].TPID)
		b = binary.BigEndian.AppendUint16(b, tags.Tag[i].TCI)
	}
	return binary.BigEndian.AppendUint16(b, etherType)
}

// Pad extends a frame with zeros to the Ethernet minimum.
func Pad(b []byte) []byte {
	for len(b) < MinFrameLen {
		b = append(b, 0)
	}
	return b
}
