// Package fakeac is a scripted PPPoE access concentrator for the
// emulator's own tests: just enough of a BNG (discovery, LCP, PAP/CHAP/
// MS-CHAPv2, IPCP, IPv6CP, RA, DHCPv6-PD, echo) to bring sessions up over an
// in-memory link on a virtual clock, with knobs to misbehave. It is test
// equipment, not a BNG: one of everything, no pools, no RADIUS.
package fakeac

import (
	"crypto/md5"
	"encoding/binary"
	"net/netip"

	"p4bng/emulator/internal/auth"
	"p4bng/emulator/internal/dhcpv6"
	"p4bng/emulator/internal/ethernet"
	"p4bng/emulator/internal/ipv4"
	"p4bng/emulator/internal/ipv6"
	"p4bng/emulator/internal/lcp"
	"p4bng/emulator/internal/ppp"
	"p4bng/emulator/internal/pppoe"
	"p4bng/emulator/internal/timer"
)

// Config scripts the access concentrator.
type Config struct {
	MAC         ethernet.MAC
	Name        string
	Services    []string
	Auth        auth.Method
	Password    func(user string) (string, bool) // the right password for a user
	PeerAddr    netip.Addr                       // the BNG's IPCP address
	PoolBase    netip.Addr                       // subscriber i gets PoolBase + session id
	DNS         [2]netip.Addr
	RAPrefix    func(sid uint16) netip.Prefix
	PDPrefix    func(sid uint16) netip.Prefix
	PingTarget  netip.Addr // answered as if it were a host behind the BNG
	PADSError   pppoe.TagType
	NoHostUniq  bool // "forget" to echo Host-Uniq (a BNG bug)
	AnswerEcho  bool
	PPP         ppp.Config
	IgnorePADIs int  // answer no PADO to the first N PADIs
	IgnorePADRs int  // answer no PADS to the first N PADRs
	MaxPayload  bool // echo RFC 4638 PPP-Max-Payload
	// ReplyLine, when set, picks the tags of the AC's discovery replies
	// (to script a BNG answering on the wrong VLAN).
	ReplyLine func(ethernet.Tags) ethernet.Tags
	// LCPMRU is the MRU the AC requests (default 1492).
	LCPMRU uint16
}

// Session is the AC's state for one client MAC.
type Session struct {
	ac      *AC
	Client  ethernet.MAC
	Line    ethernet.Tags
	SID     uint16
	LCP     *ppp.FSM
	IPCP    *ppp.FSM
	IPv6CP  *ppp.FSM
	lcpPol  *serverLCP
	ipcpPol *serverIPCP
	v6Pol   *serverIPv6CP

	authed        bool
	authFailed    bool
	User          string
	chapID        uint8
	chapChallenge []byte
	chapReplied   bool
	chapOK        bool
	chapMsg       []byte
	tChallenge    *timer.Timer
	Terminated    bool
	PADTReceived  bool
	EchoRequests  int
	UDPFromClient int
	StreamSeqs    []uint64
	// Echo replies from the client (their data), reassembled where the
	// client fragmented them, and how many fragments it sent.
	EchoRepliesFromClient [][]byte
	FragmentsFromClient   int
	reasm                 ipv4.Reassembler
}

// AC is the fake access concentrator.
type AC struct {
	cfg      Config
	sched    *timer.Scheduler
	send     func([]byte)
	sc       *ppp.Scratch
	byMAC    map[ethernet.MAC]*Session
	nextSID  uint16
	padis    int
	padrs    int
	Sessions []*Session
	// Counters for assertions.
	PADIs, PADRs, PADTs int
	Errors              []string
}

// New builds an AC sending frames with send, timers on sched.
func New(cfg Config, sched *timer.Scheduler, send func([]byte)) *AC {
	if cfg.PPP.Restart == 0 {
		cfg.PPP = ppp.DefaultConfig()
	}
	return &AC{cfg: cfg, sched: sched, send: send, sc: ppp.NewScratch(), byMAC: map[ethernet.MAC]*Session{}, nextSID: 0x100}
}

func (ac *AC) errorf(s string) { ac.Errors = append(ac.Errors, s) }

