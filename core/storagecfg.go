package core

import (
	"cmp"
	"time"
)

// StorageConfig bounds what owners keep on faxhub and for how long: upload
// leases, the storage quota of unsent documents, and the
// retention the garbage collector (retention.Service.Purge) enforces. docs/design.md
// (Limits, Retention) documents every value; zero values take the defaults.
type StorageConfig struct {
	// UploadLease is how long a PUT holds its upload without renewing; it
	// renews every third of it. A PUT whose process died frees its token
	// this long after its last renewal. Default 60 s.
	UploadLease time.Duration

	// QuotaBytes bounds the bytes of an owner's unsent documents per mode
	// (originals plus converted PDFs not yet used by a fax). Default 1 GiB;
	// negative means no quota.
	QuotaBytes int64

	// UnsentRetention: a document no fax uses has its blobs deleted this
	// long after upload. SentRetention: a sent document's blobs are deleted
	// this long after its last fax ended (delivered, partial, failed or
	// canceled) — the fax record stays, the pages do not (PHI
	// minimisation). Defaults 7 days each.
	UnsentRetention time.Duration
	SentRetention   time.Duration
	// InboxRetention: a received fax (its PDF and its text) is deleted
	// this long after it arrived. Default 30 days.
	InboxRetention time.Duration
	// IdempotencyRetention is how long an Idempotency-Key is remembered.
	// Default 24 hours.
	IdempotencyRetention time.Duration
	// ExpiredRetention is how long expired rows (approvals, agent claims and
	// enrollments, open checkouts) stay visible after they expire, so that
	// late pollers and the console still see "expired". Default 24 hours.
	ExpiredRetention time.Duration
	// GCInterval is how often the garbage collector runs. Default 10 min.
	GCInterval time.Duration
	// GCBatch bounds the documents purged per run. Default 500.
	GCBatch int
}

// SetDefaults fills zero values with the defaults.
func (c *StorageConfig) SetDefaults() {
	c.UploadLease = cmp.Or(c.UploadLease, time.Minute)
	c.QuotaBytes = cmp.Or(c.QuotaBytes, 1<<30)
	c.UnsentRetention = cmp.Or(c.UnsentRetention, 7*24*time.Hour)
	c.SentRetention = cmp.Or(c.SentRetention, 7*24*time.Hour)
	c.InboxRetention = cmp.Or(c.InboxRetention, 30*24*time.Hour)
	c.IdempotencyRetention = cmp.Or(c.IdempotencyRetention, 24*time.Hour)
	c.ExpiredRetention = cmp.Or(c.ExpiredRetention, 24*time.Hour)
	c.GCInterval = cmp.Or(c.GCInterval, 10*time.Minute)
	c.GCBatch = cmp.Or(c.GCBatch, 500)
}
