// Command subemu emulates PPPoE subscribers (CPEs) on one Linux interface,
// to test a BNG from the outside: PPPoE discovery, LCP, PAP/CHAP/MS-CHAPv2,
// IPCP, IPv6CP with SLAAC and DHCPv6-PD, keepalives, test traffic, and
// impairments, for thousands of sessions. See emulator/README.md.
//
// Exit status: 0 when every session outside the wrong-password class was
// established (and stayed up, unless --reconnect), 1 otherwise, 2 for usage
// errors.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"p4bng/emulator/internal/auth"
	"p4bng/emulator/internal/emulator"
	"p4bng/emulator/internal/ethernet"
	"p4bng/emulator/internal/lcp"
	"p4bng/emulator/internal/link"
	"p4bng/emulator/internal/ppp"
	"p4bng/emulator/internal/session"
)

const usageHead = `subemu: PPPoE subscriber emulator (RFC 2516, 1661, 1334, 1994, 2759, 1332, 1877, 5072, 4861, 8415)

usage: subemu --iface IF [options]

Emulates --sessions PPPoE subscribers on IF (raw AF_PACKET socket, as root),
each with its own MAC (--mac-base + i), on untagged, 802.1Q or QinQ lines.
Durations are seconds (fractions allowed). Exit status: 0 all expected
sessions up, 1 otherwise, 2 usage error.

options:
`

// options holds the raw flag values before they become an emulator.Config.
type options struct {
	iface, svlan, cvlan, stpid, macBase, auth, streamTarget, ping string
	statusFile, report                                            string
	cfg                                                           emulator.Config
	rcvbuf                                                        int
	mru, maxPayload                                               uint
	restart, discoveryTimeout, discoveryMaxWait                   float64
	echoInterval, setupTimeout                                    float64
	pingInterval, duration, floodDuration, statusInterval         float64
	teardownWait, reconnectDelay                                  float64
	noDNS, quiet                                                  bool
}

func seconds(v float64) time.Duration { return time.Duration(v * float64(time.Second)) }

