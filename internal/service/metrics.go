package service

import (
	"fmt"
	"net/http"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metrics are the service's own: one registry per Run, never the global
// default one.
type metrics struct {
	reg      *prometheus.Registry
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	inFlight prometheus.Gauge
	reloads  *prometheus.CounterVec
	ready    prometheus.Gauge
}

func newMetrics(extra []prometheus.Collector) (*metrics, error) {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mcpsign_http_requests_total",
			Help: "HTTP requests answered, by the route pattern they matched, method and status code.",
		}, []string{"route", "method", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "mcpsign_http_request_duration_seconds",
			Help:    "Time from a request's headers read to its handler's return, by route pattern.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"route"}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "mcpsign_http_requests_in_flight",
			Help: "HTTP requests being answered.",
		}),
		reloads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mcpsign_reloads_total",
			Help: "Reloads on SIGHUP, by result (ok, failed: the configuration in force was kept).",
		}, []string{"result"}),
		ready: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "mcpsign_ready",
			Help: "1 when the last readiness check passed, else 0.",
		}),
	}
	m.reloads.WithLabelValues("ok")
	m.reloads.WithLabelValues("failed")
	cs := []prometheus.Collector{
		prometheus.NewGoCollector(),
		prometheus.NewProcessCollector(prometheus.ProcessCollectorOpts{}),
		m.requests, m.duration, m.inFlight, m.reloads, m.ready,
	}
	for _, c := range append(cs, extra...) {
		if err := m.reg.Register(c); err != nil {
			return nil, fmt.Errorf("%w: metrics collector: %w", ErrOptions, err)
		}
	}
	return m, nil
}

func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{
		Registry:            m.reg, // promhttp_metric_handler_errors_total
		MaxRequestsInFlight: 4,
	})
}

// observe counts a request when its handler returned.
func (m *metrics) observe(route, method string, code int, seconds float64) {
	m.requests.WithLabelValues(route, methodLabel(method), strconv.Itoa(code)).Inc()
	m.duration.WithLabelValues(route).Observe(seconds)
}

// methodLabel bounds the method label to the methods HTTP defines: a
// client's made-up method is counted as "other".
func methodLabel(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodConnect, http.MethodOptions, http.MethodTrace:
		return m
	}
	return "other"
}
