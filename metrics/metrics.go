// Package metrics holds docsift's Prometheus metrics: one registry, and the
// collectors the server, the indexing pipeline and the query path update.
// Labels are bounded by design: route patterns, statuses, job states and
// model names, never owners, documents or paths, so the series count does
// not grow with tenants and nothing about them leaks to whoever scrapes.
package metrics

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics is the set of docsift's collectors. The zero value is not usable;
// New makes one. A nil *Metrics records nothing, so packages and tests that
// do not care need not make one.
type Metrics struct {
	reg *prometheus.Registry

	requests       *prometheus.CounterVec
	requestSeconds *prometheus.HistogramVec
	jobsEnded      *prometheus.CounterVec
	jobsRunning    prometheus.Gauge
	chunksIndexed  prometheus.Counter
	embedSeconds   *prometheus.HistogramVec
	answerSeconds  *prometheus.HistogramVec
	lastSnapshot   prometheus.Gauge
}

// latencyBuckets span a cached lexical query (sub-millisecond) to a model
// call on a small CPU (tens of seconds).
var latencyBuckets = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}

// New returns docsift's metrics on a registry of their own, with the Go
// runtime's and the process's collectors beside them.
func New() *Metrics {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m := &Metrics{
		reg: reg,
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "docsift_http_requests_total", Help: "HTTP requests by route pattern, method and status.",
		}, []string{"route", "method", "status"}),
		requestSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "docsift_http_request_duration_seconds", Help: "HTTP request latency by route pattern and method.", Buckets: latencyBuckets,
		}, []string{"route", "method"}),
		jobsEnded: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "docsift_jobs_ended_total", Help: "Indexing job runs by how they ended: succeeded, failed, or retry (requeued after a passing failure).",
		}, []string{"outcome"}),
		jobsRunning: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "docsift_jobs_processing", Help: "Indexing jobs running now.",
		}),
		chunksIndexed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "docsift_chunks_indexed_total", Help: "Chunks written to the store and the index; its rate is the ingest speed.",
		}),
		embedSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "docsift_embed_duration_seconds", Help: "Embedding calls by model and purpose (document batch or query).", Buckets: latencyBuckets,
		}, []string{"model", "purpose"}),
		answerSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "docsift_answer_duration_seconds", Help: "Whole-answer time by answer model.", Buckets: latencyBuckets,
		}, []string{"model"}),
		lastSnapshot: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "docsift_index_snapshot_timestamp_seconds", Help: "Unix time of the last index snapshot pass that succeeded; its age is time() minus this.",
		}),
	}
	reg.MustRegister(m.requests, m.requestSeconds, m.jobsEnded, m.jobsRunning, m.chunksIndexed, m.embedSeconds, m.answerSeconds, m.lastSnapshot)
	return m
}

// Handler serves the metrics in Prometheus's text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// Register adds a collector that reads its figures when scraped (queue
// depth, index sizes).
func (m *Metrics) Register(c prometheus.Collector) {
	if m != nil {
		m.reg.MustRegister(c)
	}
}

// Request records one HTTP request.
func (m *Metrics) Request(route, method, status string, took time.Duration) {
	if m == nil {
		return
	}
	m.requests.WithLabelValues(route, method, status).Inc()
	m.requestSeconds.WithLabelValues(route, method).Observe(took.Seconds())
}

// JobStarted and JobEnded track job runs; outcome is "succeeded", "failed"
// or "retry".
func (m *Metrics) JobStarted() {
	if m != nil {
		m.jobsRunning.Inc()
	}
}

func (m *Metrics) JobEnded(outcome string, chunks int) {
	if m == nil {
		return
	}
	m.jobsRunning.Dec()
	m.jobsEnded.WithLabelValues(outcome).Inc()
	m.chunksIndexed.Add(float64(chunks))
}

// Embedded records an embedding call; purpose is "document" or "query".
func (m *Metrics) Embedded(model, purpose string, took time.Duration) {
	if m != nil {
		m.embedSeconds.WithLabelValues(model, purpose).Observe(took.Seconds())
	}
}

// Answered records a whole answer.
func (m *Metrics) Answered(model string, took time.Duration) {
	if m != nil {
		m.answerSeconds.WithLabelValues(model).Observe(took.Seconds())
	}
}

