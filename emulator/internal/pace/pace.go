// Package pace is a token bucket: it spreads "R per second" work (session
// starts, stream packets, flood PADIs) over the scheduler's ticks. A late
// tick catches up with a bounded burst instead of a flood.
package pace

import "time"

// Bucket holds tokens that refill at Rate per second up to Burst.
type Bucket struct {
	rate   float64
	burst  float64
	tokens float64
	last   time.Duration
}

// New returns a bucket for rate per second (0 = unlimited) that may save up
// burst tokens; it starts full so the first tick does not wait.
func New(rate float64, burst float64, now time.Duration) *Bucket {
	if burst < 1 {
		burst = 1
	}
	return &Bucket{rate: rate, burst: burst, tokens: burst, last: now}
}

// Unlimited reports a zero rate.
func (b *Bucket) Unlimited() bool { return b.rate <= 0 }

// Take removes up to want tokens and returns how many it got.
func (b *Bucket) Take(now time.Duration, want int) int {
	if b.rate <= 0 {
		return want
	}
	if now > b.last {
		b.tokens += b.rate * (now - b.last).Seconds()
		if b.tokens > b.burst {
			b.tokens = b.burst
		}
		b.last = now
	}
	n := int(b.tokens)
	if n > want {
		n = want
	}
	b.tokens -= float64(n)
	return n
}

// Next is how long until one more token is available (0 if one is).
func (b *Bucket) Next() time.Duration {
	if b.rate <= 0 || b.tokens >= 1 {
		return 0
	}
	return time.Duration((1 - b.tokens) / b.rate * float64(time.Second))
}
