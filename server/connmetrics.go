package server

import "github.com/prometheus/client_golang/prometheus"

// The connection slots' metrics (conns.go), kept apart from metrics.go's.
//
//	salus_connections_refused_total{reason}   max_conns, per_user, reserved (fast path);
//	                                          yielded (a connection without a session gave its slot to a newer one);
//	                                          http_max_conns, http_per_user (HTTP API)
//	salus_fast_connections{state}             session, no_session
var descFastConns = prometheus.NewDesc("salus_fast_connections", "Fast-path connections open, by whether they carry a session.", []string{"state"}, nil)

func (s *Server) registerConnMetrics() {
	refused := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "salus_connections_refused_total",
		Help: "Connections refused or closed for a limit: max_conns, per_user, reserved, yielded (fast path; yielded: closed before its open for a newer connection), http_max_conns, http_per_user.",
	}, []string{"reason"})
	for _, r := range []string{"max_conns", "per_user", "reserved", "yielded", "http_max_conns", "http_per_user"} {
		refused.WithLabelValues(r) // every series from the start, at 0
	}
	s.tr.mu.Lock()
	s.tr.acct.refused = refused
	s.tr.mu.Unlock()
	s.met.reg.MustRegister(refused, connCollector{s})
}

type connCollector struct{ s *Server }

func (c connCollector) Describe(ch chan<- *prometheus.Desc) { ch <- descFastConns }

func (c connCollector) Collect(ch chan<- prometheus.Metric) {
	c.s.tr.mu.Lock()
	open, sessions := c.s.tr.acct.open, c.s.tr.acct.sessions
	c.s.tr.mu.Unlock()
	ch <- prometheus.MustNewConstMetric(descFastConns, prometheus.GaugeValue, float64(sessions), "session")
	ch <- prometheus.MustNewConstMetric(descFastConns, prometheus.GaugeValue, float64(open-sessions), "no_session")
}