// Snapshotted records a snapshot pass that succeeded.
func (m *Metrics) Snapshotted(at time.Time) {
	if m != nil {
		m.lastSnapshot.Set(float64(at.Unix()))
	}
}

// WatchQueue reports the indexing queue when scraped: the jobs waiting and
// the age of the oldest, from pending.
func (m *Metrics) WatchQueue(pending func() (int, time.Time, error)) {
	m.Register(&queueCollector{pending: pending})
}

var (
	queuedDesc = prometheus.NewDesc("docsift_jobs_pending", "Indexing jobs waiting in the queue, due or backing off after a passing failure.", nil, nil)
	oldestDesc = prometheus.NewDesc("docsift_jobs_pending_oldest_age_seconds", "Age of the oldest waiting job; 0 when none waits.", nil, nil)
)

type queueCollector struct {
	pending func() (int, time.Time, error)
}

func (c *queueCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- queuedDesc
	ch <- oldestDesc
}

func (c *queueCollector) Collect(ch chan<- prometheus.Metric) {
	n, oldest, err := c.pending()
	if err != nil {
		ch <- prometheus.NewInvalidMetric(queuedDesc, err)
		return
	}
	age := 0.0
	if !oldest.IsZero() {
		age = time.Since(oldest).Seconds()
	}
	ch <- prometheus.MustNewConstMetric(queuedDesc, prometheus.GaugeValue, float64(n))
	ch <- prometheus.MustNewConstMetric(oldestDesc, prometheus.GaugeValue, age)
}

// indexSizeBuckets count owners by chunks: a few documents, a manual, a
// library, a large tenant.
var indexSizeBuckets = []float64{100, 1_000, 10_000, 100_000, 1_000_000}

// WatchSearches reports, when scraped, the index searches running now
// and those waiting for their turn (see serve's --max-searches): a
// queue that stays long says searches need more processors.
func (m *Metrics) WatchSearches(running, waiting func() int) {
	m.Register(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "docsift_searches_running", Help: "Index searches running now.",
	}, func() float64 { return float64(running()) }))
	m.Register(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "docsift_searches_waiting", Help: "Index searches waiting for one of those running to end.",
	}, func() float64 { return float64(waiting()) }))
}

var indexSizeDesc = prometheus.NewDesc("docsift_owner_index_chunks", "Loaded owner indexes by their number of chunks; one observation per owner, no owner named.", nil, nil)

// WatchIndexes reports the loaded owners' index sizes when scraped, as a
// histogram: how many owners of which size, never which owner.
func (m *Metrics) WatchIndexes(sizes func() []int) {
	m.Register(indexCollector(sizes))
}

type indexCollector func() []int

func (c indexCollector) Describe(ch chan<- *prometheus.Desc) { ch <- indexSizeDesc }

func (c indexCollector) Collect(ch chan<- prometheus.Metric) {
	counts := make(map[float64]uint64, len(indexSizeBuckets))
	var sum float64
	sizes := c()
	for _, n := range sizes {
		sum += float64(n)
		for _, b := range indexSizeBuckets {
			if float64(n) <= b {
				counts[b]++
			}
		}
	}
	ch <- prometheus.MustNewConstHistogram(indexSizeDesc, uint64(len(sizes)), sum, counts)
}

var indexBytesDesc = prometheus.NewDesc("docsift_index_bytes", "Bytes the loaded owner indexes hold, summed over owners, by part and by memory: heap (the process's own) or mapped (snapshot and scratch files, the page cache's).", []string{"part", "memory"}, nil)

// WatchIndexMemory reports what the loaded indexes hold when scraped:
// parts calls emit once per part and memory.
func (m *Metrics) WatchIndexMemory(parts func(emit func(part, memory string, bytes int64))) {
	m.Register(indexMemoryCollector(parts))
}

type indexMemoryCollector func(emit func(part, memory string, bytes int64))

func (c indexMemoryCollector) Describe(ch chan<- *prometheus.Desc) { ch <- indexBytesDesc }

func (c indexMemoryCollector) Collect(ch chan<- prometheus.Metric) {
	c(func(part, memory string, bytes int64) {
		ch <- prometheus.MustNewConstMetric(indexBytesDesc, prometheus.GaugeValue, float64(bytes), part, memory)
	})
}
