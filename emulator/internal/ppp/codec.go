// Package ppp is the part of PPP (RFC 1661) that every control protocol
// shares: the protocol field, the Code/Identifier/Length packet format of
// LCP and the NCPs, their Type/Length/Value configuration options, and the
// option negotiation automaton (fsm.go). LCP, IPCP and IPv6CP plug their
// option policies into the automaton; they live in their own packages.
package ppp

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Protocol is the PPP protocol field.
type Protocol uint16

// Protocol numbers used over PPPoE.
const (
	ProtoIPv4   Protocol = 0x0021
	ProtoIPv6   Protocol = 0x0057
	ProtoIPCP   Protocol = 0x8021
	ProtoIPv6CP Protocol = 0x8057
	ProtoCCP    Protocol = 0x80fd
	ProtoLCP    Protocol = 0xc021
	ProtoPAP    Protocol = 0xc023
	ProtoCHAP   Protocol = 0xc223
)

// IsControl is true for NCPs (0x8000-0xbfff) and link-layer control
// protocols such as LCP, PAP and CHAP (0xc000-0xffff): everything that is
// not user data (RFC 1661 section 2).
func (p Protocol) IsControl() bool { return p >= 0x8000 }

// Valid reports the RFC 1661 structure of a protocol number: the low octet
// is odd and the high octet even.
func (p Protocol) Valid() bool { return p&0x0001 == 1 && p&0x0100 == 0 }

func (p Protocol) String() string {
	switch p {
	case ProtoIPv4:
		return "IPv4"
	case ProtoIPv6:
		return "IPv6"
	case ProtoIPCP:
		return "IPCP"
	case ProtoIPv6CP:
		return "IPv6CP"
	case ProtoCCP:
		return "CCP"
	case ProtoLCP:
		return "LCP"
	case ProtoPAP:
		return "PAP"
	case ProtoCHAP:
		return "CHAP"
	}
	return fmt.Sprintf("proto-0x%04x", uint16(p))
}

// Errors from the decoders.
var (
	ErrShort         = errors.New("ppp: packet too short")
	ErrProtocol      = errors.New("ppp: malformed protocol field")
	ErrLength        = errors.New("ppp: length field inconsistent with the packet")
	ErrOptionLength  = errors.New("ppp: option length out of range")
	ErrOptionTooLong = errors.New("ppp: option runs past the packet")
)

// ParseFrame splits a PPP frame as PPPoE carries it (RFC 2516: no address
// and control fields; we never negotiate protocol field compression, so the
// protocol field is always two octets).
func ParseFrame(b []byte) (Protocol, []byte, error) {
	if len(b) < 2 {
		return 0, nil, ErrShort
	}
	p := Protocol(binary.BigEndian.Uint16(b))
	if !p.Valid() {
		return p, nil, ErrProtocol
	}
	return p, b[2:], nil
}

// Code is a control packet's code field.
type Code uint8

// Codes of LCP (RFC 1661 section 5); the NCPs use 1-7.
const (
	ConfigureRequest Code = 1
	ConfigureAck     Code = 2
	ConfigureNak     Code = 3
	ConfigureReject  Code = 4
	TerminateRequest Code = 5
	TerminateAck     Code = 6
	CodeReject       Code = 7
	ProtocolReject   Code = 8
	EchoRequest      Code = 9
	EchoReply        Code = 10
	DiscardRequest   Code = 11
	Identification   Code = 12 // RFC 1570
	TimeRemaining    Code = 13 // RFC 1570
)

func (c Code) String() string {
	names := [...]string{"", "Configure-Request", "Configure-Ack", "Configure-Nak", "Configure-Reject",
		"Terminate-Request", "Terminate-Ack", "Code-Reject", "Protocol-Reject", "Echo-Request",
		"Echo-Reply", "Discard-Request", "Identification", "Time-Remaining"}
	if int(c) < len(names) && c > 0 {
		return names[c]
	}
	return fmt.Sprintf("code-%d", uint8(c))
}

// PacketHeaderLen is Code, Identifier and Length.
const PacketHeaderLen = 4

// Packet is a decoded control packet; Data aliases the frame and excludes
// any padding beyond the Length field.
type Packet struct {
	Code Code
	ID   uint8
	Data []byte
}

// ParsePacket decodes a control packet (LCP, IPCP, IPv6CP, PAP and CHAP share
// the header). Octets past Length are padding and ignored (RFC 1661 5).
func ParsePacket(b []byte) (Packet, error) {
	if len(b) < PacketHeaderLen {
		return Packet{}, ErrShort
	}
	n := int(binary.BigEndian.Uint16(b[2:]))
	if n < PacketHeaderLen || n > len(b) {
		return Packet{}, ErrLength
	}
	return Packet{Code: Code(b[0]), ID: b[1], Data: b[PacketHeaderLen:n]}, nil
}

// AppendPacketHeader appends Code, Identifier and a zero Length and returns
// the header's offset; SetPacketLength fixes the length afterwards.
func AppendPacketHeader(b []byte, code Code, id uint8) ([]byte, int) {
	off := len(b)
	return append(b, byte(code), id, 0, 0), off
}

// SetPacketLength writes the length of the packet starting at off.
func SetPacketLength(b []byte, off int) {
	binary.BigEndian.PutUint16(b[off+2:], uint16(len(b)-off))
}

// AppendPacket appends a whole control packet.
func AppendPacket(b []byte, code Code, id uint8, data []byte) []byte {
	b, off := AppendPacketHeader(b, code, id)
	b = append(b, data...)
	SetPacketLength(b, off)
	return b
}

// ValidateOptions checks that an option list is a sequence of well-formed
// Type/Length/Value options (Length >= 2, none past the end).
func ValidateOptions(opts []byte) error {
	for len(opts) > 0 {
		if len(opts) < 2 {
			return ErrOptionTooLong
		}
		n := int(opts[1])
		if n < 2 {
			return ErrOptionLength
		}
		if n > len(opts) {
			return ErrOptionTooLong
		}
		opts = opts[n:]
	}
	return nil
}

// Option is one decoded option; Raw is the whole TLV.
type Option struct {
	Type uint8
	Data []byte
	Raw  []byte
}

// NextOption splits the first option off a validated list.
func NextOption(opts []byte) (Option, []byte) {
	n := int(opts[1])
	return Option{Type: opts[0], Data: opts[2:n], Raw: opts[:n]}, opts[n:]
}

// ForEachOption calls fn for each option of a validated list.
func ForEachOption(opts []byte, fn func(o Option)) {
	for len(opts) > 0 {
		var o Option
		o, opts = NextOption(opts)
		fn(o)
	}
}

// ContainsOption reports whether the list holds an option byte-identical
// to raw.
func ContainsOption(opts, raw []byte) bool {
	for len(opts) > 0 {
		var o Option
		o, opts = NextOption(opts)
		if string(o.Raw) == string(raw) {
			return true
		}
	}
	return false
}

// AppendOption appends one option.
func AppendOption(b []byte, typ uint8, data []byte) []byte {
	b = append(b, typ, byte(2+len(data)))
	return append(b, data...)
}

// AppendOptionUint16 appends an option whose value is one 16-bit number.
func AppendOptionUint16(b []byte, typ uint8, v uint16) []byte {
	return append(b, typ, 4, byte(v>>8), byte(v))
}

// AppendOptionUint32 appends an option whose value is one 32-bit number.
func AppendOptionUint32(b []byte, typ uint8, v uint32) []byte {
	return append(b, typ, 6, byte(v>>24), byte(v>>16), byte(v>>8), byte(v))
}
