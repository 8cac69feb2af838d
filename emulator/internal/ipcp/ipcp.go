// Package ipcp is the subscriber's IP Control Protocol policy (RFC 1332,
// with the DNS options of RFC 1877): ask for IP-Address 0.0.0.0 and both DNS
// servers, take the values the BNG Naks back, Ack the BNG's own address,
// Reject IP compression (and anything else). It plugs into ppp.FSM.
package ipcp

import (
	"net/netip"

	"p4bng/emulator/internal/ppp"
)

// IPCP configuration option types.
const (
	OptIPAddresses    = 1 // deprecated, RFC 1172
	OptIPCompression  = 2
	OptIPAddress      = 3
	OptPrimaryDNS     = 129
	OptPrimaryNBNS    = 130
	OptSecondaryDNS   = 131
	OptSecondaryNBNS  = 132
	addrOptionDataLen = 4
)

// Layer receives the This-Layer-* actions.
type Layer interface {
	Up(f *ppp.FSM)
	Down(f *ppp.FSM)
	Started(f *ppp.FSM)
	Finished(f *ppp.FSM)
}

// Policy is one session's IPCP option state; it implements ppp.Handler.
type Policy struct {
	ev       Layer
	sendAddr bool
	sendDNS1 bool
	sendDNS2 bool
	addr     [4]byte // ours: 0.0.0.0 until the BNG Naks an address
	dns1     [4]byte
	dns2     [4]byte
	peer     [4]byte // the BNG's address from its request
}

// New returns the policy for a fresh negotiation.
func New(ev Layer, wantDNS bool) *Policy {
	p := &Policy{ev: ev}
	p.Reset(wantDNS)
	return p
}

// Reset starts over: ask for an address (and DNS servers if wantDNS).
func (p *Policy) Reset(wantDNS bool) {
	*p = Policy{ev: p.ev, sendAddr: true, sendDNS1: wantDNS, sendDNS2: wantDNS}
}

// Address is our negotiated address (invalid-zero until the BNG gave one).
func (p *Policy) Address() netip.Addr { return netip.AddrFrom4(p.addr) }

// PeerAddress is the BNG's address from its request.
func (p *Policy) PeerAddress() netip.Addr { return netip.AddrFrom4(p.peer) }

// DNS returns the DNS servers the BNG gave (zero, one or two).
func (p *Policy) DNS() []netip.Addr {
	var out []netip.Addr
	for _, d := range [][4]byte{p.dns1, p.dns2} {
		if d != ([4]byte{}) {
			out = append(out, netip.AddrFrom4(d))
		}
	}
	return out
}

// AppendRequest implements ppp.Handler.
func (p *Policy) AppendRequest(b []byte) []byte {
	if p.sendAddr {
		b = ppp.AppendOption(b, OptIPAddress, p.addr[:])
	}
	if p.sendDNS1 {
		b = ppp.AppendOption(b, OptPrimaryDNS, p.dns1[:])
	}
	if p.sendDNS2 {
		b = ppp.AppendOption(b, OptSecondaryDNS, p.dns2[:])
	}
	return b
}

// BeginRequest implements ppp.Handler.
func (p *Policy) BeginRequest() { p.peer = [4]byte{} }

// CheckOption implements ppp.Handler: only the BNG's own, non-zero
// IP-Address is acceptable; we have no address to offer it, no compression
// and no servers to announce.
func (p *Policy) CheckOption(o ppp.Option, nak []byte) (ppp.Verdict, []byte) {
	if o.Type == OptIPAddress && len(o.Data) == addrOptionDataLen {
		var a [4]byte
		copy(a[:], o.Data)
		if a != ([4]byte{}) {
			p.peer = a
			return ppp.Ack, nak
		}
	}
	return ppp.Reject, nak
}

// NakReceived implements ppp.Handler: adopt what the BNG assigns.
func (p *Policy) NakReceived(opts []byte) {
	ppp.ForEachOption(opts, func(o ppp.Option) {
		if len(o.Data) != addrOptionDataLen {
			return
		}
		switch {
		case o.Type == OptIPAddress && p.sendAddr:
			copy(p.addr[:], o.Data)
		case o.Type == OptPrimaryDNS && p.sendDNS1:
			copy(p.dns1[:], o.Data)
		case o.Type == OptSecondaryDNS && p.sendDNS2:
			copy(p.dns2[:], o.Data)
		}
	})
}

// RejectReceived implements ppp.Handler.
func (p *Policy) RejectReceived(opts []byte) {
	ppp.ForEachOption(opts, func(o ppp.Option) {
		switch o.Type {
		case OptIPAddress:
			p.sendAddr = false
		case OptPrimaryDNS:
			p.sendDNS1, p.dns1 = false, [4]byte{}
		case OptSecondaryDNS:
			p.sendDNS2, p.dns2 = false, [4]byte{}
		}
	})
}

// ReceiveOther implements ppp.Handler: IPCP has no codes beyond 7.
func (p *Policy) ReceiveOther(*ppp.FSM, ppp.Packet) bool { return false }

// Up implements ppp.Handler.
func (p *Policy) Up(f *ppp.FSM) { p.ev.Up(f) }

// Down implements ppp.Handler.
func (p *Policy) Down(f *ppp.FSM) { p.ev.Down(f) }

// Started implements ppp.Handler.
func (p *Policy) Started(f *ppp.FSM) { p.ev.Started(f) }

// Finished implements ppp.Handler.
func (p *Policy) Finished(f *ppp.FSM) { p.ev.Finished(f) }
