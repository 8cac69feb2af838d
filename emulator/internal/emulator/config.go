// Package emulator runs many subscriber sessions on one link: it owns the
// sessions, routes received frames to them, paces session starts, streams
// and floods, applies impairments, tears everything down at the end and
// keeps the numbers for the report. Engine is the single-threaded core
// (deterministic: tests drive it with a virtual clock); Run drives it in
// real time from a Link.
package emulator

import (
	"fmt"
	"io"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"p4bng/emulator/internal/ethernet"
	"p4bng/emulator/internal/impair"
	"p4bng/emulator/internal/session"
)

// Config is one emulator run.
type Config struct {
	Sessions           int
	MACBase            ethernet.MAC
	Lines              []ethernet.Tags // empty: every session untagged
	SessionsPerLine    int
	Username           string // templates: {i} session index, {svid}, {cvid}
	Password           string
	WrongPasswordEvery int // sessions whose index is a multiple of it use a wrong password
	Rate               float64
	MaxOutstanding     int
	Session            session.Config

	StreamPPS    float64
	StreamTarget netip.AddrPort
	StreamSize   int

	FloodPPS      float64
	FloodDuration time.Duration

	Impair impair.Config
	Seed   int64

	Duration time.Duration
	Hold     bool
	// Strict: a protocol error of the BNG (report.protocol_errors) fails
	// the run (ExitCode 1), as a failed session does.
	Strict         bool
	NoTeardown     bool
	TeardownWait   time.Duration
	StatusInterval time.Duration
	StatusFile     string
	ReportFile     string
	ReportSessions bool
	Log            io.Writer // status lines; nil for none
}

// Validate checks what flag parsing cannot.
func (c *Config) Validate() error {
	switch {
	case c.Sessions < 1:
		return fmt.Errorf("--sessions must be at least 1")
	case c.SessionsPerLine < 1:
		return fmt.Errorf("--sessions-per-line must be at least 1")
	case len(c.Lines) > 0 && len(c.Lines)*c.SessionsPerLine < c.Sessions:
		return fmt.Errorf("%d sessions need %d lines at %d per line, the VLAN ranges give %d",
			c.Sessions, (c.Sessions+c.SessionsPerLine-1)/c.SessionsPerLine, c.SessionsPerLine, len(c.Lines))
	case c.MACBase.Uint64()+uint64(c.Sessions) > 0xffffffffffff:
		return fmt.Errorf("--mac-base %v + %d sessions overflows", c.MACBase, c.Sessions)
	case c.MACBase.IsMulticast():
		return fmt.Errorf("--mac-base %v is a multicast address", c.MACBase)
	case c.MaxOutstanding < 1:
		return fmt.Errorf("--max-outstanding must be at least 1")
	case c.Rate < 0 || c.StreamPPS < 0 || c.FloodPPS < 0:
		return fmt.Errorf("rates must not be negative")
	case c.StreamPPS > 0 && !c.StreamTarget.IsValid():
		return fmt.Errorf("--stream-pps needs --stream-target IP:PORT")
	case c.Session.DiscoveryRetries < 1:
		return fmt.Errorf("--discovery-retries must be at least 1")
	case c.Session.DHCPv6PD && !c.Session.IPv6:
		return fmt.Errorf("--dhcpv6-pd needs --ipv6")
	case c.StatusInterval <= 0:
		return fmt.Errorf("--status-interval must be positive")
	}
	for _, p := range []float64{c.Impair.DropRx, c.Impair.DropTx, c.Impair.DupTx, c.Impair.ReorderTx} {
		if p < 0 || p > 100 {
			return fmt.Errorf("impairment percentages must be within 0-100")
		}
	}
	return nil
}

// LineOf is the line (tag stack) of session i (1-based): sessions fill a
// line K at a time, lines enumerate c-VLAN fastest.
func (c *Config) LineOf(i int) ethernet.Tags {
	if len(c.Lines) == 0 {
		return ethernet.Untagged()
	}
	return c.Lines[(i-1)/c.SessionsPerLine]
}

// MACOf is --mac-base + i.
func (c *Config) MACOf(i int) ethernet.MAC {
	return ethernet.MACFromUint64(c.MACBase.Uint64() + uint64(i))
}

// ExpectReject reports the wrong-password class.
func (c *Config) ExpectReject(i int) bool {
	return c.WrongPasswordEvery > 0 && i%c.WrongPasswordEvery == 0
}

// Expand fills a username/password template for session i.
func Expand(tmpl string, i int, line ethernet.Tags) string {
	if !strings.Contains(tmpl, "{") {
		return tmpl
	}
	s, c := line.VIDs()
	return strings.NewReplacer("{i}", strconv.Itoa(i), "{svid}", strconv.Itoa(int(s)), "{cvid}", strconv.Itoa(int(c))).Replace(tmpl)
}

// WrongPassword turns a password into one the BNG must refuse.
func WrongPassword(p string) string { return p + "-wrong" }

// BuildLines enumerates the lines of an s-VLAN range and an optional
// c-VLAN range (c-VLAN fastest). stpid is the outer TPID for QinQ.
func BuildLines(s0, s1, c0, c1 int, hasS, hasC bool, stpid uint16) []ethernet.Tags {
	var lines []ethernet.Tags
	if !hasS {
		return nil
	}
	for s := s0; s <= s1; s++ {
		if !hasC {
			lines = append(lines, ethernet.SingleTagged(uint16(s)))
			continue
		}
		for c := c0; c <= c1; c++ {
			lines = append(lines, ethernet.DoubleTagged(stpid, uint16(s), uint16(c)))
		}
	}
	return lines
}
