package session

import (
	"encoding/binary"
	"net/netip"
	"time"

	"p4bng/emulator/internal/auth"
	"p4bng/emulator/internal/dhcpv6"
	"p4bng/emulator/internal/ethernet"
	"p4bng/emulator/internal/ipcp"
	"p4bng/emulator/internal/ipv6cp"
	"p4bng/emulator/internal/lcp"
	"p4bng/emulator/internal/ppp"
	"p4bng/emulator/internal/pppoe"
	"p4bng/emulator/internal/timer"
	"p4bng/emulator/internal/traffic"
)

// Phase is where a session is in its life.
type Phase uint8

// Phases, in order.
const (
	Idle          Phase = iota // not started yet, or waiting to reconnect
	Discovery                  // PADI sent, waiting for a PADO
	Requesting                 // PADR sent, waiting for the PADS
	LinkEstablish              // PPPoE session up, LCP negotiating
	Authenticate               // LCP up, authenticating to the BNG
	Network                    // NCPs negotiating, IPv6 autoconfiguration
	Established                // everything required is up
	Terminating                // our LCP Terminate-Request is out (teardown)
	Done                       // finished: failed, down for good, or torn down
)

func (p Phase) String() string {
	return [...]string{"idle", "discovery", "requesting", "lcp", "auth", "network", "established",
		"terminating", "done"}[p]
}

// HostUniqLen is the size of our Host-Uniq: session index and attempt.
const HostUniqLen = 8

// DecodeHostUniq splits a Host-Uniq value into session index and attempt.
func DecodeHostUniq(v []byte) (index, attempt uint32, ok bool) {
	if len(v) != HostUniqLen {
		return 0, 0, false
	}
	return binary.BigEndian.Uint32(v), binary.BigEndian.Uint32(v[4:]), true
}

// Session is one subscriber.
type Session struct {
	Index        int
	MAC          ethernet.MAC
	Line         ethernet.Tags
	Username     string
	Password     string
	ExpectReject bool // the wrong-password class: the BNG must reject it

	cfg *Config
	env Env

	phase     Phase
	attempt   uint32 // discovery attempt counter, part of the Host-Uniq
	tries     int    // PADI/PADR (or PAP / CHAP response) sends in the current step
	acMAC     ethernet.MAC
	acName    string
	sid       uint16
	cookie    []byte
	relay     []byte
	hdr       [32]byte // Ethernet + tags + PPPoE header of session frames
	hdrLen    int
	bigMRU    bool // RFC 4638 PPP-Max-Payload accepted in PADS
	teardown  bool
	started   bool
	reconnect bool // this attempt follows an established period

	attemptStart time.Duration
	FirstPADI    time.Duration
	SetupTime    time.Duration // of the first establishment
	EverUp       bool
	Failure      string // why the last setup failed
	FailDetail   string // the BNG's error text, when it gave one
	LastSID      uint16

	pending       string // a down decided inside a callback, carried out by settle
	pendingPolite bool   // close LCP before the PADT

	lcpPol  *lcp.Policy
	lcpFSM  *ppp.FSM
	ipcpPol *ipcp.Policy
	ipcpFSM *ppp.FSM
	v6Pol   *ipv6cp.Policy
	v6FSM   *ppp.FSM

	authc    auth.Client
	lastResp []byte // our last CHAP Response, retransmitted until answered

	upAddr netip.Addr // the IPv4 address the session was established with

	raSeen   bool
	rsTries  int
	v6Prefix netip.Prefix
	slaac    netip.Addr
	dhcp     *dhcpv6.Client

	echoOutstanding int
	pingSeq         uint16
	streamSeq       uint64
	ipID            uint16
	StreamDown      traffic.SeqTracker
	UDPReceived     uint64

	tStep  *timer.Timer // discovery, auth, IPv6 retransmissions; reconnect delay
	tSetup *timer.Timer
	tEcho  *timer.Timer
	tPing  *timer.Timer
	// EstSlot is the emulator's bookkeeping of established sessions.
	EstSlot int
}