// Handle processes one frame from the emulator.
func (ac *AC) Handle(frame []byte) {
	var f ethernet.Frame
	if ethernet.Parse(frame, &f) != nil {
		ac.errorf("bad ethernet")
		return
	}
	if len(frame) < ethernet.MinFrameLen {
		ac.errorf("runt frame")
	}
	h, err := pppoe.Parse(f.Payload)
	if err != nil {
		ac.errorf("bad pppoe")
		return
	}
	if f.Type == ethernet.TypePPPoEDiscovery {
		ac.discovery(&f, h)
		return
	}
	s := ac.byMAC[f.Src]
	if s == nil || s.SID != h.SessionID || f.Dst != ac.cfg.MAC {
		return
	}
	s.input(h.Payload)
}

func (ac *AC) discoveryFrame(dst ethernet.MAC, line ethernet.Tags, code pppoe.Code, sid uint16, tags func(b []byte) []byte) {
	b := ethernet.AppendHeader(nil, dst, ac.cfg.MAC, line, ethernet.TypePPPoEDiscovery)
	b, off := pppoe.AppendHeader(b, code, sid)
	b = tags(b)
	pppoe.SetLength(b, off)
	ac.send(ethernet.Pad(b))
}

func (ac *AC) discovery(f *ethernet.Frame, h pppoe.Header) {
	var d pppoe.Discovery
	if pppoe.ParseDiscovery(h.Payload, &d) != nil {
		ac.errorf("bad discovery tags")
		return
	}
	line := f.Tags
	if ac.cfg.ReplyLine != nil {
		line = ac.cfg.ReplyLine(line)
	}
	echo := func(b []byte) []byte {
		if d.HasHostUniq && !ac.cfg.NoHostUniq {
			b = pppoe.AppendTag(b, pppoe.TagHostUniq, d.HostUniq)
		}
		if d.HasMaxPayload && ac.cfg.MaxPayload {
			b = pppoe.AppendTag(b, pppoe.TagPPPMaxPayload, []byte{byte(d.MaxPayload >> 8), byte(d.MaxPayload)})
		}
		if d.HasRelay {
			b = pppoe.AppendTag(b, pppoe.TagRelaySessionID, d.RelaySession)
		}
		return b
	}
	switch h.Code {
	case pppoe.CodePADI:
		ac.PADIs++
		ac.padis++
		if f.Dst != ethernet.Broadcast {
			ac.errorf("PADI not broadcast")
		}
		if ac.padis <= ac.cfg.IgnorePADIs {
			return
		}
		ac.discoveryFrame(f.Src, line, pppoe.CodePADO, 0, func(b []byte) []byte {
			b = pppoe.AppendTag(b, pppoe.TagACName, []byte(ac.cfg.Name))
			for _, s := range ac.cfg.Services {
				b = pppoe.AppendTag(b, pppoe.TagServiceName, []byte(s))
			}
			b = pppoe.AppendTag(b, pppoe.TagACCookie, f.Src[:])
			return echo(b)
		})
	case pppoe.CodePADR:
		ac.PADRs++
		if f.Dst != ac.cfg.MAC {
			ac.errorf("PADR to another MAC")
			return
		}
		if !d.HasACCookie || string(d.ACCookie) != string(f.Src[:]) {
			ac.errorf("PADR without our cookie")
			return
		}
		ac.padrs++
		if ac.padrs <= ac.cfg.IgnorePADRs {
			return
		}
		if ac.cfg.PADSError != 0 {
			ac.discoveryFrame(f.Src, line, pppoe.CodePADS, 0, func(b []byte) []byte {
				return echo(pppoe.AppendTag(b, ac.cfg.PADSError, []byte("scripted failure")))
			})
			return
		}
		s := ac.byMAC[f.Src]
		fresh := s == nil || s.Terminated
		if fresh {
			s = ac.newSession(f.Src, f.Tags) // a retransmitted PADR reuses the session
		}
		ac.discoveryFrame(f.Src, line, pppoe.CodePADS, s.SID, func(b []byte) []byte {
			b = pppoe.AppendTag(b, pppoe.TagServiceName, d.ServiceNames[0])
			return echo(b)
		})
		if fresh { // LCP starts once the PADS is out
			s.LCP.Open()
			s.LCP.Up()
		}
	case pppoe.CodePADT:
		ac.PADTs++
		if s := ac.byMAC[f.Src]; s != nil && s.SID == h.SessionID {
			s.PADTReceived = true
			s.stop()
		}
	}
}

