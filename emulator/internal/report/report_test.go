package report

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestPercentiles(t *testing.T) {
	v := []float64{}
	for i := 100; i >= 1; i-- {
		v = append(v, float64(i))
	}
	p := Summarise(v)
	if p.P50 != 50 || p.P95 != 95 || p.Max != 100 {
		t.Fatalf("%+v", p)
	}
	if (Summarise(nil) != Percentiles{}) || Percentile([]float64{7}, 0.95) != 7 {
		t.Fatal("degenerate inputs")
	}
}

// The keys the lab's tests rely on must keep their names.
func TestSchemaKeys(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.json")
	r := &Report{FailedReasons: map[string]uint64{"discovery_timeout": 0}, Sessions: []Session{{Index: 1, DNS: []string{}}}}
	if err := WriteFile(path, r); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	var m map[string]interface{}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"requested", "established", "failed", "failed_reasons", "expected_rejects", "flaps",
		"setup_rate_cps", "setup_time_ms", "established_timeline", "ping", "stream_up", "stream_down", "echo",
		"padi_flood_sent", "control", "sessions"} {
		if _, ok := m[k]; !ok {
			t.Errorf("missing key %q", k)
		}
	}
	sub := map[string][]string{
		"setup_time_ms": {"p50", "p95", "max"}, "ping": {"sent", "received"}, "stream_up": {"sent"},
		"stream_down": {"received", "lost", "reordered", "sessions_silent"}, "echo": {"requests_answered", "requests_sent", "replies_received"},
		"control": {"tx", "rx", "dropped_rx", "dup_tx", "reordered_tx"},
	}
	for k, keys := range sub {
		obj := m[k].(map[string]interface{})
		for _, kk := range keys {
			if _, ok := obj[kk]; !ok {
				t.Errorf("missing key %s.%s", k, kk)
			}
		}
	}
	s := m["sessions"].([]interface{})[0].(map[string]interface{})
	for _, k := range []string{"index", "mac", "line", "pppoe_session_id", "state", "ipv4", "dns", "ipv6_prefix",
		"delegated_prefix", "username", "auth", "magic", "peer_magic", "setup_ms"} {
		if _, ok := s[k]; !ok {
			t.Errorf("missing session key %q", k)
		}
	}
	// No temporary file is left behind.
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Fatalf("directory holds %d files", len(entries))
	}
	if !strings.Contains(StatusLine(r, 0), "established 0/0") {
		t.Fatal(StatusLine(r, 0))
	}
}