// New builds a session; nothing is sent until Start.
func New(index int, mac ethernet.MAC, line ethernet.Tags, username, password string, expectReject bool, cfg *Config, env Env) *Session {
	s := &Session{Index: index, MAC: mac, Line: line, Username: username, Password: password,
		ExpectReject: expectReject, cfg: cfg, env: env, EstSlot: -1}
	sc := env.Sched()
	rnd := env.Rand()
	s.lcpPol = lcp.New(&cfg.LCP, s, rnd)
	s.lcpFSM = ppp.NewFSM(ppp.ProtoLCP, &cfg.PPP, s.lcpPol, s, sc, env.Scratch(), uint8(rnd.Intn(256)))
	s.ipcpPol = ipcp.New(s, cfg.WantDNS)
	s.ipcpFSM = ppp.NewFSM(ppp.ProtoIPCP, &cfg.PPP, s.ipcpPol, s, sc, env.Scratch(), uint8(rnd.Intn(256)))
	if cfg.IPv6 {
		s.v6Pol = ipv6cp.New(s, rnd)
		s.v6FSM = ppp.NewFSM(ppp.ProtoIPv6CP, &cfg.PPP, s.v6Pol, s, sc, env.Scratch(), uint8(rnd.Intn(256)))
	}
	s.tStep = sc.NewTimer(s.stepTimeout)
	s.tSetup = sc.NewTimer(s.setupTimeout)
	s.tEcho = sc.NewTimer(s.echoTimeout)
	s.tPing = sc.NewTimer(s.pingTimeout)
	return s
}

// Phase is the current phase.
func (s *Session) Phase() Phase { return s.phase }

// SessionID is the PPPoE session id (0 when there is no session).
func (s *Session) SessionID() uint16 { return s.sid }

// ACMAC is the access concentrator's MAC of the current session.
func (s *Session) ACMAC() ethernet.MAC { return s.acMAC }

// ACName is the AC-Name of the PADO we chose.
func (s *Session) ACName() string { return s.acName }

// Reconnecting reports that the current attempt follows a flap.
func (s *Session) Reconnecting() bool { return s.reconnect }

// InSetup reports a started attempt that has not reached an outcome.
func (s *Session) InSetup() bool {
	return s.phase >= Discovery && s.phase <= Network
}

// Address is the IPv4 address from IPCP.
func (s *Session) Address() netip.Addr { return s.ipcpPol.Address() }

// DNS is what IPCP gave.
func (s *Session) DNS() []netip.Addr { return s.ipcpPol.DNS() }

// IPv6Prefix is the prefix from the router advertisement.
func (s *Session) IPv6Prefix() netip.Prefix { return s.v6Prefix }

// SLAACAddress is prefix::iid.
func (s *Session) SLAACAddress() netip.Addr { return s.slaac }

// DelegatedPrefix is the DHCPv6-PD prefix.
func (s *Session) DelegatedPrefix() netip.Prefix {
	if s.dhcp == nil {
		return netip.Prefix{}
	}
	return s.dhcp.Delegated
}

// AuthMethod is the method the BNG asked for.
func (s *Session) AuthMethod() auth.Method { return s.lcpPol.Auth }

// Magic returns our and the peer's LCP Magic-Numbers.
func (s *Session) Magic() (ours, peer uint32) { return s.lcpPol.Magic(), s.lcpPol.PeerMagic }

func (s *Session) now() time.Duration { return s.env.Sched().Now() }

// Start begins a setup attempt with a PADI.
func (s *Session) Start() {
	s.attempt++
	s.phase = Discovery
	s.attemptStart = s.now()
	if !s.started {
		s.started, s.FirstPADI = true, s.attemptStart
	}
	s.tries = 0
	s.acMAC, s.acName, s.sid, s.cookie, s.relay, s.bigMRU = ethernet.MAC{}, "", 0, nil, nil, false
	s.Failure, s.FailDetail = "", ""
	s.lcpPol.Reset()
	s.ipcpPol.Reset(s.cfg.WantDNS)
	if s.v6Pol != nil {
		s.v6Pol.Reset()
	}
	s.raSeen, s.rsTries, s.v6Prefix, s.slaac, s.dhcp = false, 0, netip.Prefix{}, netip.Addr{}, nil
	s.echoOutstanding, s.lastResp = 0, nil
	s.tSetup.Reset(s.cfg.SetupTimeout)
	s.sendPADI()
}

func (s *Session) hostUniq() [HostUniqLen]byte {
	var v [HostUniqLen]byte
	binary.BigEndian.PutUint32(v[:], uint32(s.Index))
	binary.BigEndian.PutUint32(v[4:], s.attempt)
	return v
}

