package session

import (
	"encoding/binary"
	"net/netip"
	"time"

	"p4bng/emulator/internal/auth"
	"p4bng/emulator/internal/dhcpv6"
	"p4bng/emulator/internal/ethernet"
	"p4bng/emulator/internal/ipcp"
	"p4bng/emulator/internal/ipv4"
	"p4bng/emulator/internal/ipv6cp"
	"p4bng/emulator/internal/lcp"
	"p4bng/emulator/internal/ppp"
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
	reasm           ipv4.Reassembler // fragments the BNG sent (IPv4 without DF over our MRU)
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
	s.attemptStart = s.now()
	if !s.started {
		s.started, s.FirstPADI = true, s.attemptStart
	}
	s.sid, s.bigMRU = 0, false
	s.Failure, s.FailDetail = "", ""
	s.lcpPol.Reset()
	s.ipcpPol.Reset(s.cfg.WantDNS)
	if s.v6Pol != nil {
		s.v6Pol.Reset()
	}
	s.raSeen, s.rsTries, s.v6Prefix, s.slaac, s.dhcp = false, 0, netip.Prefix{}, netip.Addr{}, nil
	s.echoOutstanding, s.lastResp = 0, nil
	s.tSetup.Reset(s.cfg.SetupTimeout)
	s.discover()
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
	if lcpOpen && len(body) > int(s.lcpPol.MRU()) {
		// RFC 1661 6.1: the BNG sends no more than our MRU (of the
		// Information field). Counted, and the frame still taken.
		s.env.ProtocolError("frame_over_mru")
	}
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
			s.padrExhausted()
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
