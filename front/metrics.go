package front

import "github.com/prometheus/client_golang/prometheus"

// metrics are the front's Prometheus collectors (docs/SERVE.md,
// "Metrics"), all named mcpsign_front_….
type metrics struct {
	sessions     prometheus.Gauge
	refused      prometheus.Counter
	requests     *prometheus.CounterVec
	blocks       *prometheus.CounterVec
	rollForwards prometheus.Counter
	reloads      prometheus.Counter
	drifted      prometheus.Gauge
	latency      *prometheus.HistogramVec
}

func newMetrics() *metrics {
	return &metrics{
		sessions: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "mcpsign_front_sessions_open", Help: "Client sessions open (each one a relay, and a process for a stdio upstream).",
		}),
		refused: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "mcpsign_front_sessions_refused_total", Help: "New sessions answered 503 because the session cap was reached.",
		}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mcpsign_front_requests_total", Help: "Messages POSTed by clients, by JSON-RPC method (other methods as \"other\"; \"response\", \"batch\", \"invalid\", \"unknown-session\").",
		}, []string{"method"}),
		blocks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mcpsign_front_blocks_total", Help: "Relays blocked, by the rule of each finding (\"unchecked\": the definitions could not be checked).",
		}, []string{"rule"}),
		rollForwards: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "mcpsign_front_roll_forwards_total", Help: "Signed updates that rolled the lock forward (or a lock another process rolled forward, adopted).",
		}),
		reloads: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "mcpsign_front_reloads_total", Help: "Successful reloads of the policy and lock.",
		}),
		drifted: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "mcpsign_front_upstream_drifted", Help: "1 when a relay saw the upstream's definitions change since the last roll-forward or reload.",
		}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "mcpsign_front_request_duration_seconds", Help: "Time from a client request's POST to the end of its answer, by method.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
		}, []string{"method"}),
	}
}

// Collectors returns the front's metrics, for the caller's registry.
func (f *Front) Collectors() []prometheus.Collector {
	m := f.m
	return []prometheus.Collector{m.sessions, m.refused, m.requests, m.blocks, m.rollForwards, m.reloads, m.drifted, m.latency}
}
