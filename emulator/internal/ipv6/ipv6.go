// Package ipv6 builds and checks the IPv6 packets a PPP subscriber sends and
// receives around address configuration: the IPv6 header, ICMPv6 Router
// Solicitation / Advertisement (RFC 4861) and echo, and UDP (for DHCPv6),
// with the pseudo-header checksums of RFC 8200 section 8.1.
package ipv6

import (
	"encoding/binary"
	"errors"
	"net/netip"

	"p4bng/emulator/internal/ipv4"
)

// Next-header values and sizes.
const (
	ProtoUDP    = 17
	ProtoICMPv6 = 58
	HeaderLen   = 40
	UDPLen      = 8
)

// ICMPv6 types.
const (
	ICMPEchoRequest   = 128
	ICMPEchoReply     = 129
	RouterSolicit     = 133
	RouterAdvertise   = 134
	NDHopLimit        = 255 // RFC 4861: ND messages are only valid with hop limit 255
	optPrefixInfo     = 3
	optMTU            = 5
	optRDNSS          = 25 // RFC 8106
	prefixInfoLen     = 32
	prefixFlagOnLink  = 0x80
	prefixFlagAutoCfg = 0x40
	raFlagManaged     = 0x80
	raFlagOther       = 0x40
)

// Well-known addresses.
var (
	AllRouters     = netip.MustParseAddr("ff02::2")
	AllNodes       = netip.MustParseAddr("ff02::1")
	AllDHCPServers = netip.MustParseAddr("ff02::1:2") // All_DHCP_Relay_Agents_and_Servers
)

// Packet is a decoded IPv6 packet (no extension headers are followed).
type Packet struct {
	Src, Dst   netip.Addr
	NextHeader uint8
	HopLimit   uint8
	Payload    []byte
}

// Errors from the decoders.
var (
	ErrShort    = errors.New("ipv6: packet too short")
	ErrVersion  = errors.New("ipv6: not version 6")
	ErrLength   = errors.New("ipv6: payload length exceeds the packet")
	ErrChecksum = errors.New("ipv6: bad upper-layer checksum")
	ErrMessage  = errors.New("ipv6: malformed message")
)

// Parse decodes the fixed header; Payload stops at Payload Length.
func Parse(b []byte) (Packet, error) {
	if len(b) < HeaderLen {
		return Packet{}, ErrShort
	}
	if b[0]>>4 != 6 {
		return Packet{}, ErrVersion
	}
	n := int(binary.BigEndian.Uint16(b[4:]))
	if n > len(b)-HeaderLen {
		return Packet{}, ErrLength
	}
	var s, d [16]byte
	copy(s[:], b[8:24])
	copy(d[:], b[24:40])
	return Packet{Src: netip.AddrFrom16(s), Dst: netip.AddrFrom16(d), NextHeader: b[6], HopLimit: b[7], Payload: b[HeaderLen : HeaderLen+n]}, nil
}

// AppendHeader appends the fixed header.
func AppendHeader(b []byte, src, dst netip.Addr, next, hopLimit uint8, payloadLen int) []byte {
	s, d := src.As16(), dst.As16()
	b = append(b, 0x60, 0, 0, 0, byte(payloadLen>>8), byte(payloadLen), next, hopLimit)
	b = append(b, s[:]...)
	return append(b, d[:]...)
}

func pseudoSum(src, dst netip.Addr, next uint8, length int) uint32 {
	s, d := src.As16(), dst.As16()
	sum := ipv4.Checksum(0, s[:])
	sum = ipv4.Checksum(sum, d[:])
	return sum + uint32(length>>16) + uint32(length&0xffff) + uint32(next)
}

// UpperChecksumOK verifies the checksum of an ICMPv6 or UDP payload.
func UpperChecksumOK(p Packet) bool {
	return ipv4.Checksum(pseudoSum(p.Src, p.Dst, p.NextHeader, len(p.Payload)), p.Payload) == 0xffff
}

// AppendICMPv6 appends a whole packet: header plus an ICMPv6 message whose
// type, code and body are given; the checksum is computed.
func AppendICMPv6(b []byte, src, dst netip.Addr, hopLimit, typ, code uint8, body []byte) []byte {
	b = AppendHeader(b, src, dst, ProtoICMPv6, hopLimit, 4+len(body))
	off := len(b)
	b = append(b, typ, code, 0, 0)
	b = append(b, body...)
	c := ipv4.Finish(ipv4.Checksum(pseudoSum(src, dst, ProtoICMPv6, len(b)-off), b[off:]))
	binary.BigEndian.PutUint16(b[off+2:], c)
	return b
}

// AppendRouterSolicit appends an RS from src to all-routers. A PPP link has
// no link-layer address, so no Source Link-Layer Address option (RFC 4861
// 4.1: it is only included when the link has addresses).
func AppendRouterSolicit(b []byte, src netip.Addr) []byte {
	return AppendICMPv6(b, src, AllRouters, NDHopLimit, RouterSolicit, 0, []byte{0, 0, 0, 0})
}

