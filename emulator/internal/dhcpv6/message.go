// Package dhcpv6 is the DHCPv6 codec (RFC 8415) and the client side of
// prefix delegation (IA_PD) that a CPE runs over its PPP session.
package dhcpv6

import (
	"encoding/binary"
	"errors"
	"net/netip"
)

// UDP ports.
const (
	ClientPort = 546
	ServerPort = 547
)

// Message types (RFC 8415 section 7.3).
const (
	Solicit     = 1
	Advertise   = 2
	Request     = 3
	Confirm     = 4
	Renew       = 5
	Rebind      = 6
	Reply       = 7
	Release     = 8
	Decline     = 9
	Reconfigure = 10
	InfoRequest = 11
	RelayForw   = 12
	RelayRepl   = 13
)

// Option codes (RFC 8415 section 21, RFC 3646).
const (
	OptClientID    = 1
	OptServerID    = 2
	OptIANA        = 3
	OptORO         = 6
	OptPreference  = 7
	OptElapsedTime = 8
	OptStatusCode  = 13
	OptRapidCommit = 14
	OptDNSServers  = 23
	OptIAPD        = 25
	OptIAPrefix    = 26
)

// Status codes.
const (
	StatusSuccess       = 0
	StatusUnspecFail    = 1
	StatusNoAddrsAvail  = 2
	StatusNoBinding     = 3
	StatusNotOnLink     = 4
	StatusUseMulticast  = 5
	StatusNoPrefixAvail = 6
)

// HeaderLen is msg-type plus the 3-octet transaction-id.
const HeaderLen = 4

// Message is a decoded client/server message; Options aliases the input.
type Message struct {
	Type    uint8
	TxID    uint32 // 24 bits
	Options []byte
}

// Errors from the decoders.
var (
	ErrShort         = errors.New("dhcpv6: message too short")
	ErrOptionLength  = errors.New("dhcpv6: option runs past its container")
	ErrIAPDMalformed = errors.New("dhcpv6: malformed IA_PD")
)

// Parse decodes a message and validates its option list.
func Parse(b []byte) (Message, error) {
	if len(b) < HeaderLen {
		return Message{}, ErrShort
	}
	m := Message{Type: b[0], TxID: uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3]), Options: b[HeaderLen:]}
	if err := ValidateOptions(m.Options); err != nil {
		return Message{}, err
	}
	return m, nil
}

// ValidateOptions checks an option list's lengths.
func ValidateOptions(opts []byte) error {
	for len(opts) > 0 {
		if len(opts) < 4 {
			return ErrOptionLength
		}
		n := int(binary.BigEndian.Uint16(opts[2:]))
		if n > len(opts)-4 {
			return ErrOptionLength
		}
		opts = opts[4+n:]
	}
	return nil
}

// ForEachOption walks a validated option list.
func ForEachOption(opts []byte, fn func(code uint16, data []byte)) {
	for len(opts) >= 4 {
		n := int(binary.BigEndian.Uint16(opts[2:]))
		if n > len(opts)-4 {
			return
		}
		fn(binary.BigEndian.Uint16(opts), opts[4:4+n])
		opts = opts[4+n:]
	}
}

// FindOption returns the first option with code.
func FindOption(opts []byte, code uint16) ([]byte, bool) {
	var out []byte
	found := false
	ForEachOption(opts, func(c uint16, d []byte) {
		if !found && c == code {
			out, found = d, true
		}
	})
	return out, found
}

// AppendHeader appends msg-type and transaction-id.
func AppendHeader(b []byte, typ uint8, txid uint32) []byte {
	return append(b, typ, byte(txid>>16), byte(txid>>8), byte(txid))
}

// AppendOption appends one option.
func AppendOption(b []byte, code uint16, data []byte) []byte {
	b = binary.BigEndian.AppendUint16(b, code)
	b = binary.BigEndian.AppendUint16(b, uint16(len(data)))
	return append(b, data...)
}

// DUIDLL is a DUID based on the link-layer address (type 3, Ethernet).
func DUIDLL(mac [6]byte) []byte {
	return append([]byte{0, 3, 0, 1}, mac[:]...)
}

// Status is a decoded Status Code option.
type Status struct {
	Code    uint16
	Message string
	Present bool
}

// ParseStatus reads a Status Code option's value.
func ParseStatus(d []byte) Status {
	if len(d) < 2 {
		return Status{Code: StatusUnspecFail, Present: true}
	}
	return Status{Code: binary.BigEndian.Uint16(d), Message: string(d[2:]), Present: true}
}

// IAPrefix is one delegated prefix.
type IAPrefix struct {
	Preferred, Valid uint32
	Prefix           netip.Prefix
}

// IAPD is a decoded IA_PD option.
type IAPD struct {
	IAID, T1, T2 uint32
	Prefixes     []IAPrefix
	Status       Status
}

// ParseIAPD decodes an IA_PD option's value with its IA Prefix options.
func ParseIAPD(d []byte) (IAPD, error) {
	if len(d) < 12 {
		return IAPD{}, ErrIAPDMalformed
	}
	ia := IAPD{IAID: binary.BigEndian.Uint32(d), T1: binary.BigEndian.Uint32(d[4:]), T2: binary.BigEndian.Uint32(d[8:])}
	if ValidateOptions(d[12:]) != nil {
		return IAPD{}, ErrIAPDMalformed
	}
	var bad error
	ForEachOption(d[12:], func(code uint16, v []byte) {
		switch code {
		case OptIAPrefix:
			if len(v) < 25 {
				bad = ErrIAPDMalformed
				return
			}
			var a [16]byte
			copy(a[:], v[9:25])
			p, err := netip.AddrFrom16(a).Prefix(int(v[8]))
			if err != nil || p.Addr() != netip.AddrFrom16(a) {
				bad = ErrIAPDMalformed // host bits set, or a length beyond 128
				return
			}
			ia.Prefixes = append(ia.Prefixes, IAPrefix{Preferred: binary.BigEndian.Uint32(v), Valid: binary.BigEndian.Uint32(v[4:]), Prefix: p})
		case OptStatusCode:
			ia.Status = ParseStatus(v)
		}
	})
	return ia, bad
}

// AppendIAPD appends an IA_PD option with its prefixes.
func AppendIAPD(b []byte, ia IAPD) []byte {
	var v []byte
	v = binary.BigEndian.AppendUint32(v, ia.IAID)
	v = binary.BigEndian.AppendUint32(v, ia.T1)
	v = binary.BigEndian.AppendUint32(v, ia.T2)
	for _, p := range ia.Prefixes {
		var pv []byte
		pv = binary.BigEndian.AppendUint32(pv, p.Preferred)
		pv = binary.BigEndian.AppendUint32(pv, p.Valid)
		pv = append(pv, byte(p.Prefix.Bits()))
		a := p.Prefix.Addr().As16()
		pv = append(pv, a[:]...)
		v = AppendOption(v, OptIAPrefix, pv)
	}
	if ia.Status.Present {
		sv := binary.BigEndian.AppendUint16(nil, ia.Status.Code)
		v = AppendOption(v, OptStatusCode, append(sv, ia.Status.Message...))
	}
	return AppendOption(b, OptIAPD, v)
}