func newFlags(o *options, out io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("subemu", flag.ContinueOnError)
	fs.SetOutput(out)
	c := &o.cfg
	s := &c.Session
	fs.StringVar(&o.iface, "iface", "", "interface to run on (required)")
	fs.IntVar(&c.Sessions, "sessions", 1, "number of subscribers")
	fs.Float64Var(&c.Rate, "rate", 0, "new sessions started per second (0 = as fast as --max-outstanding allows)")
	fs.IntVar(&c.MaxOutstanding, "max-outstanding", 1000, "sessions in setup at once, at most")
	fs.StringVar(&o.svlan, "svlan", "", "outer (or only) VLAN id or range A-B; none = untagged")
	fs.StringVar(&o.cvlan, "cvlan", "", "inner VLAN id or range A-B (needs --svlan; QinQ)")
	fs.StringVar(&o.stpid, "stpid", "0x88a8", "TPID of the outer tag of QinQ lines: 0x88a8 or 0x8100")
	fs.IntVar(&c.SessionsPerLine, "sessions-per-line", 1, "subscribers per line; session i is on line (i-1)/K, c-VLAN fastest")
	fs.StringVar(&o.macBase, "mac-base", "02:00:00:00:00:00", "session i uses this MAC + i")
	fs.StringVar(&c.Username, "username", "user{i}@lab.test", "username template ({i} index, {svid}, {cvid})")
	fs.StringVar(&c.Password, "password", "secret{i}", "password template")
	fs.IntVar(&c.WrongPasswordEvery, "wrong-password-every", 0, "sessions whose index is a multiple of N use a wrong password and must be rejected")
	fs.StringVar(&s.ServiceName, "service-name", "", "PPPoE Service-Name to request (empty = any)")
	fs.StringVar(&o.auth, "auth", "pap,chap,mschapv2", "authentication methods to accept, preferred first")
	fs.UintVar(&o.mru, "mru", lcp.PPPoEMRU, "MRU to request (at most 1492 without --ppp-max-payload)")
	fs.UintVar(&o.maxPayload, "ppp-max-payload", 0, "RFC 4638 PPP-Max-Payload to ask for in PADI/PADR (0 = off)")
	fs.IntVar(&s.DiscoveryRetries, "discovery-retries", 5, "PADI (and PADR) attempts (back-off 1, 2, 4... s); PADRs unanswered start over with a PADI")
	fs.Float64Var(&o.discoveryTimeout, "discovery-timeout", 1, "first PADI/PADR wait, doubled per attempt")
	fs.Float64Var(&o.discoveryMaxWait, "discovery-max-wait", session.DefaultDiscoveryMaxWait.Seconds(), "longest PADI/PADR wait: the doubling stops here")
	fs.Float64Var(&o.restart, "restart-timer", 3, "PPP Restart timer")
	fs.IntVar(&s.PPP.MaxConfigure, "max-configure", 10, "PPP Max-Configure")
	fs.IntVar(&s.PPP.MaxTerminate, "max-terminate", 2, "PPP Max-Terminate")
	fs.IntVar(&s.PPP.MaxFailure, "max-failure", 5, "PPP Max-Failure")
	fs.BoolVar(&o.noDNS, "no-dns", false, "do not request DNS servers in IPCP")
	fs.BoolVar(&s.IPv6, "ipv6", false, "negotiate IPv6CP, solicit a router advertisement, SLAAC")
	fs.BoolVar(&s.DHCPv6PD, "dhcpv6-pd", false, "request a delegated prefix with DHCPv6 (needs --ipv6)")
	fs.Float64Var(&o.echoInterval, "lcp-echo-interval", 0, "LCP Echo-Request interval (0 = off)")
	fs.IntVar(&s.EchoFailures, "lcp-echo-failures", 3, "unanswered Echo-Requests before the session is declared down")
	fs.Float64Var(&o.setupTimeout, "setup-timeout", 60, "a session not established by then has failed")
	fs.BoolVar(&s.Reconnect, "reconnect", false, "start a session over after it went down")
	fs.Float64Var(&o.reconnectDelay, "reconnect-delay", 1, "wait before reconnecting")
	fs.StringVar(&o.ping, "ping", "", "IPv4 address each established session pings")
	fs.Float64Var(&o.pingInterval, "ping-interval", 1, "ping interval per session")
	fs.IntVar(&s.PingSize, "ping-size", 56, "ICMP data bytes per ping")
	fs.Float64Var(&c.StreamPPS, "stream-pps", 0, "upstream UDP packets per second, all sessions together (round robin)")
	fs.StringVar(&o.streamTarget, "stream-target", "", "IP:PORT of the upstream stream")
	fs.IntVar(&c.StreamSize, "stream-size", 64, "UDP payload bytes of stream packets (at least 28)")
	fs.Float64Var(&c.Impair.DropRx, "drop-rx", 0, "percentage of received control frames to drop")
	fs.Float64Var(&c.Impair.DropTx, "drop-tx", 0, "percentage of control frames to lose on the way to the BNG")
	fs.Float64Var(&c.Impair.DupTx, "dup-tx", 0, "percentage of control frames to send twice")
	fs.Float64Var(&c.Impair.ReorderTx, "reorder-tx", 0, "percentage of control frames to send after the next one")
	fs.Int64Var(&c.Seed, "seed", 0, "random seed (0 = from the clock)")
	fs.Float64Var(&c.FloodPPS, "padi-flood", 0, "also send this many PADIs per second from random MACs")
	fs.Float64Var(&o.floodDuration, "flood-duration", 10, "how long the PADI flood lasts")
	fs.Float64Var(&o.duration, "duration", 0, "seconds of traffic after every session has finished setup")
	fs.BoolVar(&c.Hold, "hold", false, "run until SIGTERM/SIGINT")
	fs.BoolVar(&c.Strict, "strict", false, "exit 1 also when the BNG made a protocol error (report: protocol_errors)")
	fs.BoolVar(&c.NoTeardown, "no-teardown", false, "exit without Terminate-Request/PADT (CPEs vanishing)")
	fs.Float64Var(&o.teardownWait, "teardown-wait", 1, "how long to wait for Terminate-Acks before the PADTs")
	fs.Float64Var(&o.statusInterval, "status-interval", 1, "status line / status file / timeline interval")
	fs.StringVar(&o.statusFile, "status-file", "", "rewrite the JSON report here every interval (atomically)")
	fs.StringVar(&o.report, "report", "", "write the final JSON report here")
	fs.BoolVar(&c.ReportSessions, "report-sessions", false, "include the per-session list in the reports")
	fs.IntVar(&o.rcvbuf, "rcvbuf", 8<<20, "socket receive buffer in bytes")
	fs.BoolVar(&o.quiet, "quiet", false, "no status lines")
	// On a parse error the flag package prints the error and calls Usage:
	// keep that to a hint; --help prints the whole text (printUsage).
	fs.Usage = func() { fmt.Fprintln(fs.Output(), "run 'subemu --help' for the options") }
	return fs
}

