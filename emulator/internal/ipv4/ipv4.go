// Package ipv4 builds and checks the few IPv4 packets a subscriber's data
// plane needs: ICMP echo (RFC 792) and UDP (RFC 768), with correct header,
// ICMP and UDP checksums (RFC 1071), so that a BNG that rewrites packets
// (MSS clamping, NAT, TTL) can be caught breaking them.
package ipv4

import (
	"encoding/binary"
	"errors"
	"net/netip"
)

// Protocol numbers.
const (
	ProtoICMP = 1
	ProtoUDP  = 17
)

// HeaderLen is the header without options; we never send options.
const (
	HeaderLen    = 20
	UDPHeaderLen = 8
	ICMPEchoLen  = 8 // type, code, checksum, identifier, sequence
	DefaultTTL   = 64
)

// ICMP types.
const (
	ICMPEchoReply   = 0
	ICMPEchoRequest = 8
)

// Checksum is the Internet checksum (RFC 1071) of b, folded, not inverted,
// continuing from sum.
func Checksum(sum uint32, b []byte) uint32 {
	for len(b) >= 2 {
		sum += uint32(b[0])<<8 | uint32(b[1])
		b = b[2:]
	}
	if len(b) == 1 {
		sum += uint32(b[0]) << 8
	}
	for sum > 0xffff {
		sum = sum>>16 + sum&0xffff
	}
	return sum
}

// Finish inverts a folded sum into the value that goes on the wire.
func Finish(sum uint32) uint16 { return ^uint16(sum) }

// Packet is a decoded IPv4 packet; Payload aliases the input and stops at
// Total Length.
type Packet struct {
	Src, Dst netip.Addr
	Proto    uint8
	TTL      uint8
	ID       uint16
	Payload  []byte
}

// Errors from Parse.
var (
	ErrShort    = errors.New("ipv4: packet too short")
	ErrVersion  = errors.New("ipv4: not version 4")
	ErrLength   = errors.New("ipv4: bad header or total length")
	ErrChecksum = errors.New("ipv4: bad header checksum")
	ErrFragment = errors.New("ipv4: fragment")
)

// Parse checks and decodes an IPv4 header. Fragments are reported as such:
// the emulator's own traffic is never fragmented, so one means the BNG
// fragmented (or mangled) it.
func Parse(b []byte) (Packet, error) {
	ihl, total, err := checkHeader(b)
	if err != nil {
		return Packet{}, err
	}
	if frag := binary.BigEndian.Uint16(b[6:]); frag&0x3fff != 0 { // MF or an offset
		return Packet{}, ErrFragment
	}
	return Packet{
		Src:     netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]}),
		Dst:     netip.AddrFrom4([4]byte{b[16], b[17], b[18], b[19]}),
		Proto:   b[9],
		TTL:     b[8],
		ID:      binary.BigEndian.Uint16(b[4:]),
		Payload: b[ihl:total],
	}, nil
}

// checkHeader checks what every IPv4 header must hold (version, lengths,
// checksum) and returns its header and total lengths.
func checkHeader(b []byte) (ihl, total int, err error) {
	if len(b) < HeaderLen {
		return 0, 0, ErrShort
	}
	if b[0]>>4 != 4 {
		return 0, 0, ErrVersion
	}
	ihl = int(b[0]&0x0f) * 4
	total = int(binary.BigEndian.Uint16(b[2:]))
	if ihl < HeaderLen || total < ihl || total > len(b) {
		return 0, 0, ErrLength
	}
	if Checksum(0, b[:ihl]) != 0xffff {
		return 0, 0, ErrChecksum
	}
	return ihl, total, nil
}

// AppendHeader appends a 20-byte header for a payload of payloadLen bytes,
// with DF set (a subscriber's path MTU discovery would set it too) and the
// header checksum filled in.
func AppendHeader(b []byte, src, dst netip.Addr, proto uint8, id uint16, payloadLen int) []byte {
	off := len(b)
	s, d := src.As4(), dst.As4()
	total := HeaderLen + payloadLen
	b = append(b, 0x45, 0, byte(total>>8), byte(total), byte(id>>8), byte(id), 0x40, 0, DefaultTTL, proto, 0, 0)
	b = append(b, s[:]...)
	b = append(b, d[:]...)
	binary.BigEndian.PutUint16(b[off+10:], Finish(Checksum(0, b[off:off+HeaderLen])))
	return b
}

