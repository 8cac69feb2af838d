package session

// The This-Layer-Up/Down/Started/Finished actions of the session's three
// automata, and what LCP reports beyond them (echo, Protocol-Reject,
// loopback).

import (
	"p4bng/emulator/internal/auth"
	"p4bng/emulator/internal/ppp"
)

// Up is This-Layer-Up of one of our automata.
func (s *Session) Up(f *ppp.FSM) {
	switch f.Protocol() {
	case ppp.ProtoLCP:
		if s.phase != LinkEstablish {
			return
		}
		if s.cfg.EchoInterval > 0 {
			s.echoOutstanding = 0
			s.tEcho.Reset(s.cfg.EchoInterval)
		}
		if s.lcpPol.Auth == auth.None {
			s.enterNetwork()
			return
		}
		s.phase, s.tries, s.lastResp = Authenticate, 0, nil
		s.authc = auth.NewClient(s.lcpPol.Auth, s.Username, s.Password, s.env.Rand())
		if s.lcpPol.Auth == auth.PAP {
			s.sendPAP()
		}
		s.tStep.Reset(s.cfg.PPP.Restart)
	case ppp.ProtoIPCP:
		addr := s.ipcpPol.Address()
		if !addr.IsValid() || addr.IsUnspecified() {
			s.abort(ReasonNoAddress)
			return
		}
		if s.phase == Established { // back from a renegotiation
			if addr != s.upAddr {
				s.env.ProtocolError("ipcp_address_changed")
			}
			return
		}
		s.upAddr = addr
		s.checkEstablished()
	case ppp.ProtoIPv6CP:
		if s.phase == Established {
			return
		}
		s.rsTries = 0
		s.sendRS()
	}
}

// Down is This-Layer-Down.
func (s *Session) Down(f *ppp.FSM) {
	switch f.Protocol() {
	case ppp.ProtoLCP:
		s.tEcho.Stop()
		s.ipcpFSM.Down()
		if s.v6FSM != nil {
			s.v6FSM.Down()
		}
		switch {
		case s.phase == Terminating || f.Cause() == ppp.CauseAdminClose:
		case f.Cause() == ppp.CausePeerTerminate:
			s.downLater(ReasonLCPTerminated, false)
		case s.phase == Established:
			// The BNG started LCP over (a new Configure-Request while
			// Opened): for the subscriber that is a lost session.
			s.downLater(ReasonLCPRenegotiated, false)
		default:
			// The BNG renegotiates LCP during setup (it may have missed
			// our Ack): authenticate again once LCP is back up.
			s.phase = LinkEstablish
			s.tStep.Stop()
		}
	case ppp.ProtoIPCP, ppp.ProtoIPv6CP:
		if s.phase != Established || s.lcpFSM.State() != ppp.Opened {
			return
		}
		if f.Cause() == ppp.CausePeerTerminate {
			reason := ReasonIPCPTerminated
			if f.Protocol() == ppp.ProtoIPv6CP {
				reason = ReasonIPv6CPTerminated
			}
			s.downLater(reason, true)
			return
		}
		// A Configure-Request while Opened (the BNG missed our Ack and
		// retransmitted): the NCP renegotiates and comes back; the
		// session stays up unless the NCP finishes.
		s.env.Stats().NCPRenegotiations++
	}
}

// Started is This-Layer-Started: nothing to do, PPPoE is already up.
func (s *Session) Started(*ppp.FSM) {}

// Finished is This-Layer-Finished.
func (s *Session) Finished(f *ppp.FSM) {
	switch f.Protocol() {
	case ppp.ProtoLCP:
		reason := ReasonLCPTerminated
		switch f.Cause() {
		case ppp.CauseTimeout:
			reason = ReasonLCPTimeout
		case ppp.CauseRejected:
			reason = ReasonLCPRejected
		case ppp.CauseAdminClose:
			reason = ReasonTeardown
		}
		s.downLater(reason, false)
	case ppp.ProtoIPCP:
		s.abort(ncpReason(f.Cause(), ReasonIPCPTimeout, ReasonIPCPRejected, ReasonIPCPTerminated))
	case ppp.ProtoIPv6CP:
		s.abort(ncpReason(f.Cause(), ReasonIPv6Timeout, ReasonIPv6CPRejected, ReasonIPv6CPTerminated))
	}
}

func ncpReason(c ppp.Cause, timeout, rejected, terminated string) string {
	switch c {
	case ppp.CauseTimeout:
		return timeout
	case ppp.CauseRejected:
		return rejected
	}
	return terminated
}

// EchoReply is an LCP Echo-Reply from the BNG.
func (s *Session) EchoReply(id uint8, magic uint32) {
	s.echoOutstanding = 0
	s.env.Stats().EchoRepliesReceived++
	if p := s.lcpPol.PeerMagic; p != 0 && magic != p {
		s.env.ProtocolError("echo_reply_wrong_magic")
	}
}

// EchoRequestAnswered counts our answers to the BNG's keepalives.
func (s *Session) EchoRequestAnswered() { s.env.Stats().EchoRequestsAnswered++ }

// ProtocolRejected is the BNG's LCP Protocol-Reject.
func (s *Session) ProtocolRejected(p ppp.Protocol) {
	switch {
	case p == ppp.ProtoIPCP:
		s.ipcpFSM.PeerRejected()
	case p == ppp.ProtoIPv6CP && s.v6FSM != nil:
		s.v6FSM.PeerRejected()
	case p == ppp.ProtoLCP:
		s.env.ProtocolError("lcp_protocol_rejected")
	}
}

// LoopbackDetected: our own Magic-Number keeps coming back.
func (s *Session) LoopbackDetected() { s.downLater(ReasonLoopback, false) }
