// Package lcp is the subscriber's Link Control Protocol policy (RFC 1661
// section 6, with the PPPoE restrictions of RFC 2516 section 7): which
// options we ask for (MRU, Magic-Number), which of the BNG's we accept
// (MRU, Magic-Number, the Authentication-Protocol we can do), and LCP's own
// packets (Echo, Protocol-Reject, Discard). It plugs into ppp.FSM.
package lcp

import (
	"encoding/binary"

	"p4bng/emulator/internal/auth"
	"p4bng/emulator/internal/ppp"
)

// LCP configuration option types.
const (
	OptMRU          = 1
	OptACCM         = 2
	OptAuthProtocol = 3
	OptQuality      = 4
	OptMagic        = 5
	OptPFC          = 7
	OptACFC         = 8
)

// DefaultMRU is what PPP assumes when no MRU is negotiated; PPPoE's own
// limit is 1492 unless RFC 4638's PPP-Max-Payload raised it.
const (
	DefaultMRU = 1500
	PPPoEMRU   = 1492
	MinMRU     = 64
)

// LoopbackLimit is how many times in a row the peer may echo our own
// Magic-Number before we conclude the line is looped back.
const LoopbackLimit = 5

// Config is the LCP policy shared by all sessions.
type Config struct {
	MRU        uint16        // the MRU we request
	MaxPeerMRU uint16        // the largest MRU we let the peer request (what the link carries)
	Allowed    []auth.Method // acceptable authentication methods, preferred first
}

// Events receives what LCP learns beyond the This-Layer-* actions.
type Events interface {
	Up(f *ppp.FSM)
	Down(f *ppp.FSM)
	Started(f *ppp.FSM)
	Finished(f *ppp.FSM)
	EchoReply(id uint8, magic uint32)
	EchoRequestAnswered()
	ProtocolRejected(p ppp.Protocol)
	LoopbackDetected()
}

// Random supplies Magic-Numbers.
type Random interface{ Uint32() uint32 }

// Policy is one session's LCP option state. It implements ppp.Handler.
type Policy struct {
	cfg *Config
	ev  Events
	rnd Random

	limit     uint16 // the MRU we ask for on this session (PPP-Max-Payload may raise it)
	peerLimit uint16 // the largest MRU we let the peer ask for on this session
	mru       uint16 // our requested MRU
	sendMRU   bool
	magic     uint32 // our Magic-Number, 0 once the peer rejected it
	sendMagic bool
	loops     int // consecutive Configure-Requests carrying our magic

	PeerMRU   uint16      // the most we may send (from the peer's request)
	PeerMagic uint32      // the peer's Magic-Number, 0 if none
	Auth      auth.Method // the method the peer asked for and we accepted
}

// New returns the policy for a fresh LCP negotiation.
func New(cfg *Config, ev Events, rnd Random) *Policy {
	p := &Policy{cfg: cfg, ev: ev, rnd: rnd}
	p.Reset()
	return p
}

// Reset forgets everything negotiated, for a new PPP session.
func (p *Policy) Reset() {
	p.limit, p.peerLimit = p.cfg.MRU, p.cfg.MaxPeerMRU
	p.mru, p.sendMRU = p.cfg.MRU, true
	p.magic, p.sendMagic = p.newMagic(), true
	p.loops = 0
	p.PeerMRU, p.PeerMagic, p.Auth = p.defaultPeerMRU(), 0, auth.None
}

// SetMRU overrides the configured MRU limits for this session, after
// discovery showed whether RFC 4638's PPP-Max-Payload applies. Call it
// before LCP starts.
func (p *Policy) SetMRU(mru, maxPeer uint16) {
	p.limit, p.peerLimit, p.mru = mru, maxPeer, mru
	p.PeerMRU = p.defaultPeerMRU()
}

// Magic is our Magic-Number (0 when not negotiated).
func (p *Policy) Magic() uint32 { return p.magic }

// MRU is the MRU we asked for (and the peer acked, once LCP is up).
func (p *Policy) MRU() uint16 { return p.mru }

func (p *Policy) defaultPeerMRU() uint16 {
	if p.peerLimit < DefaultMRU {
		return p.peerLimit
	}
	return DefaultMRU
}

// newMagic picks a non-zero random number (zero is not a valid magic).
func (p *Policy) newMagic() uint32 {
	for {
		if m := p.rnd.Uint32(); m != 0 {
			return m
		}
	}
}

// AppendRequest implements ppp.Handler.
func (p *Policy) AppendRequest(b []byte) []byte {
	if p.sendMRU {
		b = ppp.AppendOptionUint16(b, OptMRU, p.mru)
	}
	if p.sendMagic {
		b = ppp.AppendOptionUint32(b, OptMagic, p.magic)
	}
	return b
}

// BeginRequest implements ppp.Handler: values not in the new request fall
// back to their defaults.
func (p *Policy) BeginRequest() {
	p.PeerMRU, p.PeerMagic, p.Auth = p.defaultPeerMRU(), 0, auth.None
}

