package prometheus

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/approvals"
	"github.com/faxhub/faxhub/core/faxes"
)

// snapshotCollector reads faxes.Snapshot at each scrape, bounded by a
// timeout. Every replica reads the same database: aggregate these gauges
// across replicas with max, never sum.
type snapshotCollector struct {
	read    func(ctx context.Context) (*faxes.Snapshot, error)
	timeout time.Duration

	up, took, faxes, approvals, holdBalances, heldUSD, jobs, jobAge *prometheus.Desc

	// Label values reported as zero when absent, so that an alert on them
	// sees 0 rather than no series.
	modes     []core.Mode
	faxStates []faxes.Status
	kinds     []approvals.Kind
}

func newSnapshotCollector(read func(ctx context.Context) (*faxes.Snapshot, error), timeout time.Duration) *snapshotCollector {
	return &snapshotCollector{
		read: read, timeout: timeout,
		modes:     []core.Mode{core.ModeTest, core.ModeLive},
		faxStates: []faxes.Status{faxes.Queued, faxes.Sending},
		kinds: []approvals.Kind{
			approvals.KindOAuthConsent, approvals.KindAgentClaim, approvals.KindDevice, approvals.KindVerifiedAction,
			approvals.KindCreditPurchase, approvals.KindFaxSend,
		},
		up: prometheus.NewDesc("faxhub_snapshot_up",
			"1 if this scrape read the database-wide gauges, 0 if the database failed or was slower than the timeout.", nil, nil),
		took: prometheus.NewDesc("faxhub_snapshot_duration_seconds",
			"Time this scrape spent reading the database-wide gauges.", nil, nil),
		faxes: prometheus.NewDesc("faxhub_faxes",
			"Faxes not yet final, by mode and state (queued, sending); database-wide: aggregate replicas with max.", []string{"mode", "state"}, nil),
		approvals: prometheus.NewDesc("faxhub_approvals_pending",
			"Pending, unexpired owner approvals, by kind; database-wide: aggregate replicas with max.", []string{"kind"}, nil),
		holdBalances: prometheus.NewDesc("faxhub_ledger_hold_balances",
			"Owner balances with credits on hold (sends not yet settled), by mode; database-wide: aggregate replicas with max.", []string{"mode"}, nil),
		heldUSD: prometheus.NewDesc("faxhub_ledger_held_usd",
			"Credits on hold in USD, by mode; database-wide: aggregate replicas with max.", []string{"mode"}, nil),
		jobs: prometheus.NewDesc("faxhub_queue_jobs",
			"Unfinished jobs in the job queue (River), by state and kind; database-wide: aggregate replicas with max.", []string{"state", "kind"}, nil),
		jobAge: prometheus.NewDesc("faxhub_queue_oldest_job_age_seconds",
			"Age of the oldest job waiting to run (state available, since it became due) or running (since it started), by state and kind; database-wide.", []string{"state", "kind"}, nil),
	}
}

func (c *snapshotCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.up, c.took, c.faxes, c.approvals, c.holdBalances, c.heldUSD, c.jobs, c.jobAge} {
		ch <- d
	}
}

func (c *snapshotCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	start := time.Now()
	snap, err := c.readBounded(ctx)
	ch <- prometheus.MustNewConstMetric(c.took, prometheus.GaugeValue, time.Since(start).Seconds())
	if err != nil || snap == nil {
		ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, 0)
		return
	}
	ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, 1)

	faxes := map[[2]string]int64{}
	for _, m := range c.modes {
		for _, s := range c.faxStates {
			faxes[[2]string{string(m), string(s)}] = 0
		}
	}
	for _, f := range snap.Faxes {
		faxes[[2]string{string(f.Mode), string(f.State)}] += f.Count
	}
	for k, n := range faxes {
		ch <- prometheus.MustNewConstMetric(c.faxes, prometheus.GaugeValue, float64(n), k[0], k[1])
	}

	approvals := map[approvals.Kind]int64{}
	for _, k := range c.kinds {
		approvals[k] = 0
	}
	for k, n := range snap.ApprovalsPending {
		approvals[k] = n
	}
	for k, n := range approvals {
		ch <- prometheus.MustNewConstMetric(c.approvals, prometheus.GaugeValue, float64(n), string(k))
	}

	for _, m := range c.modes {
		h := snap.Holds[m]
		ch <- prometheus.MustNewConstMetric(c.holdBalances, prometheus.GaugeValue, float64(h.Balances), string(m))
		ch <- prometheus.MustNewConstMetric(c.heldUSD, prometheus.GaugeValue, float64(h.Micros)/float64(core.MicrosPerDollar), string(m))
	}

	for _, j := range snap.Jobs {
		ch <- prometheus.MustNewConstMetric(c.jobs, prometheus.GaugeValue, float64(j.Count), j.State, j.Kind)
		if j.State == "available" || j.State == "running" {
			ch <- prometheus.MustNewConstMetric(c.jobAge, prometheus.GaugeValue, j.OldestAge.Seconds(), j.State, j.Kind)
		}
	}
}

// readBounded returns by ctx's deadline even if the read does not (a
// driver stuck below its context): the read finishes on its own, and its
// answer is dropped.
func (c *snapshotCollector) readBounded(ctx context.Context) (*faxes.Snapshot, error) {
	type result struct {
		snap *faxes.Snapshot
		err  error
	}
	done := make(chan result, 1)
	go func() {
		snap, err := c.read(ctx)
		done <- result{snap, err}
	}()
	select {
	case r := <-done:
		if r.err == nil && ctx.Err() != nil {
			r.err = ctx.Err() // late, though it answered
		}
		return r.snap, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
