package faxes

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/approvals"
	"github.com/faxhub/faxhub/core/documents"
)

// DeliveryMetrics observes the end of attempts and faxes.
type DeliveryMetrics interface {
	// AttemptEnded is one provider attempt's end: its provider, its
	// outcome (delivered, partial or failed) and how long the provider
	// took (ProviderResult.Duration).
	AttemptEnded(provider string, outcome AttemptStatus, took time.Duration)
	// FaxEnded is a fax reaching a final state through delivery
	// (delivered, partial, failed, or canceled while sending) and how long
	// it took from its creation (when it was queued).
	FaxEnded(state Status, took time.Duration)
}

// NopMetrics counts nothing; it is the default when Deps.Metrics is nil.
type NopMetrics struct{}

func (NopMetrics) AttemptEnded(string, AttemptStatus, time.Duration) {}

func (NopMetrics) FaxEnded(Status, time.Duration) {}

func (NopMetrics) Converted(documents.FileKind, bool, time.Duration) {}

// Snapshot is the database-wide state that monitoring reads at scrape
// time. Every replica reads the same numbers: aggregate them across
// replicas with max, never sum.
type Snapshot struct {
	// Faxes counts faxes not yet final (queued, sending) per mode. Final
	// states grow without bound and are counted as events instead
	// (Metrics.FaxEnded).
	Faxes []Count
	// ApprovalsPending counts pending, unexpired approvals per kind.
	ApprovalsPending map[approvals.Kind]int64
	// Holds is money on hold (credit sends not yet settled) per mode.
	Holds map[core.Mode]HoldTotal
	// Jobs is the job queue's unfinished work per state and kind.
	Jobs []JobCount
}

// Count is how many faxes of a mode are in a state.
type Count struct {
	Mode  core.Mode
	State Status
	Count int64
}

// HoldTotal is the money held in one mode's balances: how many owner
// balances have some on hold and how much in all.
type HoldTotal struct {
	Balances int64
	Micros   int64
}

// JobCount is the job queue's jobs of one kind in one state, and how long
// the oldest of them has waited: since it became due (available), since it
// started (running); zero for other states.
type JobCount struct {
	State     string
	Kind      string
	Count     int64
	OldestAge time.Duration
}

// StatsStore is a Store that can count what Snapshot reports with bounded
// queries (indexed, or over tables that grow with owners, not events).
type StatsStore interface {
	Stats(ctx context.Context, now time.Time) (*Snapshot, error)
}

// QueueStats is a Queue that can count its unfinished jobs.
type QueueStats interface {
	JobStats(ctx context.Context) ([]JobCount, error)
}

// Snapshot reads the database-wide gauges. The caller bounds it with ctx
// (a scrape must not hang on a slow database).
func (s *Service) Snapshot(ctx context.Context) (*Snapshot, error) {
	st, ok := s.d.Store.(StatsStore)
	if !ok {
		return nil, errors.New("snapshot: the store cannot count")
	}
	snap, err := st.Stats(ctx, s.now())
	if err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	if qs, ok := s.d.Queue.(QueueStats); ok {
		if snap.Jobs, err = qs.JobStats(ctx); err != nil {
			return nil, fmt.Errorf("snapshot: %w", err)
		}
	}
	return snap, nil
}