func (ac *AC) newSession(mac ethernet.MAC, line ethernet.Tags) *Session {
	ac.nextSID++
	s := &Session{ac: ac, Client: mac, Line: line, SID: ac.nextSID}
	mru := ac.cfg.LCPMRU
	if mru == 0 {
		mru = 1492
	}
	s.lcpPol = &serverLCP{s: s, auth: ac.cfg.Auth, magic: 0xac000000 | uint32(s.SID), mru: mru}
	s.LCP = ppp.NewFSM(ppp.ProtoLCP, &ac.cfg.PPP, s.lcpPol, s, ac.sched, ac.sc, 0x40)
	s.ipcpPol = &serverIPCP{s: s}
	s.IPCP = ppp.NewFSM(ppp.ProtoIPCP, &ac.cfg.PPP, s.ipcpPol, s, ac.sched, ac.sc, 0x80)
	s.v6Pol = &serverIPv6CP{s: s}
	s.IPv6CP = ppp.NewFSM(ppp.ProtoIPv6CP, &ac.cfg.PPP, s.v6Pol, s, ac.sched, ac.sc, 0xc0)
	s.tChallenge = ac.sched.NewTimer(s.challenge)
	ac.byMAC[mac] = s
	ac.Sessions = append(ac.Sessions, s)
	return s
}

// SendPADT ends a session from the AC's side.
func (ac *AC) SendPADT(s *Session) {
	ac.discoveryFrame(s.Client, s.Line, pppoe.CodePADT, s.SID, func(b []byte) []byte { return b })
	s.stop()
}

// Terminate closes the session's LCP (Terminate-Request).
func (ac *AC) Terminate(s *Session) { s.LCP.Close() }

// PeerMRU is the MRU the client requested of this session's LCP.
func (s *Session) PeerMRU() uint16 { return s.lcpPol.PeerMRU }

// Session looks a client up.
func (ac *AC) Session(mac ethernet.MAC) *Session { return ac.byMAC[mac] }

func (s *Session) stop() {
	s.Terminated = true
	s.LCP.Reset()
	s.IPCP.Reset()
	s.IPv6CP.Reset()
	s.tChallenge.Stop()
}

// Address is the address the AC assigns this session.
func (s *Session) Address() netip.Addr {
	a := s.ac.cfg.PoolBase.As4()
	v := binary.BigEndian.Uint32(a[:]) + uint32(s.SID)
	binary.BigEndian.PutUint32(a[:], v)
	return netip.AddrFrom4(a)
}

func (s *Session) frame(p ppp.Protocol, payload []byte) []byte {
	b := ethernet.AppendHeader(nil, s.Client, s.ac.cfg.MAC, s.Line, ethernet.TypePPPoESession)
	b, off := pppoe.AppendHeader(b, pppoe.CodeSession, s.SID)
	b = append(b, byte(p>>8), byte(p))
	b = append(b, payload...)
	pppoe.SetLength(b, off)
	return ethernet.Pad(b)
}

// SendControl implements ppp.Output.
func (s *Session) SendControl(p ppp.Protocol, pkt []byte) {
	if s.Terminated {
		return
	}
	s.ac.send(s.frame(p, pkt))
}

// SendIPv4 delivers an IPv4 packet to the subscriber.
func (s *Session) SendIPv4(pkt []byte) { s.ac.send(s.frame(ppp.ProtoIPv4, pkt)) }

func (s *Session) input(b []byte) {
	p, body, err := ppp.ParseFrame(b)
	if err != nil {
		s.ac.errorf("bad ppp frame")
		return
	}
	switch p {
	case ppp.ProtoLCP:
		if pk, err := ppp.ParsePacket(body); err == nil && pk.Code == ppp.EchoRequest {
			s.EchoRequests++
		}
		s.LCP.Input(body)
	case ppp.ProtoPAP:
		if s.LCP.State() == ppp.Opened {
			s.pap(body)
		}
	case ppp.ProtoCHAP:
		if s.LCP.State() == ppp.Opened {
			s.chapResponse(body)
		}
	case ppp.ProtoIPCP:
		if s.authed {
			s.IPCP.Input(body)
		}
	case ppp.ProtoIPv6CP:
		if s.authed {
			s.IPv6CP.Input(body)
		}
	case ppp.ProtoIPv4:
		s.ipv4(body)
	case ppp.ProtoIPv6:
		s.ipv6(body)
	}
}