func (s *Session) backoff() time.Duration {
	d := s.cfg.DiscoveryTimeout << uint(s.tries-1)
	if max := 64 * time.Second; d > max || d <= 0 {
		d = max
	}
	return d
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

// buildPPP puts a PPP frame of protocol p with payload into a TxBuf.
func (s *Session) buildPPP(p ppp.Protocol, payload []byte) []byte {
	b := append(s.env.TxBuf(), s.hdr[:s.hdrLen]...)
	b = append(b, byte(p>>8), byte(p))
	b = append(b, payload...)
	binary.BigEndian.PutUint16(b[s.hdrLen-2:], uint16(len(b)-s.hdrLen))
	return ethernet.Pad(b)
}

// SendControl implements ppp.Output for the automata, and carries PAP/CHAP.
func (s *Session) SendControl(p ppp.Protocol, pkt []byte) {
	if s.sid == 0 {
		return
	}
	s.env.SendControl(s.buildPPP(p, pkt))
}

func (s *Session) sendData(p ppp.Protocol, pkt []byte) {
	if s.sid == 0 {
		return
	}
	s.env.SendData(s.buildPPP(p, pkt))
}

// HandleSession processes a PPP frame of this session (the emulator has
// checked the session id, the AC's MAC and the line).
func (s *Session) HandleSession(frame []byte) {
	defer s.settle()
	if s.phase < LinkEstablish || s.phase == Done {
		return
	}
	proto, body, err := ppp.ParseFrame(frame)
	if err != nil {
		s.env.ProtocolError("ppp_malformed")
		return
	}
	lcpOpen := s.lcpFSM.State() == ppp.Opened
	switch proto {
	case ppp.ProtoLCP:
		s.lcpFSM.Input(body)
	case ppp.ProtoPAP, ppp.ProtoCHAP:
		s.authInput(proto, body)
	case ppp.ProtoIPCP:
		s.ncpInput(s.ipcpFSM, body, frame)
	case ppp.ProtoIPv6CP:
		if s.v6FSM == nil {
			if lcpOpen {
				s.lcpPol.SendProtocolReject(s.lcpFSM, frame)
			}
			return
		}
		s.ncpInput(s.v6FSM, body, frame)
	case ppp.ProtoIPv4:
		if s.ipcpFSM.State() == ppp.Opened {
			s.ipv4Input(body)
		}
	case ppp.ProtoIPv6:
		if s.v6FSM != nil && s.v6FSM.State() == ppp.Opened {
			s.ipv6Input(body)
		}
	default:
		if lcpOpen { // RFC 1661 5.7: unknown protocols only rejected in Opened
			s.lcpPol.SendProtocolReject(s.lcpFSM, frame)
		}
	}
}

func (s *Session) ncpInput(f *ppp.FSM, body, frame []byte) {
	switch {
	case s.phase == Network || s.phase == Established:
		f.Input(body)
	case s.phase == Authenticate:
		// RFC 1661 3.5: NCP packets before the Network phase are
		// discarded. After a CHAP Response the BNG only starts its NCPs
		// once it accepted us, so one arriving means our Success was lost.
		if s.lastResp != nil && s.lcpPol.Auth == auth.CHAPMD5 {
			s.env.Stats().ImplicitAuthSuccess++
			s.enterNetwork()
			f.Input(body)
			return
		}
		s.env.ProtocolError("ncp_before_auth")
	}
}

// ---- LCP, IPCP and IPv6CP layer events (ppp.Handler via the policies) ----

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

// ---- authentication ----

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

// ---- establishment, failure, teardown ----

func (s *Session) checkEstablished() {
	if s.phase != Network || s.ipcpFSM.State() != ppp.Opened {
		return
	}
	if s.v6FSM != nil && (s.v6FSM.State() != ppp.Opened || !s.raSeen) {
		return
	}
	if s.cfg.DHCPv6PD && (s.dhcp == nil || s.dhcp.Phase() != dhcpv6.Reply) {
		return
	}
	s.phase = Established
	s.tSetup.Stop()
	s.tStep.Stop()
	if !s.EverUp {
		s.EverUp, s.SetupTime = true, s.now()-s.attemptStart
	}
	if s.cfg.PingTarget.IsValid() && s.cfg.PingInterval > 0 {
		// A random phase spreads the pings of many sessions.
		s.tPing.Reset(time.Duration(s.env.Rand().Int63n(int64(s.cfg.PingInterval))))
	}
	s.env.Established(s)
}

func (s *Session) setupTimeout() {
	defer s.settle()
	reason := ReasonLCPTimeout
	switch s.phase {
	case Discovery, Requesting:
		reason = ReasonDiscoveryTimeout
	case Authenticate:
		reason = ReasonAuthTimeout
	case Network:
		switch {
		case s.ipcpFSM.State() != ppp.Opened:
			reason = ReasonIPCPTimeout
		case s.dhcp != nil:
			reason = ReasonDHCPv6Timeout
		default:
			reason = ReasonIPv6Timeout
		}
	}
	s.abort(reason)
}

// abort ends the attempt politely: LCP Terminate-Request, then PADT.
func (s *Session) abort(reason string) { s.downLater(reason, true) }

// downLater records a decision taken inside an automaton's callback; settle
// carries it out once the automaton has finished its transition.
func (s *Session) downLater(reason string, polite bool) {
	if s.pending == "" {
		s.pending, s.pendingPolite = reason, polite
	}
}

// settle runs at the end of every entry point (frame, timer).
func (s *Session) settle() {
	if s.pending == "" {
		return
	}
	reason, polite := s.pending, s.pendingPolite
	s.pending, s.pendingPolite = "", false
	if polite && s.sid != 0 {
		if st := s.lcpFSM.State(); st == ppp.Opened || st == ppp.ReqSent || st == ppp.AckRcvd || st == ppp.AckSent {
			s.lcpFSM.Close() // one Terminate-Request; we do not wait for the Ack
		}
		s.pending = ""
	}
	s.down(reason, true)
}

// down ends the current PPPoE session (PADT unless the BNG sent one) and
// reports the outcome.
func (s *Session) down(reason string, sendPADT bool) {
	if s.phase == Idle || s.phase == Done {
		return
	}
	wasUp := s.phase == Established
	s.tStep.Stop()
	s.tSetup.Stop()
	s.tEcho.Stop()
	s.tPing.Stop()
	if sendPADT && s.sid != 0 {
		s.sendPADT()
	}
	s.lcpFSM.Reset()
	s.ipcpFSM.Reset()
	if s.v6FSM != nil {
		s.v6FSM.Reset()
	}
	s.sid = 0
	switch {
	case s.teardown:
		s.phase = Done
		s.env.Closed(s)
	case wasUp:
		s.phase = Done
		s.env.Lost(s, reason)
		if s.cfg.Reconnect {
			s.phase, s.reconnect = Idle, true
			s.tStep.Reset(s.cfg.ReconnectDelay)
		}
	default:
		s.Failure = reason
		s.phase = Done
		s.env.Failed(s, reason)
		if s.reconnect && s.cfg.Reconnect {
			s.phase = Idle
			s.tStep.Reset(s.cfg.ReconnectDelay)
		}
	}
}

// Teardown closes the session as a CPE being switched off politely would:
// LCP Terminate-Request now, PADT when the Terminate-Ack arrives (or when
// the emulator's patience ends: ForceClose).
func (s *Session) Teardown() {
	defer s.settle()
	s.teardown = true
	switch s.phase {
	case Idle:
		s.tStep.Stop()
		s.phase = Done
		s.env.Closed(s)
	case Discovery, Requesting:
		s.down(ReasonTeardown, false)
	case LinkEstablish, Authenticate, Network, Established:
		s.tStep.Stop()
		s.tSetup.Stop()
		s.tEcho.Stop()
		s.tPing.Stop()
		s.phase = Terminating
		s.lcpFSM.Close()
	}
}

// ForceClose sends the PADT without waiting any longer.
func (s *Session) ForceClose() {
	s.teardown = true
	s.down(ReasonTeardown, true)
}

func (s *Session) stepTimeout() {
	defer s.settle()
	switch s.phase {
	case Idle:
		s.env.ReadyToReconnect(s)
	case Discovery:
		if s.tries >= s.cfg.DiscoveryRetries {
			s.down(ReasonDiscoveryTimeout, false)
			return
		}
		s.sendPADI()
	case Requesting:
		if s.tries >= s.cfg.DiscoveryRetries {
			s.down(ReasonDiscoveryTimeout, false)
			return
		}
		s.sendPADR()
	case Authenticate:
		s.authTimeout()
	case Network:
		s.ipv6Timeout()
	}
}

func (s *Session) echoTimeout() {
	defer s.settle()
	if s.lcpFSM.State() != ppp.Opened {
		return
	}
	if s.echoOutstanding >= s.cfg.EchoFailures {
		s.downLater(ReasonEchoTimeout, false)
		return
	}
	s.echoOutstanding++
	s.lcpPol.SendEchoRequest(s.lcpFSM)
	s.env.Stats().EchoRequestsSent++
	s.tEcho.Reset(s.cfg.EchoInterval)
}
