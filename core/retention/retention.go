// Package retention is faxhub's garbage collector: it deletes what has
// outlived its retention (docs/design.md, Retention) in independent steps
// that replicas may run at once. The periodic job (core/queue) and
// `faxhub admin purge` call Service.Purge.
package retention

import (
	"context"
	"log/slog"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/documents"
)

// Store is what the garbage collector reads and deletes.
type Store interface {
	PurgeStore
	DeleteExpiredAgentTokens(ctx context.Context, t time.Time) (int64, error)
	PurgeMachineRequests(ctx context.Context, before time.Time) (int64, error)
	PurgeMachineClaims(ctx context.Context, before time.Time) (int64, error)
}

// Documents deletes the blobs of a document the collector marked purged.
type Documents interface {
	DeleteBlobs(ctx context.Context, d *documents.Document) error
}

// Deps are the ports the collector drives.
type Deps struct {
	Store     Store
	Blobs     core.BlobStore
	Documents Documents
	// AuthState, when the authorization server keeps its state in the same
	// database, is purged too.
	AuthState AuthStatePurger
	// Purgers are the features that keep their own retention (the event
	// log, webhook deliveries), each run by name in every purge.
	Purgers map[string]func(context.Context) (int64, error)
	Logger  *slog.Logger
}

// Service runs the garbage collector.
type Service struct {
	cfg   core.StorageConfig
	clock core.Clock
	d     Deps
}

// New returns the collector; cfg carries the retention periods (defaults
// applied by core.Config).
func New(cfg core.StorageConfig, clock core.Clock, d Deps) *Service {
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	return &Service{cfg: cfg, clock: clock, d: d}
}

func (s *Service) now() time.Time { return s.clock.Now() }
