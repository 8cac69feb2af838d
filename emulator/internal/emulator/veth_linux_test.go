//go:build linux

package emulator

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"p4bng/emulator/internal/auth"
	"p4bng/emulator/internal/ethernet"
	"p4bng/emulator/internal/fakeac"
	"p4bng/emulator/internal/link"
	"p4bng/emulator/internal/report"
	"p4bng/emulator/internal/timer"
)

// vethPair creates a veth pair for the test and removes it afterwards; it
// skips the test where that is not possible (not root, no iproute2).
func vethPair(t *testing.T) (string, string) {
	t.Helper()
	if testing.Short() || os.Getenv("SUBEMU_SKIP_VETH") != "" {
		t.Skip("veth test skipped (-short or SUBEMU_SKIP_VETH)")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root for veth and raw sockets")
	}
	ip, err := exec.LookPath("ip")
	if err != nil {
		t.Skip("needs iproute2")
	}
	a := fmt.Sprintf("semu%da", os.Getpid()%100000)
	b := fmt.Sprintf("semu%db", os.Getpid()%100000)
	if out, err := exec.Command(ip, "link", "add", a, "type", "veth", "peer", "name", b).CombinedOutput(); err != nil {
		t.Skipf("cannot create a veth pair: %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command(ip, "link", "del", a).Run() })
	for _, n := range []string{a, b} {
		if out, err := exec.Command(ip, "link", "set", n, "up").CombinedOutput(); err != nil {
			t.Fatalf("%v %s", err, out)
		}
	}
	return a, b
}

// runAC serves the fake AC on a raw socket in real time until stop closes.
func runAC(t *testing.T, iface string, cfg fakeac.Config, stop <-chan struct{}) (*fakeac.AC, <-chan struct{}) {
	l, err := link.OpenAFPacket(iface, 4<<20)
	if err != nil {
		t.Fatal(err)
	}
	sched := timer.New()
	ac := fakeac.New(cfg, sched, func(f []byte) { l.Send(f) })
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer l.Close()
		start := time.Now()
		b := link.NewBatch(64)
		for {
			select {
			case <-stop:
				return
			default:
			}
			if err := l.Receive(b); err != nil {
				t.Error(err)
				return
			}
			sched.Advance(time.Since(start))
			for i := 0; i < b.N; i++ {
				ac.Handle(b.Frames[i])
			}
		}
	}()
	return ac, done
}

// The whole path on a real link: AF_PACKET on both ends of a veth, QinQ
// with 802.1ad outer tags (which the kernel strips and we put back), the
// real-time loop, the report file.
func TestRealLinkQinQ(t *testing.T) {
	a, b := vethPair(t)
	acCfg := acConfig()
	acCfg.Auth = auth.CHAPMD5
	stop := make(chan struct{})
	ac, acDone := runAC(t, b, acCfg, stop)
	stopAC := func() {
		select {
		case <-stop:
		default:
			close(stop)
		}
		<-acDone
	}
	defer stopAC()

	dir := t.TempDir()
	cfg := baseConfig(40)
	cfg.Lines = BuildLines(100, 101, 1, 10, true, true, ethernet.TPID8021AD)
	cfg.SessionsPerLine = 2
	cfg.WrongPasswordEvery = 10
	cfg.Session.PingTarget = acCfg.PingTarget
	cfg.Duration = 2 * time.Second
	cfg.Session.SetupTimeout = 20 * time.Second
	cfg.ReportFile = filepath.Join(dir, "report.json")
	cfg.StatusFile = filepath.Join(dir, "status.json")
	cfg.ReportSessions = true
	var log bytes.Buffer
	cfg.Log = &log
	l, err := link.OpenAFPacket(a, 8<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	code := Run(cfg, l, nil, os.Stderr)
	r := readReport(t, cfg.ReportFile)
	if code != 0 || r.Established != 36 || r.ExpectedRejects != 4 || r.Failed != 0 {
		t.Fatalf("exit %d established %d rejects %d failed %v errors %v\n%s", code, r.Established, r.ExpectedRejects,
			nonZero(r.FailedReasons), r.ProtocolErrors, log.String())
	}
	if len(r.ProtocolErrors) != 0 || r.Ping.Sent == 0 || r.Ping.Received+40 < r.Ping.Sent {
		t.Fatalf("errors %v ping %+v", r.ProtocolErrors, r.Ping)
	}
	for _, s := range r.Sessions[:4] {
		want := cfg.LineOf(s.Index)
		sv, cv := want.VIDs()
		if s.Line != [2]uint16{sv, cv} {
			t.Fatalf("session %d on %v", s.Index, s.Line)
		}
	}
	time.Sleep(200 * time.Millisecond) // the PADTs reach the AC
	stopAC()                           // before looking at its state
	padts := 0
	for _, s := range ac.Sessions {
		if s.PADTReceived {
			padts++
		}
	}
	if padts != 40 { // the rejected sessions end with a PADT too
		t.Fatalf("AC got %d PADTs, want 40", padts)
	}
	if len(ac.Errors) != 0 {
		t.Fatalf("AC errors %v", ac.Errors)
	}
}

func readReport(t *testing.T, path string) *report.Report {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var r report.Report
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return &r
}

// TestRealLinkScale is opt-in (SUBEMU_SCALE=sessions): set up that many
// sessions over a veth against the in-process fake AC, and report the rate.
// Both ends share the machine, so this is a lower bound for subemu alone.
func TestRealLinkScale(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("SUBEMU_SCALE"))
	if n == 0 {
		t.Skip("set SUBEMU_SCALE=<sessions> to run")
	}
	a, b := vethPair(t)
	acCfg := acConfig()
	stop := make(chan struct{})
	_, acDone := runAC(t, b, acCfg, stop)
	defer func() { close(stop); <-acDone }()
	cfg := baseConfig(n)
	cfg.Lines = BuildLines(1, 40, 1, 1000, true, true, ethernet.TPID8021AD)
	cfg.Session.SetupTimeout = 120 * time.Second
	cfg.ReportFile = filepath.Join(t.TempDir(), "report.json")
	cfg.Log = os.Stderr
	if r, err := strconv.ParseFloat(os.Getenv("SUBEMU_RATE"), 64); err == nil {
		cfg.Rate = r
	}
	l, err := link.OpenAFPacket(a, 32<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	code := Run(cfg, l, nil, os.Stderr)
	r := readReport(t, cfg.ReportFile)
	t.Logf("exit %d established %d/%d at %.0f/s, setup p50 %.0f ms p95 %.0f ms max %.0f ms, kernel drops %d, failed %v",
		code, r.Established, n, r.SetupRateCPS, r.SetupTimeMS.P50, r.SetupTimeMS.P95, r.SetupTimeMS.Max, r.KernelDrops, nonZero(r.FailedReasons))
}