// printUsage lists the options GNU-style (--name), as they are used.
func printUsage(fs *flag.FlagSet, w io.Writer) {
	fmt.Fprint(w, usageHead)
	fs.VisitAll(func(f *flag.Flag) {
		name, usage := flag.UnquoteUsage(f)
		line := "  --" + f.Name
		if name != "" {
			line += " " + strings.ToUpper(name)
		}
		fmt.Fprintf(w, "%s\n    \t%s", line, usage)
		if f.DefValue != "" && f.DefValue != "0" && f.DefValue != "false" {
			fmt.Fprintf(w, " (default %s)", f.DefValue)
		}
		fmt.Fprintln(w)
	})
}

// parseRange reads "A" or "A-B" of VLAN ids.
func parseRange(s, name string) (int, int, error) {
	a, b, isRange := strings.Cut(s, "-")
	lo, err := strconv.Atoi(strings.TrimSpace(a))
	hi := lo
	if err == nil && isRange {
		hi, err = strconv.Atoi(strings.TrimSpace(b))
	}
	if err != nil || lo < 1 || hi > 4094 || hi < lo {
		return 0, 0, fmt.Errorf("--%s %q: want a VLAN id or range within 1-4094", name, s)
	}
	return lo, hi, nil
}

func (o *options) build(fs *flag.FlagSet, stderr io.Writer) (*emulator.Config, error) {
	c := &o.cfg
	s := &c.Session
	if o.iface == "" {
		return nil, errors.New("--iface is required")
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	var err error
	if c.MACBase, err = ethernet.ParseMAC(o.macBase); err != nil {
		return nil, err
	}
	var stpid uint16
	switch strings.ToLower(o.stpid) {
	case "0x88a8", "88a8":
		stpid = ethernet.TPID8021AD
	case "0x8100", "8100":
		stpid = ethernet.TPID8021Q
	case "0x9100", "9100":
		stpid = ethernet.TPID9100
	default:
		return nil, fmt.Errorf("--stpid %q: want 0x88a8 or 0x8100", o.stpid)
	}
	if o.cvlan != "" && o.svlan == "" {
		return nil, errors.New("--cvlan needs --svlan (the outer tag)")
	}
	if o.svlan != "" {
		s0, s1, err := parseRange(o.svlan, "svlan")
		if err != nil {
			return nil, err
		}
		c0, c1 := 0, 0
		if o.cvlan != "" {
			if c0, c1, err = parseRange(o.cvlan, "cvlan"); err != nil {
				return nil, err
			}
		}
		c.Lines = emulator.BuildLines(s0, s1, c0, c1, true, o.cvlan != "", stpid)
	}
	s.LCP.Allowed = nil
	if o.auth != "" && o.auth != "none" {
		for _, m := range strings.Split(o.auth, ",") {
			meth, err := auth.ParseMethod(m)
			if err != nil {
				return nil, err
			}
			s.LCP.Allowed = append(s.LCP.Allowed, meth)
		}
	}
	if o.maxPayload != 0 && (o.maxPayload < lcp.PPPoEMRU || o.maxPayload > 9000) {
		return nil, fmt.Errorf("--ppp-max-payload %d: want 1492-9000", o.maxPayload)
	}
	limit := uint(lcp.PPPoEMRU)
	if o.maxPayload > 0 {
		limit = o.maxPayload
	}
	if o.mru < lcp.MinMRU || o.mru > limit {
		return nil, fmt.Errorf("--mru %d: want %d-%d", o.mru, lcp.MinMRU, limit)
	}
	s.MaxPayload = uint16(o.maxPayload)
	s.LCP.MRU, s.LCP.MaxPeerMRU = uint16(o.mru), lcp.PPPoEMRU
	s.PPP.Restart = seconds(o.restart)
	if s.PPP.Restart <= 0 || s.PPP.MaxConfigure < 1 || s.PPP.MaxTerminate < 1 || s.PPP.MaxFailure < 1 {
		return nil, errors.New("--restart-timer and the PPP counters must be positive")
	}
	s.DiscoveryTimeout = seconds(o.discoveryTimeout)
	s.DiscoveryMaxWait = seconds(o.discoveryMaxWait)
	s.EchoInterval = seconds(o.echoInterval)
	s.SetupTimeout = seconds(o.setupTimeout)
	s.ReconnectDelay = seconds(o.reconnectDelay)
	s.PingInterval = seconds(o.pingInterval)
	s.WantDNS = !o.noDNS
	if s.DiscoveryTimeout <= 0 || s.SetupTimeout <= 0 || s.EchoInterval < 0 || s.PingInterval <= 0 {
		return nil, errors.New("--discovery-timeout, --setup-timeout and --ping-interval must be positive")
	}
	if s.DiscoveryMaxWait < s.DiscoveryTimeout {
		return nil, errors.New("--discovery-max-wait must be at least --discovery-timeout")
	}
	if s.EchoInterval > 0 && s.EchoFailures < 1 {
		return nil, errors.New("--lcp-echo-failures must be at least 1")
	}
	if o.ping != "" {
		a, err := netip.ParseAddr(o.ping)
		if err != nil || !a.Is4() {
			return nil, fmt.Errorf("--ping %q: want an IPv4 address", o.ping)
		}
		s.PingTarget = a
	}
	if s.PingSize < 0 || s.PingSize > 1400 {
		return nil, errors.New("--ping-size: want 0-1400")
	}
	if o.streamTarget != "" {
		ap, err := netip.ParseAddrPort(o.streamTarget)
		if err != nil || !ap.Addr().Is4() || ap.Port() == 0 {
			return nil, fmt.Errorf("--stream-target %q: want IPv4:PORT", o.streamTarget)
		}
		c.StreamTarget = ap
	}
	if c.StreamSize < 28 || c.StreamSize > int(o.mru)-28 {
		return nil, fmt.Errorf("--stream-size %d: want 28-%d (the MRU minus IPv4 and UDP headers)", c.StreamSize, int(o.mru)-28)
	}
	c.FloodDuration = seconds(o.floodDuration)
	c.Duration = seconds(o.duration)
	c.TeardownWait = seconds(o.teardownWait)
	c.StatusInterval = seconds(o.statusInterval)
	c.StatusFile, c.ReportFile = o.statusFile, o.report
	if c.Duration < 0 || c.TeardownWait < 0 {
		return nil, errors.New("--duration and --teardown-wait must not be negative")
	}
	if c.Seed == 0 {
		c.Seed = time.Now().UnixNano()
	}
	if !o.quiet {
		c.Log = stderr
	}
	return c, c.Validate()
}

func run(args []string, stdout, stderr io.Writer) int {
	var o options
	o.cfg.Session.PPP = ppp.DefaultConfig()
	fs := newFlags(&o, stderr)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			printUsage(fs, stdout)
			return 0
		}
		return 2
	}
	cfg, err := o.build(fs, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "subemu: %v\n", err)
		return 2
	}
	l, err := link.OpenAFPacket(o.iface, o.rcvbuf)
	if err != nil {
		fmt.Fprintf(stderr, "subemu: --iface %s: %v\n", o.iface, err)
		return 1
	}
	defer l.Close()
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)
	return emulator.Run(cfg, l, sigs, stderr)
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}
