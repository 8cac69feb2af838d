package session

// PPPoE discovery (RFC 2516 section 5) from the host side: PADI with
// back-off, the first acceptable PADO, PADR, PADS; PADT both ways.

import (
	"encoding/binary"
	"time"

	"p4bng/emulator/internal/ethernet"
	"p4bng/emulator/internal/pppoe"
)

func (s *Session) hostUniq() [HostUniqLen]byte {
	var v [HostUniqLen]byte
	binary.BigEndian.PutUint32(v[:], uint32(s.Index))
	binary.BigEndian.PutUint32(v[4:], s.attempt)
	return v
}

// DefaultDiscoveryMaxWait caps the PADI/PADR back-off when the
// configuration does not.
const DefaultDiscoveryMaxWait = 64 * time.Second

func (s *Session) backoff() time.Duration {
	max := s.cfg.DiscoveryMaxWait
	if max <= 0 {
		max = DefaultDiscoveryMaxWait
	}
	d := s.cfg.DiscoveryTimeout << uint(s.tries-1)
	if d > max || d <= 0 {
		d = max
	}
	return d
}

// discover begins a discovery exchange, PADI first, under a new Host-Uniq
// (attempt number): replies to an earlier exchange no longer match.
func (s *Session) discover() {
	s.attempt++
	s.phase, s.tries = Discovery, 0
	s.acMAC, s.acName, s.cookie, s.relay = ethernet.MAC{}, "", nil, nil
	s.sendPADI()
}

// padrExhausted starts discovery over with a PADI once the PADRs went
// unanswered (RFC 2516 section 7: "After a specified number of retries,
// the Host SHOULD then resend a PADI packet"), rather than giving up while
// the setup timer still runs: the AC that took our PADR may be gone, or
// only its PADS were lost. The new Host-Uniq makes the old exchange's late
// PADS harmless; the AC times out the session it opened.
func (s *Session) padrExhausted() {
	s.env.Stats().DiscoveryRestarts++
	s.discover()
}

func (s *Session) sendDiscovery(code pppoe.Code, dst ethernet.MAC) {
	s.tries++
	if s.tries > 1 {
		s.env.Stats().DiscoveryRetransmissions++
	}
	b := ethernet.AppendHeader(s.env.TxBuf(), dst, s.MAC, s.Line, ethernet.TypePPPoEDiscovery)
	b, off := pppoe.AppendHeader(b, code, 0)
	b = pppoe.AppendTag(b, pppoe.TagServiceName, []byte(s.cfg.ServiceName))
	hu := s.hostUniq()
	b = pppoe.AppendTag(b, pppoe.TagHostUniq, hu[:])
	if s.cfg.MaxPayload > 0 {
		b = pppoe.AppendTag(b, pppoe.TagPPPMaxPayload, []byte{byte(s.cfg.MaxPayload >> 8), byte(s.cfg.MaxPayload)})
	}
	if code == pppoe.CodePADR {
		if s.cookie != nil {
			b = pppoe.AppendTag(b, pppoe.TagACCookie, s.cookie)
		}
		if s.relay != nil {
			b = pppoe.AppendTag(b, pppoe.TagRelaySessionID, s.relay)
		}
	}
	pppoe.SetLength(b, off)
	s.env.SendControl(ethernet.Pad(b))
	s.tStep.Reset(s.backoff())
}

func (s *Session) sendPADI() { s.sendDiscovery(pppoe.CodePADI, ethernet.Broadcast) }
func (s *Session) sendPADR() { s.sendDiscovery(pppoe.CodePADR, s.acMAC) }

func (s *Session) sendPADT() {
	b := ethernet.AppendHeader(s.env.TxBuf(), s.acMAC, s.MAC, s.Line, ethernet.TypePPPoEDiscovery)
	b, off := pppoe.AppendHeader(b, pppoe.CodePADT, s.sid)
	pppoe.SetLength(b, off)
	s.env.SendControl(ethernet.Pad(b))
}

// HandleDiscovery processes a PADO, PADS or PADT the emulator routed to
// this session (by Host-Uniq, or by MAC and session id for PADT).
func (s *Session) HandleDiscovery(src ethernet.MAC, h pppoe.Header, d *pppoe.Discovery) {
	defer s.settle()
	if h.Code == pppoe.CodePADT {
		if s.sid != 0 && h.SessionID == s.sid && src == s.acMAC && s.phase > Requesting && s.phase < Done {
			s.down(ReasonPADT, false)
		}
		return
	}
	if d.HasHostUniq {
		if _, attempt, ok := DecodeHostUniq(d.HostUniq); !ok || attempt != s.attempt {
			return // for an earlier attempt
		}
	}
	switch {
	case h.Code == pppoe.CodePADO && s.phase == Discovery:
		if h.SessionID != 0 {
			s.env.ProtocolError("pado_nonzero_session_id")
		}
		if !d.HasACName { // RFC 2516 5.2: a PADO MUST carry the AC-Name
			s.env.ProtocolError("pado_without_ac_name")
			return
		}
		if !d.OffersService(s.cfg.ServiceName) {
			s.env.ProtocolError("pado_without_requested_service")
			return
		}
		s.acMAC, s.acName = src, string(d.ACName)
		if d.HasACCookie {
			s.cookie = append([]byte(nil), d.ACCookie...)
		}
		if d.HasRelay {
			s.relay = append([]byte(nil), d.RelaySession...)
		}
		s.phase, s.tries = Requesting, 0
		s.sendPADR()
	case h.Code == pppoe.CodePADS && s.phase == Requesting:
		if src != s.acMAC {
			s.env.ProtocolError("pads_from_other_ac")
			return
		}
		if d.ErrorTag != 0 || h.SessionID == 0 {
			s.FailDetail = d.ErrorTag.String() + ": " + string(d.ErrorText)
			s.down(ReasonPADSError, false)
			return
		}
		s.sid, s.LastSID = h.SessionID, h.SessionID
		s.bigMRU = s.cfg.MaxPayload > 0 && d.HasMaxPayload
		s.buildHeader()
		s.tStep.Stop()
		s.phase = LinkEstablish
		s.startLCP()
	}
}

func (s *Session) buildHeader() {
	b := ethernet.AppendHeader(s.hdr[:0], s.acMAC, s.MAC, s.Line, ethernet.TypePPPoESession)
	b, _ = pppoe.AppendHeader(b, pppoe.CodeSession, s.sid)
	s.hdrLen = len(b)
}

func (s *Session) startLCP() {
	mru, peer := s.cfg.LCP.MRU, s.cfg.LCP.MaxPeerMRU
	if s.bigMRU { // RFC 4638: both ends agreed on a larger payload
		mru, peer = s.cfg.MaxPayload, s.cfg.MaxPayload
	}
	s.lcpPol.SetMRU(mru, peer)
	s.lcpFSM.Open()
	s.lcpFSM.Up()
}
