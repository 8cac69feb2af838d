// Package session is one emulated subscriber: the CPE's state machine that
// runs PPPoE discovery (RFC 2516), then PPP over the PPPoE session: LCP,
// authentication, IPCP and optionally IPv6CP with router solicitation and
// DHCPv6 prefix delegation, then test traffic. It owns no goroutine and no
// socket: the emulator feeds it frames and timer expiries, and it answers
// through Env. Everything runs on the emulator's one event loop.
package session

import (
	"math/rand"
	"net/netip"
	"time"

	"p4bng/emulator/internal/lcp"
	"p4bng/emulator/internal/ppp"
	"p4bng/emulator/internal/timer"
)

// Config is what all sessions share.
type Config struct {
	ServiceName      string
	MaxPayload       uint16        // RFC 4638 PPP-Max-Payload to ask for; 0 = do not
	DiscoveryRetries int           // PADI (and PADR) attempts
	DiscoveryTimeout time.Duration // first wait; doubles per attempt
	DiscoveryMaxWait time.Duration // the doubling stops here; 0 = 64 s
	PPP              ppp.Config
	LCP              lcp.Config
	WantDNS          bool
	IPv6             bool
	DHCPv6PD         bool
	EchoInterval     time.Duration // 0 = no LCP keepalive
	EchoFailures     int
	SetupTimeout     time.Duration
	Reconnect        bool
	ReconnectDelay   time.Duration
	PingTarget       netip.Addr // invalid = no ping
	PingInterval     time.Duration
	PingSize         int // ICMP data bytes
}

// Reasons a setup fails or an established session goes down. The report
// counts them by these names.
const (
	ReasonDiscoveryTimeout = "discovery_timeout"
	ReasonPADSError        = "pads_error"
	ReasonPADT             = "padt_received"
	ReasonLCPTimeout       = "lcp_timeout"
	ReasonLCPTerminated    = "lcp_terminated"
	ReasonLCPRejected      = "lcp_rejected"
	ReasonLCPRenegotiated  = "lcp_renegotiated"
	ReasonLoopback         = "lcp_loopback"
	ReasonAuthRejected     = "auth_rejected"
	ReasonAuthTimeout      = "auth_timeout"
	ReasonBadAuthenticator = "auth_bad_authenticator"
	ReasonIPCPTimeout      = "ipcp_timeout"
	ReasonIPCPRejected     = "ipcp_rejected"
	ReasonIPCPTerminated   = "ipcp_terminated"
	ReasonNoAddress        = "ipcp_no_address"
	ReasonIPv6Timeout      = "ipv6_timeout"
	ReasonIPv6CPRejected   = "ipv6cp_rejected"
	ReasonIPv6CPTerminated = "ipv6cp_terminated"
	ReasonDHCPv6Timeout    = "dhcpv6_timeout"
	ReasonDHCPv6NoPrefix   = "dhcpv6_no_prefix"
	ReasonEchoTimeout      = "echo_timeout"
	ReasonTeardown         = "teardown"
)

// KnownReasons are always present in the report (zero when unused), so a
// test can read any of them without checking for the key.
var KnownReasons = []string{
	ReasonDiscoveryTimeout, ReasonPADSError, ReasonPADT, ReasonLCPTimeout, ReasonLCPTerminated,
	ReasonLCPRejected, ReasonLCPRenegotiated, ReasonLoopback, ReasonAuthRejected, ReasonAuthTimeout, ReasonBadAuthenticator,
	ReasonIPCPTimeout, ReasonIPCPRejected, ReasonIPCPTerminated, ReasonNoAddress, ReasonIPv6Timeout,
	ReasonIPv6CPRejected, ReasonIPv6CPTerminated, ReasonDHCPv6Timeout, ReasonDHCPv6NoPrefix, ReasonEchoTimeout,
}

// Stats are the counters all sessions add to.
type Stats struct {
	PingSent, PingReceived    uint64
	EchoRequestsSent          uint64
	EchoRepliesReceived       uint64
	EchoRequestsAnswered      uint64
	ICMPEchoAnswered          uint64 // pings from the core side we answered
	StreamUpSent              uint64
	UDPReceived               uint64
	StreamDownWrongSession    uint64 // a stream payload for another subscriber arrived on this one
	OversizeSkipped           uint64 // data packets not sent because they exceed the peer's MRU
	IPv4Reassembled           uint64 // datagrams put together from the BNG's fragments
	IPv4ReassemblyExpired     uint64 // incomplete datagrams dropped after ipv4.ReassemblyTimeout
	IPv4FragmentsSent         uint64 // fragments of our echo replies larger than the peer's MRU
	ImplicitAuthSuccess       uint64
	NCPRenegotiations         uint64 // IPCP/IPv6CP renegotiated while established
	DiscoveryRetransmissions  uint64
	DiscoveryRestarts         uint64 // PADRs unanswered, back to PADI
	PAPRetransmissions        uint64
	CHAPResponseRetransmitted uint64
}

// Env is the emulator around a session.
type Env interface {
	Sched() *timer.Scheduler
	Rand() *rand.Rand
	Scratch() *ppp.Scratch
	// TxBuf is an empty buffer to build one frame in; SendControl and
	// SendData copy what they are given.
	TxBuf() []byte
	SendControl(frame []byte)
	SendData(frame []byte)
	Stats() *Stats
	// ProtocolError counts a violation by the BNG (never fatal by itself).
	ProtocolError(what string)

	Established(s *Session)
	Failed(s *Session, reason string) // a setup attempt failed
	Lost(s *Session, reason string)   // an established session went down (a flap)
	Closed(s *Session)                // our teardown finished
	ReadyToReconnect(s *Session)      // the reconnect delay passed: queue a new attempt
}
