package server

import (
	"net/http"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metrics are the daemon's Prometheus metrics. Counters and the grant histogram are
// updated on the hot path (atomic adds); gauges are read from the scheduler when
// scraped, so the hot path pays nothing for them.
type metrics struct {
	reg        *prometheus.Registry
	iterations prometheus.Counter
	finished   prometheus.Counter
	lost       prometheus.Counter
	switches   prometheus.Counter
	grant      prometheus.Histogram
}

func newMetrics(s *Server) *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		iterations: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "salus_iterations_total", Help: "Iterations ended."}),
		finished: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "salus_sessions_finished_total", Help: "Sessions that finished their work."}),
		lost: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "salus_sessions_lost_total", Help: "Sessions lost (connection closed, lease expired, shutdown)."}),
		switches: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "salus_switches_total", Help: "Iteration starts where a lane switched to another job."}),
		grant: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "salus_grant_latency_seconds",
			Help:    "Time from a begin request to its grant.",
			Buckets: prometheus.ExponentialBuckets(10e-6, 4, 12), // 10 µs to about 42 s
		}),
	}
	m.reg.MustRegister(m.iterations, m.finished, m.lost, m.switches, m.grant, stateCollector{s})
	return m
}

// MetricsHandler serves the Prometheus metrics.
func (s *Server) MetricsHandler() http.Handler {
	return promhttp.HandlerFor(s.met.reg, promhttp.HandlerOpts{})
}

var (
	descSessions = prometheus.NewDesc("salus_sessions", "Open sessions.", nil, nil)
	descWaiting  = prometheus.NewDesc("salus_admission_queue", "Jobs waiting for admission into a lane.", nil, nil)
	descLanes    = prometheus.NewDesc("salus_lanes", "Open lanes.", nil, nil)
	descReady    = prometheus.NewDesc("salus_lane_ready_jobs", "Jobs of a lane waiting for their iteration to start.", []string{"lane"}, nil)
	descLaneMem  = prometheus.NewDesc("salus_lane_memory_mib", "Lane memory in MiB: its size, its jobs' persistent sum, its largest ephemeral peak.", []string{"lane", "kind"}, nil)
	descFree     = prometheus.NewDesc("salus_free_memory_mib", "Device memory not allocated to any lane, MiB.", nil, nil)
)

type stateCollector struct{ s *Server }

func (c stateCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descSessions, descWaiting, descLanes, descReady, descLaneMem, descFree} {
		ch <- d
	}
}

func (c stateCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.s
	s.mu.Lock()
	sessions := len(s.sessions)
	waiting := len(s.sched.Waiting())
	lanes := s.sched.Lanes()
	ready := make([]int, len(lanes))
	for i, l := range lanes {
		ready[i] = s.sched.ReadyCount(l.ID)
	}
	free := s.sched.Free()
	s.mu.Unlock()
	ch <- prometheus.MustNewConstMetric(descSessions, prometheus.GaugeValue, float64(sessions))
	ch <- prometheus.MustNewConstMetric(descWaiting, prometheus.GaugeValue, float64(waiting))
	ch <- prometheus.MustNewConstMetric(descLanes, prometheus.GaugeValue, float64(len(lanes)))
	ch <- prometheus.MustNewConstMetric(descFree, prometheus.GaugeValue, free)
	for i, l := range lanes {
		id := strconv.Itoa(l.ID)
		ch <- prometheus.MustNewConstMetric(descReady, prometheus.GaugeValue, float64(ready[i]), id)
		ch <- prometheus.MustNewConstMetric(descLaneMem, prometheus.GaugeValue, l.Size, id, "size")
		ch <- prometheus.MustNewConstMetric(descLaneMem, prometheus.GaugeValue, l.Persistent, id, "persistent")
		ch <- prometheus.MustNewConstMetric(descLaneMem, prometheus.GaugeValue, l.MaxEphemeral, id, "ephemeral")
	}
}