func pseudoHeaderSum(src, dst netip.Addr, proto uint8, length int) uint32 {
	s, d := src.As4(), dst.As4()
	sum := Checksum(0, s[:])
	sum = Checksum(sum, d[:])
	return sum + uint32(proto) + uint32(length)
}

// AppendUDP appends a whole IPv4/UDP packet.
func AppendUDP(b []byte, src, dst netip.Addr, id, sport, dport uint16, payload []byte) []byte {
	ulen := UDPHeaderLen + len(payload)
	b = AppendHeader(b, src, dst, ProtoUDP, id, ulen)
	off := len(b)
	b = append(b, byte(sport>>8), byte(sport), byte(dport>>8), byte(dport), byte(ulen>>8), byte(ulen), 0, 0)
	b = append(b, payload...)
	c := Finish(Checksum(pseudoHeaderSum(src, dst, ProtoUDP, ulen), b[off:]))
	if c == 0 {
		c = 0xffff // zero means "no checksum" in UDP over IPv4
	}
	binary.BigEndian.PutUint16(b[off+6:], c)
	return b
}

// UDP is a decoded datagram.
type UDP struct {
	SrcPort, DstPort uint16
	Payload          []byte
}

// Errors from ParseUDP / ParseICMP.
var (
	ErrUDPLength     = errors.New("udp: bad length")
	ErrL4Checksum    = errors.New("ipv4: bad UDP/ICMP checksum")
	ErrICMPTruncated = errors.New("icmp: truncated")
)

// ParseUDP checks the UDP length and checksum (zero means none was sent).
func ParseUDP(p Packet) (UDP, error) {
	b := p.Payload
	if len(b) < UDPHeaderLen {
		return UDP{}, ErrUDPLength
	}
	ulen := int(binary.BigEndian.Uint16(b[4:]))
	if ulen < UDPHeaderLen || ulen > len(b) {
		return UDP{}, ErrUDPLength
	}
	if binary.BigEndian.Uint16(b[6:]) != 0 && Checksum(pseudoHeaderSum(p.Src, p.Dst, ProtoUDP, ulen), b[:ulen]) != 0xffff {
		return UDP{}, ErrL4Checksum
	}
	return UDP{SrcPort: binary.BigEndian.Uint16(b), DstPort: binary.BigEndian.Uint16(b[2:]), Payload: b[UDPHeaderLen:ulen]}, nil
}

// ICMPEcho is a decoded echo request or reply.
type ICMPEcho struct {
	Type     uint8
	ID, Seq  uint16
	Data     []byte
	NotEcho  bool // another ICMP type (unreachable, time exceeded...)
	ICMPType uint8
}

// ParseICMP checks the ICMP checksum and decodes an echo message.
func ParseICMP(p Packet) (ICMPEcho, error) {
	b := p.Payload
	if len(b) < ICMPEchoLen {
		return ICMPEcho{}, ErrICMPTruncated
	}
	if Checksum(0, b) != 0xffff {
		return ICMPEcho{}, ErrL4Checksum
	}
	e := ICMPEcho{Type: b[0], ICMPType: b[0], ID: binary.BigEndian.Uint16(b[4:]), Seq: binary.BigEndian.Uint16(b[6:]), Data: b[ICMPEchoLen:]}
	e.NotEcho = (b[0] != ICMPEchoRequest && b[0] != ICMPEchoReply) || b[1] != 0
	return e, nil
}

// AppendICMPEcho appends a whole IPv4/ICMP echo request or reply.
func AppendICMPEcho(b []byte, src, dst netip.Addr, ipID uint16, typ uint8, id, seq uint16, data []byte) []byte {
	b = AppendHeader(b, src, dst, ProtoICMP, ipID, ICMPEchoLen+len(data))
	off := len(b)
	b = append(b, typ, 0, 0, 0, byte(id>>8), byte(id), byte(seq>>8), byte(seq))
	b = append(b, data...)
	binary.BigEndian.PutUint16(b[off+2:], Finish(Checksum(0, b[off:])))
	return b
}
