package emulator

import (
	"os"
	"strconv"
	"testing"
	"time"

	"p4bng/emulator/internal/ethernet"
)

// BenchmarkSetup brings 40k sessions up on the bench (engine and fake
// AC in one goroutine): the CPU cost of a session setup, both ends.
func BenchmarkSetup(b *testing.B) {
	n := 40000
	if v, err := strconv.Atoi(os.Getenv("SUBEMU_BENCH_SESSIONS")); err == nil {
		n = v
	}
	for i := 0; i < b.N; i++ {
		cfg := baseConfig(n)
		cfg.Lines = BuildLines(1, 40, 1, 1000, true, true, ethernet.TPID8021AD)
		cfg.Hold = true
		bn := newBench(b, cfg, acConfig()).start()
		start := time.Now()
		bn.run(600*time.Second, func() bool { return bn.e.Phase() == PhaseRunning })
		el := time.Since(start)
		r := bn.e.Report(false)
		b.ReportMetric(float64(r.Established)/el.Seconds(), "sessions/s")
		b.ReportMetric(float64(r.Established), "established")
	}
}
