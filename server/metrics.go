package server

import (
	"net/http"
	"strconv"
	"strings"

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
	descReady    = prometheus.NewDesc("salus_lane_ready_jobs", "Jobs of a lane waiting for their iteration to start.", []string{"lane", "gpu"}, nil)
	descLaneMem  = prometheus.NewDesc("salus_lane_memory_mib", "Lane memory in MiB (on each of its GPUs): its size, its jobs' persistent sum, its largest ephemeral peak.", []string{"lane", "gpu", "kind"}, nil)
	descFree     = prometheus.NewDesc("salus_free_memory_mib", "Device memory not allocated to any lane, MiB, all GPUs together.", nil, nil)
	descGPUFree  = prometheus.NewDesc("salus_gpu_free_memory_mib", "Memory of a GPU not allocated to any lane, MiB.", []string{"gpu"}, nil)
	descGPUCap   = prometheus.NewDesc("salus_gpu_capacity_mib", "Usable memory of a GPU, MiB.", []string{"gpu"}, nil)
	descGPUJobs  = prometheus.NewDesc("salus_gpu_jobs", "Admitted jobs with a lane on a GPU.", []string{"gpu"}, nil)
)

type stateCollector struct{ s *Server }

func (c stateCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descSessions, descWaiting, descLanes, descReady, descLaneMem, descFree, descGPUFree, descGPUCap, descGPUJobs} {
		ch <- d
	}
}

func (c stateCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.s
	s.mu.Lock()
	sessions := len(s.sessions)
	waiting := s.sched.WaitingCount()
	lanes := s.sched.Lanes()
	ready := make([]int, len(lanes))
	for i, l := range lanes {
		ready[i] = s.sched.ReadyCount(l.ID)
	}
	free := s.sched.Free()
	gpus := s.sched.GPUs()
	laneGPU := make([]string, len(lanes))
	for i, l := range lanes {
		laneGPU[i] = gpuLabel(s.physical(laneGPUs(l)))
	}
	gpuName := make([]string, len(gpus))
	for i, g := range gpus {
		gpuName[i] = strconv.Itoa(s.gpus[g.Index].Index)
	}
	s.mu.Unlock()
	ch <- prometheus.MustNewConstMetric(descSessions, prometheus.GaugeValue, float64(sessions))
	ch <- prometheus.MustNewConstMetric(descWaiting, prometheus.GaugeValue, float64(waiting))
	ch <- prometheus.MustNewConstMetric(descLanes, prometheus.GaugeValue, float64(len(lanes)))
	ch <- prometheus.MustNewConstMetric(descFree, prometheus.GaugeValue, free)
	for i, g := range gpus {
		ch <- prometheus.MustNewConstMetric(descGPUFree, prometheus.GaugeValue, g.Free, gpuName[i])
		ch <- prometheus.MustNewConstMetric(descGPUCap, prometheus.GaugeValue, g.Capacity, gpuName[i])
		ch <- prometheus.MustNewConstMetric(descGPUJobs, prometheus.GaugeValue, float64(g.Jobs), gpuName[i])
	}
	for i, l := range lanes {
		id, gpu := strconv.Itoa(l.ID), laneGPU[i]
		ch <- prometheus.MustNewConstMetric(descReady, prometheus.GaugeValue, float64(ready[i]), id, gpu)
		ch <- prometheus.MustNewConstMetric(descLaneMem, prometheus.GaugeValue, l.Size, id, gpu, "size")
		ch <- prometheus.MustNewConstMetric(descLaneMem, prometheus.GaugeValue, l.Persistent, id, gpu, "persistent")
		ch <- prometheus.MustNewConstMetric(descLaneMem, prometheus.GaugeValue, l.MaxEphemeral, id, gpu, "ephemeral")
	}
}

// gpuLabel is the "gpu" label of a lane: its GPU's physical index, or a gang
// lane's, joined by commas ("0,1").
func gpuLabel(gpus []int) string {
	parts := make([]string, len(gpus))
	for i, g := range gpus {
		parts[i] = strconv.Itoa(g)
	}
	return strings.Join(parts, ",")
}
