package session

import (
	"encoding/binary"
	"net/netip"
	"time"

	"p4bng/emulator/internal/dhcpv6"
	"p4bng/emulator/internal/ipv4"
	"p4bng/emulator/internal/ipv6"
	"p4bng/emulator/internal/ppp"
	"p4bng/emulator/internal/traffic"
)

// The subscriber's data plane: ping and the upstream stream out, answers to
// pings and the downstream stream in (IPv4 in PPP protocol 0x0021), and
// IPv6 address configuration (RS/RA, DHCPv6-PD in 0x0057).

// RFC 4861 section 10 host constants.
const (
	maxRouterSolicitations = 3
	rtrSolicitationIntv    = 4 * time.Second
)

// MaxPingSize bounds the ICMP data of our pings.
const MaxPingSize = 1400

// StreamSourcePort is the UDP source port of session i's upstream stream,
// so a core-side sink can tell subscribers apart without parsing payloads.
func StreamSourcePort(index int) uint16 { return uint16(10000 + index%50000) }

func (s *Session) pingID() uint16 { return uint16(s.Index) }

func ipv4ErrorName(err error) string {
	switch err {
	case ipv4.ErrChecksum:
		return "ipv4_bad_header_checksum"
	case ipv4.ErrL4Checksum:
		return "ipv4_bad_l4_checksum"
	case ipv4.ErrFragment:
		return "ipv4_fragment"
	}
	return "ipv4_malformed"
}

// fits reports whether an IP packet of n bytes fits the BNG's MRU.
func (s *Session) fits(n int) bool {
	if n > int(s.lcpPol.PeerMRU) {
		s.env.Stats().OversizeSkipped++
		return false
	}
	return true
}

// reassemble takes a fragment the BNG sent and returns the whole datagram
// once it is complete. A BNG fragments only what is larger than our MRU:
// a datagram that would have fitted is its error.
func (s *Session) reassemble(b []byte) ([]byte, bool) {
	whole, err := s.reasm.Add(b, s.now())
	s.env.Stats().IPv4ReassemblyExpired += s.reasm.Expired
	s.reasm.Expired = 0
	switch {
	case err == ipv4.ErrTooMany:
		s.env.ProtocolError("ipv4_reassembly_overflow")
	case err != nil:
		s.env.ProtocolError("ipv4_bad_fragment")
	case whole != nil && len(whole) <= int(s.lcpPol.MRU()):
		s.env.ProtocolError("ipv4_needless_fragmentation")
	}
	if whole == nil {
		return nil, false
	}
	s.env.Stats().IPv4Reassembled++
	return whole, true
}

// sendFragmented sends an IPv4 packet of ours, in fragments where it is
// larger than the BNG's MRU (a host fragments what it originates, RFC 791).
func (s *Session) sendFragmented(pkt []byte) bool {
	frags := ipv4.Fragment(pkt, int(s.lcpPol.PeerMRU))
	if frags == nil {
		s.env.Stats().OversizeSkipped++
		return false
	}
	for _, f := range frags {
		s.sendData(ppp.ProtoIPv4, f)
	}
	if len(frags) > 1 {
		s.env.Stats().IPv4FragmentsSent += uint64(len(frags))
	}
	return true
}

func (s *Session) ipv4Input(b []byte) {
	if ipv4.IsFragment(b) {
		whole, ok := s.reassemble(b)
		if !ok {
			return
		}
		b = whole
	}
	p, err := ipv4.Parse(b)
	if err != nil {
		s.env.ProtocolError(ipv4ErrorName(err))
		return
	}
	if p.Dst != s.Address() {
		// Another subscriber's (or nobody's) traffic in our session.
		s.env.ProtocolError("ipv4_wrong_destination")
		return
	}
	switch p.Proto {
	case ipv4.ProtoICMP:
		e, err := ipv4.ParseICMP(p)
		if err != nil {
			s.env.ProtocolError(ipv4ErrorName(err))
			return
		}
		switch {
		case e.NotEcho:
		case e.Type == ipv4.ICMPEchoRequest:
			s.ipID++
			reply := ipv4.AppendICMPEcho(s.env.Scratch().Aux(), s.Address(), p.Src, s.ipID, ipv4.ICMPEchoReply, e.ID, e.Seq, e.Data)
			if s.sendFragmented(reply) {
				s.env.Stats().ICMPEchoAnswered++
			}
		case e.Type == ipv4.ICMPEchoReply && e.ID == s.pingID() && p.Src == s.cfg.PingTarget:
			s.env.Stats().PingReceived++
		}
	case ipv4.ProtoUDP:
		u, err := ipv4.ParseUDP(p)
		if err != nil {
			s.env.ProtocolError(ipv4ErrorName(err))
			return
		}
		s.UDPReceived++
		s.env.Stats().UDPReceived++
		if idx, seq, ok := traffic.ParsePayload(u.Payload); ok {
			if int(idx) == s.Index {
				s.StreamDown.Observe(seq)
			} else {
				s.env.Stats().StreamDownWrongSession++
			}
		}
	}
}

func (s *Session) pingTimeout() {
	defer s.settle()
	if s.phase != Established {
		return
	}
	s.pingSeq++
	s.ipID++
	var data [MaxPingSize]byte
	size := s.cfg.PingSize
	if size > len(data) {
		size = len(data)
	}
	binary.BigEndian.PutUint64(data[:], uint64(s.now()))
	pkt := ipv4.AppendICMPEcho(s.env.Scratch().Aux(), s.Address(), s.cfg.PingTarget, s.ipID, ipv4.ICMPEchoRequest, s.pingID(), s.pingSeq, data[:size])
	if s.fits(len(pkt)) {
		s.sendData(ppp.ProtoIPv4, pkt)
		s.env.Stats().PingSent++
	}
	s.tPing.Reset(s.cfg.PingInterval)
}