// ---- authentication (the authenticator side) ----

func (s *Session) pap(b []byte) {
	p, err := ppp.ParsePacket(b)
	if err != nil || p.Code != auth.PAPAuthenticateRequest || len(p.Data) < 1 {
		s.ac.errorf("bad PAP")
		return
	}
	ul := int(p.Data[0])
	if len(p.Data) < 2+ul || len(p.Data) < 2+ul+int(p.Data[1+ul]) {
		s.ac.errorf("truncated PAP request")
		return
	}
	user := string(p.Data[1 : 1+ul])
	pw := string(p.Data[2+ul : 2+ul+int(p.Data[1+ul])])
	s.User = user
	want, ok := s.ac.cfg.Password(user)
	if ok && want == pw {
		s.SendControl(ppp.ProtoPAP, ppp.AppendPacket(nil, auth.PAPAuthenticateAck, p.ID, []byte{2, 'o', 'k'}))
		s.authSucceeded()
		return
	}
	s.SendControl(ppp.ProtoPAP, ppp.AppendPacket(nil, auth.PAPAuthenticateNak, p.ID, []byte{3, 'b', 'a', 'd'}))
	s.authFailed = true
	s.LCP.Close()
}

func (s *Session) challenge() {
	if s.chapReplied || s.Terminated {
		return
	}
	n := 16
	val := make([]byte, n)
	for i := range val {
		val[i] = byte(int(s.SID)*7 + i*13 + int(s.chapID))
	}
	s.chapChallenge = val
	b, off := ppp.AppendPacketHeader(nil, auth.CHAPChallenge, s.chapID)
	b = append(b, byte(n))
	b = append(b, val...)
	b = append(b, s.ac.cfg.Name...)
	ppp.SetPacketLength(b, off)
	s.SendControl(ppp.ProtoCHAP, b)
	s.tChallenge.Reset(s.ac.cfg.PPP.Restart)
}

func (s *Session) chapResponse(b []byte) {
	p, err := ppp.ParsePacket(b)
	if err != nil || p.Code != auth.CHAPResponse || len(p.Data) < 1 {
		s.ac.errorf("bad CHAP")
		return
	}
	if p.ID != s.chapID {
		return
	}
	if s.chapReplied { // RFC 1994 4.2: the same answer again
		s.sendCHAPResult(p.ID)
		return
	}
	vl := int(p.Data[0])
	if len(p.Data) < 1+vl || (s.ac.cfg.Auth == auth.MSCHAPv2 && vl != auth.MSCHAPv2ResponseLen) {
		s.ac.errorf("truncated CHAP response")
		return
	}
	value, name := p.Data[1:1+vl], string(p.Data[1+vl:])
	s.User = name
	want, ok := s.ac.cfg.Password(name)
	s.chapReplied = true
	s.tChallenge.Stop()
	switch s.ac.cfg.Auth {
	case auth.CHAPMD5:
		h := md5.New()
		h.Write([]byte{p.ID})
		h.Write([]byte(want))
		h.Write(s.chapChallenge)
		s.chapOK = ok && string(h.Sum(nil)) == string(value)
		s.chapMsg = []byte("welcome")
	case auth.MSCHAPv2:
		var ac, pc [16]byte
		var nt [24]byte
		copy(ac[:], s.chapChallenge)
		copy(pc[:], value[0:16])
		copy(nt[:], value[24:48])
		s.chapOK = ok && vl == auth.MSCHAPv2ResponseLen && auth.GenerateNTResponse(ac, pc, name, want) == nt
		if s.chapOK {
			s.chapMsg = []byte(auth.GenerateAuthenticatorResponse(want, nt, pc, ac, name) + " M=welcome")
		} else {
			s.chapMsg = []byte("E=691 R=0 C=00000000000000000000000000000000 V=3 M=denied")
		}
	}
	s.sendCHAPResult(p.ID)
	if s.chapOK {
		s.authSucceeded()
	} else {
		s.authFailed = true
		s.LCP.Close()
	}
}

