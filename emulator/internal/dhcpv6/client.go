package dhcpv6

import (
	"bytes"
	"encoding/binary"
	"net/netip"
	"time"
)

// Client runs one prefix delegation exchange (RFC 8415 section 18.2):
// Solicit -> Advertise -> Request -> Reply. It builds messages and judges
// replies; the session owns the timer and the transport.
type Client struct {
	duid     []byte
	iaid     uint32
	txid     uint32
	phase    uint8 // 0 idle, Solicit, Request, Reply (bound)
	started  time.Duration
	serverID []byte
	offered  IAPD
	rt       time.Duration // current retransmission timeout
	tries    int

	Delegated netip.Prefix
	DNS       []netip.Addr
	Status    Status // the last non-success status the server sent
}

// Retransmission parameters (RFC 8415 section 7.6), without the random
// factor: the emulator's sessions start at different times anyway.
const (
	SolIRT = time.Second
	SolMRT = 30 * time.Second // RFC: 3600 s; a test run never waits that long
	ReqIRT = time.Second
	ReqMRT = 30 * time.Second
	ReqMRC = 10
)

// Outcome of a received message.
type Outcome uint8

// Outcomes.
const (
	Ignored     Outcome = iota // not for us, or not acceptable
	SendRequest                // an acceptable Advertise: send Request now
	Bound                      // Reply with a delegated prefix
	NoPrefix                   // the server has no prefix for us
)

// NewClient prepares an exchange identified by the CPE's MAC and an IAID.
func NewClient(mac [6]byte, iaid uint32) *Client {
	return &Client{duid: DUIDLL(mac), iaid: iaid}
}

// Start begins soliciting with a fresh transaction id at time now.
func (c *Client) Start(txid uint32, now time.Duration) {
	c.txid, c.phase, c.started = txid&0xffffff, Solicit, now
	c.serverID, c.offered, c.Delegated, c.DNS = nil, IAPD{}, netip.Prefix{}, nil
	c.rt, c.tries = SolIRT, 0
}

// Phase is the message type the client is currently sending (0 when idle,
// Reply once bound).
func (c *Client) Phase() uint8 { return c.phase }

// Message appends the current message (Solicit or Request) for sending at
// now and returns the timeout to wait for an answer; the timeout doubles
// with each call up to the maximum. When Requests are exhausted the client
// goes back to soliciting, with newTxID.
func (c *Client) Message(b []byte, now time.Duration, newTxID uint32) ([]byte, time.Duration) {
	if c.phase == Request && c.tries >= ReqMRC {
		c.Start(newTxID, now) // RFC 8415 18.2.2: give up on this server
	}
	b = AppendHeader(b, c.phase, c.txid)
	b = AppendOption(b, OptClientID, c.duid)
	if c.phase == Request {
		b = AppendOption(b, OptServerID, c.serverID)
	}
	// Hundredths of a second since the client started (RFC 8415 21.9),
	// zero in the first Solicit.
	elapsed := (now - c.started) / (10 * time.Millisecond)
	if elapsed > 0xffff {
		elapsed = 0xffff
	}
	b = AppendOption(b, OptElapsedTime, binary.BigEndian.AppendUint16(nil, uint16(elapsed)))
	b = AppendOption(b, OptORO, binary.BigEndian.AppendUint16(nil, OptDNSServers))
	ia := IAPD{IAID: c.iaid}
	if c.phase == Request {
		ia = c.offered
	}
	b = AppendIAPD(b, ia)

	rt := c.rt
	c.tries++
	max := SolMRT
	if c.phase == Request {
		max = ReqMRT
	}
	if c.rt *= 2; c.rt > max {
		c.rt = max
	}
	return b, rt
}

// Input judges a server message (the UDP payload).
func (c *Client) Input(b []byte, now time.Duration) Outcome {
	m, err := Parse(b)
	if err != nil || m.TxID != c.txid {
		return Ignored
	}
	cid, ok := FindOption(m.Options, OptClientID)
	if !ok || !bytes.Equal(cid, c.duid) {
		return Ignored
	}
	sid, hasSID := FindOption(m.Options, OptServerID)
	if !hasSID || len(sid) == 0 {
		return Ignored
	}
	if st, ok := FindOption(m.Options, OptStatusCode); ok {
		if s := ParseStatus(st); s.Code != StatusSuccess {
			c.Status = s
			if m.Type == Reply && s.Code == StatusNoPrefixAvail {
				return NoPrefix
			}
			return Ignored
		}
	}
	iaData, ok := FindOption(m.Options, OptIAPD)
	if !ok {
		return Ignored
	}
	ia, err := ParseIAPD(iaData)
	if err != nil || ia.IAID != c.iaid {
		return Ignored
	}
	if ia.Status.Present && ia.Status.Code != StatusSuccess {
		c.Status = ia.Status
		if m.Type == Reply && ia.Status.Code == StatusNoPrefixAvail {
			return NoPrefix
		}
		return Ignored
	}
	var valid []IAPrefix
	for _, p := range ia.Prefixes {
		if p.Valid > 0 && p.Preferred <= p.Valid {
			valid = append(valid, p)
		}
	}
	if len(valid) == 0 {
		return Ignored
	}
	ia.Prefixes = valid
	switch {
	case m.Type == Advertise && c.phase == Solicit:
		c.serverID = append([]byte(nil), sid...)
		c.offered = ia
		c.phase, c.rt, c.tries = Request, ReqIRT, 0
		c.txid = (c.txid + 1) & 0xffffff // a new exchange for the Request
		return SendRequest
	case m.Type == Reply && (c.phase == Request || c.phase == Solicit && hasRapidCommit(m.Options)):
		if c.phase == Request && !bytes.Equal(sid, c.serverID) {
			return Ignored
		}
		c.phase = Reply
		c.Delegated = valid[0].Prefix
		if d, ok := FindOption(m.Options, OptDNSServers); ok {
			for ; len(d) >= 16; d = d[16:] {
				var a [16]byte
				copy(a[:], d)
				c.DNS = append(c.DNS, netip.AddrFrom16(a))
			}
		}
		return Bound
	}
	return Ignored
}

func hasRapidCommit(opts []byte) bool {
	_, ok := FindOption(opts, OptRapidCommit)
	return ok
}
