package emulator

import (
	"fmt"
	"io"
	"os"
	"sync/atomic"
	"time"

	"p4bng/emulator/internal/link"
)

// batches in flight between the receive goroutine and the event loop.
const (
	rxBatches   = 16
	rxBatchSize = 64
)

type linkSender struct{ l link.Link }

func (s linkSender) Send(frame []byte) error { return s.l.Send(frame) }

// Run drives an Engine in real time on a link until the run is over: one
// goroutine receives (blocking in the kernel), this one owns the engine
// (frames, timers, signals). The first signal starts the teardown, a
// second gives up waiting for Terminate-Acks. It returns the exit code.
func Run(cfg *Config, l link.Link, signals <-chan os.Signal, errOut io.Writer) int {
	e := New(cfg, linkSender{l})
	if k, ok := l.(interface{ Drops() uint64 }); ok {
		e.KernelDrops = k.Drops
	}
	start := time.Now()
	now := func() time.Duration { return time.Since(start) }

	free := make(chan *link.Batch, rxBatches)
	for i := 0; i < rxBatches; i++ {
		free <- link.NewBatch(rxBatchSize)
	}
	rx := make(chan *link.Batch, rxBatches)
	rxErr := make(chan error, 1)
	rxDone := make(chan struct{})
	var stopping atomic.Bool
	go func() {
		defer close(rxDone)
		for !stopping.Load() {
			var b *link.Batch
			select {
			case b = <-free:
			case <-time.After(link.PollInterval):
				continue
			}
			if err := l.Receive(b); err != nil {
				if !stopping.Load() {
					rxErr <- err
				}
				return
			}
			if b.N == 0 {
				free <- b
				continue
			}
			rx <- b
		}
	}()

	e.Start()
	wake := time.NewTimer(time.Hour)
	exit := -1
	for !e.Done() {
		e.Advance(now())
		if e.Done() {
			break
		}
		wait := time.Hour
		if next, ok := e.Next(); ok {
			wait = next - now()
		}
		if wait <= 0 {
			continue
		}
		if !wake.Stop() {
			select {
			case <-wake.C:
			default:
			}
		}
		wake.Reset(wait)
		select {
		case b := <-rx:
			e.Advance(now())
			for i := 0; i < b.N; i++ {
				e.HandleFrame(b.Frames[i])
			}
			free <- b
		case <-wake.C:
		case sig := <-signals:
			e.Advance(now())
			if e.Phase() != PhaseTeardown {
				fmt.Fprintf(errOut, "subemu: %v: tearing down\n", sig)
			}
			e.Stop()
		case err := <-rxErr:
			fmt.Fprintf(errOut, "subemu: receive: %v\n", err)
			e.Abort()
			exit = 1
		}
	}
	stopping.Store(true)
	select {
	case <-rxDone:
	case <-time.After(2 * link.PollInterval):
	}
	if err := e.WriteReport(); err != nil {
		fmt.Fprintf(errOut, "subemu: report: %v\n", err)
		exit = 1
	}
	if cfg.Log != nil {
		fmt.Fprintln(cfg.Log, e.FinalStatus())
	}
	if exit < 0 {
		exit = e.ExitCode()
	}
	return exit
}