// CheckOption implements ppp.Handler.
func (p *Policy) CheckOption(o ppp.Option, nak []byte) (ppp.Verdict, []byte) {
	switch o.Type {
	case OptMRU:
		if len(o.Data) != 2 {
			return ppp.Reject, nak
		}
		v := binary.BigEndian.Uint16(o.Data)
		if v > p.peerLimit { // RFC 2516 7: no more than 1492 over PPPoE
			return ppp.Nak, ppp.AppendOptionUint16(nak, OptMRU, p.peerLimit)
		}
		if v < MinMRU {
			return ppp.Nak, ppp.AppendOptionUint16(nak, OptMRU, MinMRU)
		}
		p.PeerMRU = v
		return ppp.Ack, nak
	case OptMagic:
		if len(o.Data) != 4 {
			return ppp.Reject, nak
		}
		v := binary.BigEndian.Uint32(o.Data)
		if v == 0 { // RFC 1661 6.4: zero is illegal and always Naked
			return ppp.Nak, ppp.AppendOptionUint32(nak, OptMagic, p.newMagic())
		}
		if p.sendMagic && v == p.magic {
			// Possibly looped back: suggest another number for the peer
			// and take a new one ourselves (RFC 1661 6.4).
			p.loops++
			if p.loops >= LoopbackLimit {
				p.ev.LoopbackDetected()
			}
			p.magic = p.newMagic()
			return ppp.Nak, ppp.AppendOptionUint32(nak, OptMagic, p.newMagic())
		}
		p.loops = 0
		p.PeerMagic = v
		return ppp.Ack, nak
	case OptAuthProtocol:
		if m, ok := auth.MethodFromOption(o.Data); ok && p.allowed(m) {
			p.Auth = m
			return ppp.Ack, nak
		}
		if len(p.cfg.Allowed) == 0 {
			return ppp.Reject, nak
		}
		return ppp.Nak, ppp.AppendOption(nak, OptAuthProtocol, p.cfg.Allowed[0].OptionData())
	}
	// ACCM, ACFC and PFC must not be used over PPPoE (RFC 2516 7); Quality
	// and anything unknown we do not implement.
	return ppp.Reject, nak
}

func (p *Policy) allowed(m auth.Method) bool {
	for _, a := range p.cfg.Allowed {
		if a == m {
			return true
		}
	}
	return false
}

// NakReceived implements ppp.Handler.
func (p *Policy) NakReceived(opts []byte) {
	ppp.ForEachOption(opts, func(o ppp.Option) {
		switch o.Type {
		case OptMRU:
			if len(o.Data) == 2 {
				if v := binary.BigEndian.Uint16(o.Data); v >= MinMRU && v <= p.limit {
					p.mru = v
				}
			}
		case OptMagic:
			p.magic = p.newMagic()
		}
	})
}

// RejectReceived implements ppp.Handler.
func (p *Policy) RejectReceived(opts []byte) {
	ppp.ForEachOption(opts, func(o ppp.Option) {
		switch o.Type {
		case OptMRU:
			p.sendMRU, p.mru = false, DefaultMRU
		case OptMagic:
			p.sendMagic, p.magic = false, 0
		}
	})
}

// ReceiveOther implements ppp.Handler: LCP codes 8-13.
func (p *Policy) ReceiveOther(f *ppp.FSM, pkt ppp.Packet) bool {
	switch pkt.Code {
	case ppp.ProtocolReject:
		if len(pkt.Data) >= 2 && f.State() == ppp.Opened {
			p.ev.ProtocolRejected(ppp.Protocol(binary.BigEndian.Uint16(pkt.Data)))
		}
		return true
	case ppp.EchoRequest:
		if f.State() != ppp.Opened || len(pkt.Data) < 4 {
			return true // RFC 1661 5.8: only answered in Opened
		}
		if m := binary.BigEndian.Uint32(pkt.Data); m != 0 && m == p.magic && p.sendMagic {
			p.ev.LoopbackDetected()
			return true
		}
		p.sendEcho(f, ppp.EchoReply, pkt.ID, pkt.Data[4:])
		p.ev.EchoRequestAnswered()
		return true
	case ppp.EchoReply:
		if f.State() == ppp.Opened && len(pkt.Data) >= 4 {
			m := binary.BigEndian.Uint32(pkt.Data)
			if m != 0 && m == p.magic && p.sendMagic {
				p.ev.LoopbackDetected()
				return true
			}
			p.ev.EchoReply(pkt.ID, m)
		}
		return true
	case ppp.DiscardRequest, ppp.Identification, ppp.TimeRemaining:
		return true
	}
	return false
}

// SendEchoRequest sends an LCP Echo-Request and returns its Identifier.
func (p *Policy) SendEchoRequest(f *ppp.FSM) uint8 {
	id := f.NewID()
	p.sendEcho(f, ppp.EchoRequest, id, nil)
	return id
}

func (p *Policy) sendEcho(f *ppp.FSM, code ppp.Code, id uint8, data []byte) {
	var buf [64]byte
	b := buf[:0]
	if len(data) > len(buf)-4 {
		b = make([]byte, 0, 4+len(data)) // a reply carries the request's data whole
	}
	b = binary.BigEndian.AppendUint32(b, p.magic)
	b = append(b, data...)
	f.SendPacket(code, id, b)
}

// SendProtocolReject rejects a packet of a protocol we do not run (only
// meaningful in Opened, RFC 1661 5.7).
func (p *Policy) SendProtocolReject(f *ppp.FSM, frame []byte) {
	if f.State() != ppp.Opened {
		return
	}
	const maxRejected = 1400
	if len(frame) > maxRejected {
		frame = frame[:maxRejected]
	}
	f.SendPacket(ppp.ProtocolReject, f.NewID(), frame)
}

// Up, Down, Started and Finished forward the This-Layer-* actions.
func (p *Policy) Up(f *ppp.FSM) { p.ev.Up(f) }

// Down implements ppp.Handler.
func (p *Policy) Down(f *ppp.FSM) { p.ev.Down(f) }

// Started implements ppp.Handler.
func (p *Policy) Started(f *ppp.FSM) { p.ev.Started(f) }

// Finished implements ppp.Handler.
func (p *Policy) Finished(f *ppp.FSM) { p.ev.Finished(f) }