// SendStream sends the next packet of this session's upstream stream to
// target, with a UDP payload of size bytes; false when not established.
func (s *Session) SendStream(target netip.AddrPort, size int) bool {
	if s.phase != Established {
		return false
	}
	if size < traffic.HeaderLen {
		size = traffic.HeaderLen
	}
	sc := s.env.Scratch()
	payload := traffic.AppendPayload(sc.Aux(), uint32(s.Index), s.streamSeq, int64(s.now()), size)
	s.ipID++
	// The payload sits at the start of Aux; build the packet after it.
	pkt := ipv4.AppendUDP(payload[len(payload):], s.Address(), target.Addr(), s.ipID, StreamSourcePort(s.Index), target.Port(), payload)
	if !s.fits(len(pkt)) {
		return false
	}
	s.streamSeq++
	s.sendData(ppp.ProtoIPv4, pkt)
	s.env.Stats().StreamUpSent++
	return true
}

// ---- IPv6: router solicitation, advertisements, DHCPv6-PD, echo ----

func (s *Session) linkLocal() netip.Addr { return s.v6Pol.LinkLocal() }

func (s *Session) sendRS() {
	s.rsTries++
	s.sendData(ppp.ProtoIPv6, ipv6.AppendRouterSolicit(s.env.Scratch().Aux(), s.linkLocal()))
	if s.rsTries < maxRouterSolicitations {
		s.tStep.Reset(rtrSolicitationIntv)
	}
}

func (s *Session) ipv6Timeout() {
	switch {
	case s.dhcp != nil && s.dhcp.Phase() != dhcpv6.Reply:
		s.sendDHCP()
	case !s.raSeen && s.rsTries < maxRouterSolicitations:
		s.sendRS()
	}
}

func (s *Session) ipv6Input(b []byte) {
	p, err := ipv6.Parse(b)
	if err != nil {
		s.env.ProtocolError("ipv6_malformed")
		return
	}
	mine := p.Dst == s.linkLocal() || p.Dst == s.slaac || p.Dst.IsMulticast()
	if !mine {
		s.env.ProtocolError("ipv6_wrong_destination")
		return
	}
	switch p.NextHeader {
	case ipv6.ProtoICMPv6:
		if len(p.Payload) < 4 || !ipv6.UpperChecksumOK(p) {
			s.env.ProtocolError("icmpv6_bad_checksum")
			return
		}
		switch p.Payload[0] {
		case ipv6.RouterAdvertise:
			s.routerAdvertisement(p)
		case ipv6.ICMPEchoRequest:
			if p.Dst.IsMulticast() {
				return
			}
			reply := ipv6.AppendICMPv6(s.env.Scratch().Aux(), p.Dst, p.Src, 64, ipv6.ICMPEchoReply, 0, p.Payload[4:])
			if s.fits(len(reply)) {
				s.sendData(ppp.ProtoIPv6, reply)
				s.env.Stats().ICMPEchoAnswered++
			}
		}
	case ipv6.ProtoUDP:
		u, err := ipv6.ParseUDP(p)
		if err != nil {
			s.env.ProtocolError("ipv6_bad_udp")
			return
		}
		if u.DstPort == dhcpv6.ClientPort && s.dhcp != nil {
			s.dhcpInput(u.Payload)
		}
	}
}

func (s *Session) routerAdvertisement(p ipv6.Packet) {
	ra, err := ipv6.ParseRA(p)
	if err != nil {
		s.env.ProtocolError("ra_invalid")
		return
	}
	s.raSeen = true
	if ra.HasPrefix {
		s.v6Prefix = ra.Prefix
		if a, ok := ipv6.SLAAC(ra.Prefix, s.v6Pol.InterfaceID()); ok {
			s.slaac = a
		}
	}
	if s.phase != Network {
		return
	}
	if s.cfg.DHCPv6PD && s.dhcp == nil {
		s.dhcp = dhcpv6.NewClient(s.MAC, uint32(s.Index))
		s.dhcp.Start(uint32(s.env.Rand().Int31()), s.now())
		s.sendDHCP()
		return
	}
	if s.dhcp == nil {
		s.tStep.Stop()
	}
	s.checkEstablished()
}

func (s *Session) sendDHCP() {
	msg, rt := s.dhcp.Message(nil, s.now(), uint32(s.env.Rand().Int31()))
	pkt := ipv6.AppendUDP(s.env.Scratch().Aux(), s.linkLocal(), ipv6.AllDHCPServers, 1, dhcpv6.ClientPort, dhcpv6.ServerPort, msg)
	s.sendData(ppp.ProtoIPv6, pkt)
	s.tStep.Reset(rt)
}

func (s *Session) dhcpInput(b []byte) {
	switch s.dhcp.Input(b, s.now()) {
	case dhcpv6.SendRequest:
		s.sendDHCP()
	case dhcpv6.Bound:
		s.tStep.Stop()
		s.checkEstablished()
	case dhcpv6.NoPrefix:
		s.FailDetail = s.dhcp.Status.Message
		if s.phase == Network {
			s.abort(ReasonDHCPv6NoPrefix)
		}
	}
}

// SilentAfter is how many stream packets a session sends before it counts
// as silent if none has come back: the first ones may be in flight.
const SilentAfter = 3

// StreamSilent says whether the session has sent SilentAfter stream packets
// or more and received no stream packet at all. Where the core reflects the
// stream (the lab), that is a session the data plane black-holes one way or
// the other, which the sequence gaps of StreamDown cannot show.
func (s *Session) StreamSilent() bool {
	return s.streamSeq >= SilentAfter && !s.StreamDown.Started()
}