func (s *Session) sendCHAPResult(id uint8) {
	code := auth.CHAPFailure
	if s.chapOK {
		code = auth.CHAPSuccess
	}
	s.SendControl(ppp.ProtoCHAP, ppp.AppendPacket(nil, code, id, s.chapMsg))
}

// Rechallenge sends a new CHAP Challenge on an established session.
func (s *Session) Rechallenge() {
	s.chapID++
	s.chapReplied = false
	s.challenge()
}

func (s *Session) authSucceeded() {
	if s.authed {
		return
	}
	s.authed = true
	s.IPCP.Open()
	s.IPCP.Up()
	s.IPv6CP.Open()
	s.IPv6CP.Up()
}

// ---- layer events of the AC's automata ----

func (s *Session) lcpUp() {
	// Every time LCP opens, the peer authenticates again (RFC 1661 3.5).
	s.authed, s.chapReplied = false, false
	switch s.lcpPol.auth {
	case auth.None:
		s.authSucceeded()
	case auth.CHAPMD5, auth.MSCHAPv2:
		s.chapID++
		s.challenge()
	}
}

// ---- data plane ----

func (s *Session) ipv4(b []byte) {
	if ipv4.IsFragment(b) {
		s.FragmentsFromClient++
		whole, err := s.reasm.Add(b, s.ac.sched.Now())
		if err != nil {
			s.ac.errorf("bad IPv4 fragment from client: " + err.Error())
		}
		if whole == nil {
			return
		}
		b = whole
	}
	p, err := ipv4.Parse(b)
	if err != nil {
		s.ac.errorf("bad IPv4 from client: " + err.Error())
		return
	}
	if p.Src != s.Address() {
		s.ac.errorf("IPv4 from a wrong source")
	}
	switch p.Proto {
	case ipv4.ProtoICMP:
		e, err := ipv4.ParseICMP(p)
		if err != nil {
			s.ac.errorf("bad ICMP: " + err.Error())
			return
		}
		if e.Type == ipv4.ICMPEchoReply {
			s.EchoRepliesFromClient = append(s.EchoRepliesFromClient, append([]byte(nil), e.Data...))
		}
		if e.Type == ipv4.ICMPEchoRequest && p.Dst == s.ac.cfg.PingTarget {
			s.SendIPv4(ipv4.AppendICMPEcho(nil, p.Dst, p.Src, 1, ipv4.ICMPEchoReply, e.ID, e.Seq, e.Data))
		}
	case ipv4.ProtoUDP:
		u, err := ipv4.ParseUDP(p)
		if err != nil {
			s.ac.errorf("bad UDP: " + err.Error())
			return
		}
		s.UDPFromClient++
		if len(u.Payload) >= 20 {
			s.StreamSeqs = append(s.StreamSeqs, binary.BigEndian.Uint64(u.Payload[12:]))
		}
	}
}

var bngLinkLocal = netip.MustParseAddr("fe80::ac")

func (s *Session) ipv6(b []byte) {
	p, err := ipv6.Parse(b)
	if err != nil {
		s.ac.errorf("bad IPv6")
		return
	}
	switch {
	case p.NextHeader == ipv6.ProtoICMPv6 && len(p.Payload) > 0 && p.Payload[0] == ipv6.RouterSolicit:
		if !ipv6.UpperChecksumOK(p) || p.HopLimit != 255 || p.Dst != ipv6.AllRouters {
			s.ac.errorf("bad RS")
			return
		}
		if s.ac.cfg.RAPrefix != nil {
			ra := ipv6.AppendRA(nil, bngLinkLocal, p.Src, s.ac.cfg.RAPrefix(s.SID), true)
			s.ac.send(s.frame(ppp.ProtoIPv6, ra))
		}
	case p.NextHeader == ipv6.ProtoUDP:
		u, err := ipv6.ParseUDP(p)
		if err != nil || u.DstPort != dhcpv6.ServerPort {
			s.ac.errorf("bad DHCPv6 datagram")
			return
		}
		s.dhcp(p.Src, u.Payload)
	}
}