// AppendUDP appends a whole IPv6/UDP packet.
func AppendUDP(b []byte, src, dst netip.Addr, hopLimit uint8, sport, dport uint16, payload []byte) []byte {
	ulen := UDPLen + len(payload)
	b = AppendHeader(b, src, dst, ProtoUDP, hopLimit, ulen)
	off := len(b)
	b = append(b, byte(sport>>8), byte(sport), byte(dport>>8), byte(dport), byte(ulen>>8), byte(ulen), 0, 0)
	b = append(b, payload...)
	c := ipv4.Finish(ipv4.Checksum(pseudoSum(src, dst, ProtoUDP, ulen), b[off:]))
	if c == 0 {
		c = 0xffff
	}
	binary.BigEndian.PutUint16(b[off+6:], c)
	return b
}

// UDP is a decoded datagram.
type UDP struct {
	SrcPort, DstPort uint16
	Payload          []byte
}

// ParseUDP checks length and checksum (mandatory over IPv6).
func ParseUDP(p Packet) (UDP, error) {
	b := p.Payload
	if len(b) < UDPLen || int(binary.BigEndian.Uint16(b[4:])) != len(b) {
		return UDP{}, ErrMessage
	}
	if !UpperChecksumOK(p) {
		return UDP{}, ErrChecksum
	}
	return UDP{SrcPort: binary.BigEndian.Uint16(b), DstPort: binary.BigEndian.Uint16(b[2:]), Payload: b[UDPLen:]}, nil
}

// RA is what a host takes from a Router Advertisement.
type RA struct {
	Managed, Other bool // M and O flags: use DHCPv6 for addresses / other config
	RouterLifetime uint16
	Prefix         netip.Prefix // the first on-link prefix with the A flag, if any
	HasPrefix      bool
	MTU            uint32
	DNS            []netip.Addr
}

// ParseRA validates a Router Advertisement as RFC 4861 6.1.2 requires of a
// host (link-local source, hop limit 255, code 0, checksum, option lengths)
// and decodes it.
func ParseRA(p Packet) (RA, error) {
	b := p.Payload
	if p.NextHeader != ProtoICMPv6 || len(b) < 16 || b[0] != RouterAdvertise {
		return RA{}, ErrMessage
	}
	if p.HopLimit != NDHopLimit || b[1] != 0 || !p.Src.IsLinkLocalUnicast() {
		return RA{}, ErrMessage
	}
	if !UpperChecksumOK(p) {
		return RA{}, ErrChecksum
	}
	ra := RA{Managed: b[5]&raFlagManaged != 0, Other: b[5]&raFlagOther != 0, RouterLifetime: binary.BigEndian.Uint16(b[6:])}
	for opts := b[16:]; len(opts) > 0; {
		if len(opts) < 2 || opts[1] == 0 || int(opts[1])*8 > len(opts) {
			return RA{}, ErrMessage
		}
		o := opts[:int(opts[1])*8]
		opts = opts[len(o):]
		switch o[0] {
		case optPrefixInfo:
			if len(o) != prefixInfoLen {
				return RA{}, ErrMessage
			}
			plen, flags := int(o[2]), o[3]
			var a [16]byte
			copy(a[:], o[16:32])
			pfx, err := netip.AddrFrom16(a).Prefix(plen)
			if err != nil || plen > 128 {
				return RA{}, ErrMessage
			}
			if flags&prefixFlagAutoCfg != 0 && !ra.HasPrefix && !pfx.Addr().IsLinkLocalUnicast() {
				ra.Prefix, ra.HasPrefix = pfx, true
			}
		case optMTU:
			if len(o) == 8 {
				ra.MTU = binary.BigEndian.Uint32(o[4:])
			}
		case optRDNSS:
			for s := o[8:]; len(s) >= 16; s = s[16:] {
				var a [16]byte
				copy(a[:], s[:16])
				ra.DNS = append(ra.DNS, netip.AddrFrom16(a))
			}
		}
	}
	return ra, nil
}

// SLAAC forms prefix::iid from a /64 (RFC 4862 5.5.3).
func SLAAC(prefix netip.Prefix, iid uint64) (netip.Addr, bool) {
	if prefix.Bits() != 64 {
		return netip.Addr{}, false
	}
	a := prefix.Addr().As16()
	binary.BigEndian.PutUint64(a[8:], iid)
	return netip.AddrFrom16(a), true
}

// AppendRA builds a Router Advertisement with one prefix (used by tests
// and the fake access concentrator).
func AppendRA(b []byte, src, dst netip.Addr, prefix netip.Prefix, autoconf bool) []byte {
	body := make([]byte, 0, 12+prefixInfoLen)
	body = append(body, 64, 0, 0x07, 0x08, 0, 0, 0, 0, 0, 0, 0, 0) // hop limit, flags, lifetime 1800, timers
	flags := byte(prefixFlagOnLink)
	if autoconf {
		flags |= prefixFlagAutoCfg
	}
	body = append(body, optPrefixInfo, 4, byte(prefix.Bits()), flags, 0, 0, 0x0e, 0x10, 0, 0, 0x07, 0x08, 0, 0, 0, 0)
	a := prefix.Addr().As16()
	body = append(body, a[:]...)
	return AppendICMPv6(b, src, dst, NDHopLimit, RouterAdvertise, 0, body)
}
