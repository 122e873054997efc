package driver

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics are the driver's Prometheus metrics, in a registry of their own
// (Handler serves them). A nil *Metrics counts nothing.
type Metrics struct {
	registry      *prometheus.Registry
	prepares      *prometheus.CounterVec
	unprepares    *prometheus.CounterVec
	orphans       prometheus.Counter
	daemon        prometheus.Gauge
	devicesGauge  *prometheus.GaugeVec
	claimsPresent prometheus.Gauge
}

// NewMetrics makes the driver's metrics, all named salus_dra_*.
func NewMetrics() *Metrics {
	m := &Metrics{
		registry: prometheus.NewRegistry(),
		prepares: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "salus_dra_prepares_total",
			Help: "Claims prepared, by kind (job: reserved with the daemon; monitor: admin access) and result (ok, error)."}, []string{"kind", "result"}),
		unprepares: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "salus_dra_unprepares_total",
			Help: "Claims unprepared, by result (ok, error)."}, []string{"result"}),
		orphans: prometheus.NewCounter(prometheus.CounterOpts{Name: "salus_dra_orphans_unprepared_total",
			Help: "Prepared claims unprepared by the driver itself because their ResourceClaim was gone."}),
		daemon: prometheus.NewGauge(prometheus.GaugeOpts{Name: "salus_dra_daemon_up",
			Help: "1 when the node daemon answered the driver's last call for its GPUs, else 0."}),
		devicesGauge: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "salus_dra_devices",
			Help: "Devices in the published ResourceSlice, by state (ok, tainted)."}, []string{"state"}),
		claimsPresent: prometheus.NewGauge(prometheus.GaugeOpts{Name: "salus_dra_prepared_claims",
			Help: "Prepared claims the driver keeps a record of, at its last resync."}),
	}
	m.registry.MustRegister(m.prepares, m.unprepares, m.orphans, m.daemon, m.devicesGauge, m.claimsPresent)
	return m
}

// Handler serves the metrics in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{})
}

// Gatherer is the registry, for tests that read the metrics back.
func (m *Metrics) Gatherer() prometheus.Gatherer { return m.registry }

func result(err error) string {
	if err != nil {
		return "error"
	}
	return "ok"
}

func (m *Metrics) prepared(rec *record, err error) {
	if m == nil || (rec == nil && err == nil) {
		return
	}
	kind := "job"
	if rec != nil && rec.AdminAccess {
		kind = "monitor"
	}
	m.prepares.WithLabelValues(kind, result(err)).Inc()
}

func (m *Metrics) unprepared(err error) {
	if m != nil {
		m.unprepares.WithLabelValues(result(err)).Inc()
	}
}

func (m *Metrics) orphan() {
	if m != nil {
		m.orphans.Inc()
	}
}

func (m *Metrics) daemonUp(up bool) {
	if m == nil {
		return
	}
	if up {
		m.daemon.Set(1)
	} else {
		m.daemon.Set(0)
	}
}

func (m *Metrics) devices(all, tainted int) {
	if m != nil {
		m.devicesGauge.WithLabelValues("ok").Set(float64(all - tainted))
		m.devicesGauge.WithLabelValues("tainted").Set(float64(tainted))
	}
}

func (m *Metrics) claims(n int) {
	if m != nil {
		m.claimsPresent.Set(float64(n))
	}
}
