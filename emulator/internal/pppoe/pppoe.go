// Package pppoe is the PPPoE codec of RFC 2516 (with the PPP-Max-Payload tag
// of RFC 4638): the 6-byte PPPoE header shared by the discovery and session
// stages, and the discovery stage's TLV tags.
//
// Decoding never copies: the returned slices alias the frame. Anything
// malformed (wrong version/type, a length field longer than the frame, a tag
// running past the payload) is an error, so a caller can count the BNG's
// malformed frames instead of acting on them.
package pppoe

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// VerType is the version (1) and type (1) nibbles every PPPoE header carries.
const VerType = 0x11

// HeaderLen is the PPPoE header: ver/type, code, session id, length.
const HeaderLen = 6

// Code is the PPPoE header's code field.
type Code uint8

// Codes (RFC 2516 section 5).
const (
	CodeSession Code = 0x00 // session stage: the payload is a PPP frame
	CodePADO    Code = 0x07
	CodePADI    Code = 0x09
	CodePADR    Code = 0x19
	CodePADS    Code = 0x65
	CodePADT    Code = 0xa7
)

func (c Code) String() string {
	switch c {
	case CodeSession:
		return "session"
	case CodePADO:
		return "PADO"
	case CodePADI:
		return "PADI"
	case CodePADR:
		return "PADR"
	case CodePADS:
		return "PADS"
	case CodePADT:
		return "PADT"
	}
	return fmt.Sprintf("code-0x%02x", uint8(c))
}

// TagType is a discovery tag's type (RFC 2516 appendix A, RFC 4638).
type TagType uint16

// Tag types.
const (
	TagEndOfList        TagType = 0x0000
	TagServiceName      TagType = 0x0101
	TagACName           TagType = 0x0102
	TagHostUniq         TagType = 0x0103
	TagACCookie         TagType = 0x0104
	TagVendorSpecific   TagType = 0x0105
	TagRelaySessionID   TagType = 0x0110
	TagPPPMaxPayload    TagType = 0x0120
	TagServiceNameError TagType = 0x0201
	TagACSystemError    TagType = 0x0202
	TagGenericError     TagType = 0x0203
)

func (t TagType) String() string {
	switch t {
	case TagServiceNameError:
		return "Service-Name-Error"
	case TagACSystemError:
		return "AC-System-Error"
	case TagGenericError:
		return "Generic-Error"
	}
	return fmt.Sprintf("tag-0x%04x", uint16(t))
}

// Header is a decoded PPPoE header; Payload is exactly Length bytes (the
// Ethernet padding after it is cut off).
type Header struct {
	Code      Code
	SessionID uint16
	Payload   []byte
}

// Errors from the decoders.
var (
	ErrShort     = errors.New("pppoe: packet too short")
	ErrVerType   = errors.New("pppoe: version/type is not 1/1")
	ErrLength    = errors.New("pppoe: length field exceeds the frame")
	ErrTagLength = errors.New("pppoe: tag runs past the payload")
)

// Parse decodes the PPPoE header at the start of b (the Ethernet payload).
func Parse(b []byte) (Header, error) {
	if len(b) < HeaderLen {
		return Header{}, ErrShort
	}
	if b[0] != VerType {
		return Header{}, ErrVerType
	}
	n := int(binary.BigEndian.Uint16(b[4:]))
	if n > len(b)-HeaderLen {
		return Header{}, ErrLength
	}
	return Header{Code: Code(b[1]), SessionID: binary.BigEndian.Uint16(b[2:]), Payload: b[HeaderLen : HeaderLen+n]}, nil
}

// AppendHeader appends a PPPoE header with a zero length; SetLength fills it
// in once the payload is appended. It returns the header's offset in b.
func AppendHeader(b []byte, code Code, sessionID uint16) ([]byte, int) {
	off := len(b)
	b = append(b, VerType, byte(code), byte(sessionID>>8), byte(sessionID), 0, 0)
	return b, off
}