func (s *Session) dhcp(src netip.Addr, b []byte) {
	if s.ac.cfg.PDPrefix == nil {
		return
	}
	m, err := dhcpv6.Parse(b)
	if err != nil {
		s.ac.errorf("bad DHCPv6")
		return
	}
	cid, _ := dhcpv6.FindOption(m.Options, dhcpv6.OptClientID)
	iaData, _ := dhcpv6.FindOption(m.Options, dhcpv6.OptIAPD)
	ia, err := dhcpv6.ParseIAPD(iaData)
	if err != nil {
		s.ac.errorf("bad IA_PD")
		return
	}
	typ := uint8(dhcpv6.Advertise)
	if m.Type == dhcpv6.Request {
		typ = dhcpv6.Reply
	}
	out := dhcpv6.AppendHeader(nil, typ, m.TxID)
	out = dhcpv6.AppendOption(out, dhcpv6.OptServerID, []byte{0, 3, 0, 1, 2, 0xac, 0, 0, 0, 1})
	out = dhcpv6.AppendOption(out, dhcpv6.OptClientID, cid)
	out = dhcpv6.AppendIAPD(out, dhcpv6.IAPD{IAID: ia.IAID, T1: 1800, T2: 2880,
		Prefixes: []dhcpv6.IAPrefix{{Preferred: 3600, Valid: 7200, Prefix: s.ac.cfg.PDPrefix(s.SID)}}})
	pkt := ipv6.AppendUDP(nil, bngLinkLocal, src, 64, dhcpv6.ServerPort, dhcpv6.ClientPort, out)
	s.ac.send(s.frame(ppp.ProtoIPv6, pkt))
}

// Up, Down, Started and Finished are the AC automata's layer events.
func (s *Session) Up(f *ppp.FSM) {
	if f.Protocol() == ppp.ProtoLCP {
		s.lcpUp()
	}
}

// Down implements the layer events: LCP going down (renegotiation) takes
// the NCPs down and requires a new authentication, as on a real BNG.
func (s *Session) Down(f *ppp.FSM) {
	if f.Protocol() != ppp.ProtoLCP {
		return
	}
	s.authed, s.chapReplied = false, false
	s.tChallenge.Stop()
	s.IPCP.Down()
	s.IPv6CP.Down()
	s.IPCP.Close()
	s.IPv6CP.Close()
}

// Started implements the layer events.
func (s *Session) Started(*ppp.FSM) {}

// Finished implements the layer events: a finished LCP ends the session
// with a PADT, as a BNG does.
func (s *Session) Finished(f *ppp.FSM) {
	if f.Protocol() == ppp.ProtoLCP && !s.Terminated {
		sched := s.ac.sched
		t := sched.NewTimer(func() {
			if !s.Terminated {
				s.ac.SendPADT(s)
			}
		})
		t.Reset(0)
	}
}

// ---- the AC's option policies ----

type serverLCP struct {
	s       *Session
	auth    auth.Method
	magic   uint32
	mru     uint16
	PeerMRU uint16 // what the client asked for
}

