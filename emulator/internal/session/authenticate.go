package session

// The Authentication phase (RFC 1661 3.5) as the peer: PAP requests with
// retransmission, CHAP/MS-CHAPv2 responses (retransmitted until the
// authenticator answers, RFC 1994 4.2), then the Network phase.

import (
	"p4bng/emulator/internal/auth"
	"p4bng/emulator/internal/ppp"
)

func (s *Session) sendPAP() {
	if s.tries > 0 {
		s.env.Stats().PAPRetransmissions++
	}
	s.tries++
	b, _ := s.authc.Request(s.env.Scratch().Aux(), s.lcpFSM.NewID())
	s.SendControl(ppp.ProtoPAP, b)
}

func (s *Session) authInput(proto ppp.Protocol, body []byte) {
	if s.phase != Authenticate && !(s.phase >= Network && s.phase <= Established && proto == ppp.ProtoCHAP) {
		return
	}
	if proto != s.lcpPol.Auth.Protocol() || s.lcpPol.Auth == auth.None {
		s.env.ProtocolError("auth_wrong_protocol")
		return
	}
	out, reply := s.authc.Input(body, s.env.Scratch().Aux())
	if len(reply) > 0 {
		s.lastResp = append(s.lastResp[:0], reply...)
		s.SendControl(proto, reply)
		if s.phase == Authenticate {
			s.tries = 1
			s.tStep.Reset(s.cfg.PPP.Restart)
		}
	}
	switch out {
	case auth.Success:
		if s.phase == Authenticate {
			s.enterNetwork()
		}
	case auth.Failure:
		s.FailDetail = s.authc.Message
		s.abort(ReasonAuthRejected)
	case auth.BadAuthenticator:
		s.FailDetail = s.authc.Message
		s.abort(ReasonBadAuthenticator)
	case auth.Malformed:
		s.env.ProtocolError("auth_malformed")
	case auth.WrongIdentifier:
		s.env.ProtocolError("chap_answer_wrong_identifier")
	}
}

func (s *Session) authTimeout() {
	if s.tries >= s.cfg.PPP.MaxConfigure {
		s.abort(ReasonAuthTimeout)
		return
	}
	switch {
	case s.lcpPol.Auth == auth.PAP:
		s.sendPAP()
	case s.lastResp != nil:
		// RFC 1994 4.2: the authenticator answers a repeated Response
		// with the same Success/Failure, so a lost Success is recovered.
		s.tries++
		s.env.Stats().CHAPResponseRetransmitted++
		s.SendControl(ppp.ProtoCHAP, s.lastResp)
	default:
		s.tries++ // still waiting for the first Challenge
	}
	s.tStep.Reset(s.cfg.PPP.Restart)
}

func (s *Session) enterNetwork() {
	s.phase = Network
	s.tStep.Stop()
	s.ipcpFSM.Open()
	s.ipcpFSM.Up()
	if s.v6FSM != nil {
		s.v6FSM.Open()
		s.v6FSM.Up()
	}
}
