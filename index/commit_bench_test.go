package index

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// BenchmarkSearchDuringCommit measures what a large commit costs searches
// of the same owner: the p99 latency of hybrid queries while 3,000-chunk
// batches commit, against the p99 of the same queries with no commit. The
// machine's load drifts, so both are measured in the same run, in
// alternating windows of the same length. Searches read the published
// version without locks, so the ratio is the cost of sharing CPU and
// memory with the writer, not of waiting for it.
func BenchmarkSearchDuringCommit(b *testing.B) {
	const dim, owner, batch, rounds = 384, 5000, 3000, 3
	rng := rand.New(rand.NewPCG(11, 11))
	x := testOpts.New("m", dim)
	must(b, x.Add(syntheticEntries(rng, 0, owner, dim)...))
	queries := syntheticQueries(rng, 500, dim, 10)
	next := uint64(owner)
	var idle, busy []time.Duration
	search := func(i int) time.Duration {
		start := time.Now()
		x.Search(queries[i%len(queries)])
		return time.Since(start)
	}
	window := time.Second // an idle window lasts as long as the last commit
	for b.Loop() {
		for range rounds {
			for i, end := 0, time.Now().Add(window); time.Now().Before(end); i++ {
				idle = append(idle, search(i))
			}
			b.StopTimer()
			es := syntheticEntries(rng, next, batch, dim)
			next += batch
			b.StartTimer()
			start := time.Now()
			done := make(chan error, 1)
			go func() { done <- x.Commit(func() error { return x.Add(es...) }) }()
			for i := 0; ; i++ {
				select {
				case err := <-done:
					must(b, err)
				default:
					busy = append(busy, search(i))
					continue
				}
				break
			}
			window = time.Since(start)
		}
	}
	p99Idle, p99Busy := p99(idle), p99(busy)
	b.ReportMetric(ms(p99Idle), "p99-idle-ms")
	b.ReportMetric(ms(p99Busy), "p99-commit-ms")
	b.ReportMetric(float64(p99Busy)/float64(p99Idle), "p99-ratio")
	b.ReportMetric(float64(len(busy))/float64(rounds*b.N), "searches/commit")
}

func p99(lat []time.Duration) time.Duration {
	s := slices.Clone(lat)
	slices.Sort(s)
	return s[len(s)*99/100]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