func (p *serverLCP) AppendRequest(b []byte) []byte {
	b = ppp.AppendOptionUint16(b, lcp.OptMRU, p.mru)
	if p.auth != auth.None {
		b = ppp.AppendOption(b, lcp.OptAuthProtocol, p.auth.OptionData())
	}
	return ppp.AppendOptionUint32(b, lcp.OptMagic, p.magic)
}
func (p *serverLCP) BeginRequest() {}
func (p *serverLCP) CheckOption(o ppp.Option, nak []byte) (ppp.Verdict, []byte) {
	switch o.Type {
	case lcp.OptMRU:
		if len(o.Data) != 2 {
			return ppp.Reject, nak
		}
		p.PeerMRU = binary.BigEndian.Uint16(o.Data)
		return ppp.Ack, nak
	case lcp.OptMagic:
		return ppp.Ack, nak
	}
	return ppp.Reject, nak
}
func (p *serverLCP) NakReceived(opts []byte) {
	ppp.ForEachOption(opts, func(o ppp.Option) {
		if o.Type == lcp.OptMRU && len(o.Data) == 2 {
			p.mru = binary.BigEndian.Uint16(o.Data)
		}
		if o.Type == lcp.OptAuthProtocol {
			if m, ok := auth.MethodFromOption(o.Data); ok {
				p.auth = m
				p.s.ac.cfg.Auth = m
			}
		}
	})
}
func (p *serverLCP) RejectReceived([]byte) {}
func (p *serverLCP) ReceiveOther(f *ppp.FSM, pk ppp.Packet) bool {
	switch pk.Code {
	case ppp.EchoRequest:
		if p.s.ac.cfg.AnswerEcho && f.State() == ppp.Opened {
			reply := binary.BigEndian.AppendUint32(nil, p.magic)
			f.SendPacket(ppp.EchoReply, pk.ID, append(reply, pk.Data[4:]...))
		}
		return true
	case ppp.EchoReply, ppp.ProtocolReject, ppp.DiscardRequest:
		return true
	}
	return false
}
func (p *serverLCP) Up(f *ppp.FSM)       { p.s.Up(f) }
func (p *serverLCP) Down(f *ppp.FSM)     { p.s.Down(f) }
func (p *serverLCP) Started(f *ppp.FSM)  { p.s.Started(f) }
func (p *serverLCP) Finished(f *ppp.FSM) { p.s.Finished(f) }

type serverIPCP struct{ s *Session }

func (p *serverIPCP) AppendRequest(b []byte) []byte {
	return ppp.AppendOption(b, 3, p.s.ac.cfg.PeerAddr.AsSlice())
}
func (p *serverIPCP) BeginRequest() {}
func (p *serverIPCP) CheckOption(o ppp.Option, nak []byte) (ppp.Verdict, []byte) {
	var want netip.Addr
	switch o.Type {
	case 3:
		want = p.s.Address()
	case 129:
		want = p.s.ac.cfg.DNS[0]
	case 131:
		want = p.s.ac.cfg.DNS[1]
	default:
		return ppp.Reject, nak
	}
	if !want.IsValid() {
		return ppp.Reject, nak
	}
	if string(o.Data) == string(want.AsSlice()) {
		return ppp.Ack, nak
	}
	return ppp.Nak, ppp.AppendOption(nak, o.Type, want.AsSlice())
}
func (p *serverIPCP) NakReceived([]byte)                       {}
func (p *serverIPCP) RejectReceived([]byte)                    {}
func (p *serverIPCP) ReceiveOther(*ppp.FSM, ppp.Packet) bool   { return false }
func (p *serverIPCP) Up(f *ppp.FSM)                            { p.s.Up(f) }
func (p *serverIPCP) Down(f *ppp.FSM)                          { p.s.Down(f) }
func (p *serverIPCP) Started(f *ppp.FSM)                       { p.s.Started(f) }
func (p *serverIPCP) Finished(f *ppp.FSM)                      { p.s.Finished(f) }
func (p *serverIPv6CP) NakReceived([]byte)                     {}
func (p *serverIPv6CP) RejectReceived([]byte)                  {}
func (p *serverIPv6CP) ReceiveOther(*ppp.FSM, ppp.Packet) bool { return false }
func (p *serverIPv6CP) Up(f *ppp.FSM)                          { p.s.Up(f) }
func (p *serverIPv6CP) Down(f *ppp.FSM)                        { p.s.Down(f) }
func (p *serverIPv6CP) Started(f *ppp.FSM)                     { p.s.Started(f) }
func (p *serverIPv6CP) Finished(f *ppp.FSM)                    { p.s.Finished(f) }

type serverIPv6CP struct{ s *Session }

func (p *serverIPv6CP) AppendRequest(b []byte) []byte {
	return ppp.AppendOption(b, 1, []byte{0, 0, 0, 0, 0, 0, 0, 0xac})
}
func (p *serverIPv6CP) BeginRequest() {}
func (p *serverIPv6CP) CheckOption(o ppp.Option, nak []byte) (ppp.Verdict, []byte) {
	if o.Type == 1 && len(o.Data) == 8 {
		return ppp.Ack, nak
	}
	return ppp.Reject, nak
}