// SetLength writes the length of everything after the header at off.
func SetLength(b []byte, off int) {
	binary.BigEndian.PutUint16(b[off+4:], uint16(len(b)-off-HeaderLen))
}

// AppendTag appends one discovery tag.
func AppendTag(b []byte, t TagType, value []byte) []byte {
	b = binary.BigEndian.AppendUint16(b, uint16(t))
	b = binary.BigEndian.AppendUint16(b, uint16(len(value)))
	return append(b, value...)
}

// ForEachTag calls fn for every tag of a discovery payload up to End-Of-List,
// stopping early when fn returns false. It fails on a truncated tag.
func ForEachTag(payload []byte, fn func(t TagType, value []byte) bool) error {
	for len(payload) > 0 {
		if len(payload) < 4 {
			return ErrTagLength
		}
		t := TagType(binary.BigEndian.Uint16(payload))
		n := int(binary.BigEndian.Uint16(payload[2:]))
		if n > len(payload)-4 {
			return ErrTagLength
		}
		if t == TagEndOfList {
			return nil
		}
		if !fn(t, payload[4:4+n]) {
			return nil
		}
		payload = payload[4+n:]
	}
	return nil
}

// MaxServiceNames is how many Service-Name tags of one packet Discovery keeps.
const MaxServiceNames = 8

// Discovery is what a host needs from a PADO or PADS (or what an access
// concentrator needs from a PADI or PADR). Values alias the packet.
type Discovery struct {
	ServiceNames  [MaxServiceNames][]byte
	NServiceNames int
	ACName        []byte
	HasACName     bool
	HostUniq      []byte
	HasHostUniq   bool
	ACCookie      []byte
	HasACCookie   bool
	RelaySession  []byte
	HasRelay      bool
	MaxPayload    uint16
	HasMaxPayload bool
	// ErrorTag is the first error tag (Service-Name-Error, AC-System-Error,
	// Generic-Error), zero when none; ErrorText its UTF-8 text.
	ErrorTag  TagType
	ErrorText []byte
}

// ParseDiscovery decodes the tags of a discovery payload into d.
func ParseDiscovery(payload []byte, d *Discovery) error {
	*d = Discovery{}
	var bad error
	err := ForEachTag(payload, func(t TagType, v []byte) bool {
		switch t {
		case TagServiceName:
			if d.NServiceNames < MaxServiceNames {
				d.ServiceNames[d.NServiceNames] = v
				d.NServiceNames++
			}
		case TagACName:
			if !d.HasACName {
				d.ACName, d.HasACName = v, true
			}
		case TagHostUniq:
			if !d.HasHostUniq {
				d.HostUniq, d.HasHostUniq = v, true
			}
		case TagACCookie:
			if !d.HasACCookie {
				d.ACCookie, d.HasACCookie = v, true
			}
		case TagRelaySessionID:
			if !d.HasRelay {
				d.RelaySession, d.HasRelay = v, true
			}
		case TagPPPMaxPayload:
			if len(v) != 2 {
				bad = fmt.Errorf("pppoe: PPP-Max-Payload of %d bytes", len(v))
				return false
			}
			d.MaxPayload, d.HasMaxPayload = binary.BigEndian.Uint16(v), true
		case TagServiceNameError, TagACSystemError, TagGenericError:
			if d.ErrorTag == 0 {
				d.ErrorTag, d.ErrorText = t, v
			}
		}
		return true
	})
	if err != nil {
		return err
	}
	return bad
}

// OffersService reports whether a Service-Name tag matches name. An empty
// requested name means "any service" (RFC 2516 section 5.1).
func (d *Discovery) OffersService(name string) bool {
	if d.NServiceNames == 0 {
		return false
	}
	if name == "" {
		return true
	}
	for i := 0; i < d.NServiceNames; i++ {
		if string(d.ServiceNames[i]) == name {
			return true
		}
	}
	return false
}
