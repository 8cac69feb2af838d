// Package ipv6cp is the subscriber's IPv6 Control Protocol policy
// (RFC 5072): negotiate the 64-bit Interface-Identifiers that make the
// link-local addresses of both ends. IPv6CP assigns no global address;
// that comes from the router advertisement and DHCPv6 afterwards.
package ipv6cp

import (
	"encoding/binary"
	"net/netip"

	"p4bng/emulator/internal/ppp"
)

// IPv6CP configuration option types.
const (
	OptInterfaceID      = 1
	OptIPv6Compression  = 2
	interfaceIDDataLen  = 8
	linkLocalPrefixHigh = 0xfe80000000000000
)

// Layer receives the This-Layer-* actions.
type Layer interface {
	Up(f *ppp.FSM)
	Down(f *ppp.FSM)
	Started(f *ppp.FSM)
	Finished(f *ppp.FSM)
}

// Random supplies interface identifiers.
type Random interface{ Uint64() uint64 }

// Policy is one session's IPv6CP option state; it implements ppp.Handler.
type Policy struct {
	ev     Layer
	rnd    Random
	iid    uint64
	sendID bool
	peer   uint64
}

// New returns the policy with a random identifier.
func New(ev Layer, rnd Random) *Policy {
	p := &Policy{ev: ev, rnd: rnd}
	p.Reset()
	return p
}

// Reset picks a new identifier for a new negotiation.
func (p *Policy) Reset() {
	p.iid, p.sendID, p.peer = p.newID(0), true, 0
}

// newID returns a random non-zero identifier different from avoid.
func (p *Policy) newID(avoid uint64) uint64 {
	for {
		if v := p.rnd.Uint64(); v != 0 && v != avoid {
			return v
		}
	}
}

// InterfaceID is our identifier.
func (p *Policy) InterfaceID() uint64 { return p.iid }

// PeerInterfaceID is the BNG's identifier.
func (p *Policy) PeerInterfaceID() uint64 { return p.peer }

// LinkLocal is fe80::<our identifier>.
func (p *Policy) LinkLocal() netip.Addr { return LinkLocal(p.iid) }

// LinkLocal is fe80::<iid>.
func LinkLocal(iid uint64) netip.Addr {
	var a [16]byte
	binary.BigEndian.PutUint64(a[:8], linkLocalPrefixHigh)
	binary.BigEndian.PutUint64(a[8:], iid)
	return netip.AddrFrom16(a)
}

// AppendRequest implements ppp.Handler.
func (p *Policy) AppendRequest(b []byte) []byte {
	if p.sendID {
		var v [8]byte
		binary.BigEndian.PutUint64(v[:], p.iid)
		b = ppp.AppendOption(b, OptInterfaceID, v[:])
	}
	return b
}

// BeginRequest implements ppp.Handler.
func (p *Policy) BeginRequest() { p.peer = 0 }

// CheckOption implements ppp.Handler (RFC 5072 4.1): a zero identifier, or
// one equal to ours, is Naked with a fresh suggestion.
func (p *Policy) CheckOption(o ppp.Option, nak []byte) (ppp.Verdict, []byte) {
	if o.Type != OptInterfaceID || len(o.Data) != interfaceIDDataLen {
		return ppp.Reject, nak
	}
	v := binary.BigEndian.Uint64(o.Data)
	if v == 0 || v == p.iid {
		var s [8]byte
		binary.BigEndian.PutUint64(s[:], p.newID(p.iid))
		return ppp.Nak, ppp.AppendOption(nak, OptInterfaceID, s[:])
	}
	p.peer = v
	return ppp.Ack, nak
}

// NakReceived implements ppp.Handler: adopt the suggested identifier unless
// it is zero or the BNG's own.
func (p *Policy) NakReceived(opts []byte) {
	ppp.ForEachOption(opts, func(o ppp.Option) {
		if o.Type == OptInterfaceID && len(o.Data) == interfaceIDDataLen {
			if v := binary.BigEndian.Uint64(o.Data); v != 0 && v != p.peer {
				p.iid = v
			} else {
				p.iid = p.newID(p.peer)
			}
		}
	})
}

// RejectReceived implements ppp.Handler.
func (p *Policy) RejectReceived(opts []byte) {
	ppp.ForEachOption(opts, func(o ppp.Option) {
		if o.Type == OptInterfaceID {
			p.sendID = false
		}
	})
}

// ReceiveOther implements ppp.Handler: IPv6CP has no codes beyond 7.
func (p *Policy) ReceiveOther(*ppp.FSM, ppp.Packet) bool { return false }

// Up implements ppp.Handler.
func (p *Policy) Up(f *ppp.FSM) { p.ev.Up(f) }

// Down implements ppp.Handler.
func (p *Policy) Down(f *ppp.FSM) { p.ev.Down(f) }

// Started implements ppp.Handler.
func (p *Policy) Started(f *ppp.FSM) { p.ev.Started(f) }

// Finished implements ppp.Handler.
func (p *Policy) Finished(f *ppp.FSM) { p.ev.Finished(f) }
