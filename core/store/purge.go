package store

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/faxhub/faxhub/core/checkout"
	"github.com/faxhub/faxhub/core/documents"
	"github.com/faxhub/faxhub/core/tasks"
)

// The garbage collector's deletions (retention.Store). Each is one
// statement, safe to run on several replicas at once: a row deleted twice
// is counted once.

func (x q) purge(ctx context.Context, what, query string, args ...any) (int64, error) {
	n, err := x.exec(ctx, query, args...)
	if err != nil {
		return 0, fmt.Errorf("purge %s: %w", what, err)
	}
	return n, nil
}

func (x q) PurgeIdempotency(ctx context.Context, before time.Time) (int64, error) {
	return x.purge(ctx, "idempotency records", "DELETE FROM idempotency_records WHERE created_at < ?", before)
}

func (x q) PurgeSessions(ctx context.Context, now time.Time) (int64, error) {
	return x.purge(ctx, "sessions", "DELETE FROM sessions WHERE expires_at < ?", now)
}

// PurgeApprovals deletes approvals that expired undecided before
// expiredBefore or were decided before decidedBefore. An approval an OAuth
// consent hand-off still refers to stays until the hand-off is purged.
func (x q) PurgeApprovals(ctx context.Context, expiredBefore, decidedBefore time.Time) (int64, error) {
	return x.purge(ctx, "approvals", `DELETE FROM approvals
		WHERE ((decided_at IS NULL AND expires_at < ?) OR decided_at < ?)
		AND NOT EXISTS (SELECT 1 FROM oauth_consents c WHERE c.approval_id = approvals.id)`, expiredBefore, decidedBefore)
}

// PurgeUploads deletes capabilities that expired unused (and whose last
// PUT's lease is over), and those whose document's blobs were purged.
// The kept upload documents (rowcache.go) are told.
func (x q) PurgeUploads(ctx context.Context, now time.Time) (n int64, err error) {
	err = x.changing(ctx, x.db.caches.uploadDocs, func(x q) error {
		n, err = x.purge(ctx, "uploads", `DELETE FROM uploads
			WHERE (document_id IS NULL AND expires_at < ? AND (lease_until IS NULL OR lease_until < ?))
			OR document_id IN (SELECT id FROM documents WHERE purged_at IS NOT NULL)`, now, now)
		return err
	})
	return n, err
}

// PurgeCheckouts deletes checkouts that expired unpaid before before; paid
// ones are the record of a payment and stay.
func (x q) PurgeCheckouts(ctx context.Context, before time.Time) (int64, error) {
	return x.purge(ctx, "checkouts", "DELETE FROM checkouts WHERE status IN (?, ?, ?) AND expires_at < ?",
		checkout.Open, checkout.Expired, checkout.Failed, before)
}

func (x q) PurgeAgentClaims(ctx context.Context, before time.Time) (int64, error) {
	return x.purge(ctx, "agent claims", "DELETE FROM agent_claims WHERE expires_at < ?", before)
}

func (x q) PurgeAgentEnrollments(ctx context.Context, before time.Time) (int64, error) {
	return x.purge(ctx, "agent enrollments", "DELETE FROM agent_enrollments WHERE expires_at < ?", before)
}

// PurgeRateLimits deletes limiter rows whose theoretical arrival time is
// past: such a key has its whole burst again, exactly as if it had no row.
func (x q) PurgeRateLimits(ctx context.Context, now time.Time) (int64, error) {
	return x.purge(ctx, "rate limits", "DELETE FROM rate_limits WHERE tat < CAST(? AS BIGINT)", now.UnixMicro())
}

// PurgeCreditPurchases deletes purchases that ended before before, and
// those whose cart expired before before while still open (nothing can
// move them any more).
func (x q) PurgeCreditPurchases(ctx context.Context, before time.Time) (int64, error) {
	return x.purge(ctx, "credit purchases", `DELETE FROM credit_purchases
		WHERE (status IN (?, ?, ?, ?, ?) AND updated_at < ?)
		OR (status IN (?, ?) AND expires_at < ?)`,
		tasks.PurchaseCompleted, tasks.PurchaseDeclined, tasks.PurchaseFailed, tasks.PurchaseCanceled, tasks.PurchaseExpired, before,
		tasks.PurchaseCartOffered, tasks.PurchaseAwaitingApproval, before)
}

// PurgeAgentTasks deletes tasks created before before unless what they
// follow is still live at now: an open draft that has not expired, the
// queued or sending fax of a paid draft, a purchase that has not ended and
// whose cart has not expired.
func (x q) PurgeAgentTasks(ctx context.Context, now, before time.Time) (int64, error) {
	return x.purge(ctx, "agent tasks", `DELETE FROM agent_tasks WHERE created_at < ?
		AND NOT EXISTS (SELECT 1 FROM drafts d WHERE d.id = agent_tasks.subject_id AND d.status = 'open' AND d.expires_at > ?)
		AND NOT EXISTS (SELECT 1 FROM drafts d JOIN faxes f ON f.id = d.fax_id
			WHERE d.id = agent_tasks.subject_id AND f.status IN ('queued', 'sending'))
		AND NOT EXISTS (SELECT 1 FROM credit_purchases c WHERE c.id = agent_tasks.subject_id
			AND c.status IN (?, ?) AND c.expires_at > ?)`,
		before, now, tasks.PurchaseCartOffered, tasks.PurchaseAwaitingApproval, now)
}

// purgeableDocument is the condition for deleting a document's blobs:
// unsent (no fax uses it, no open draft that has not expired) and uploaded
// before unsentBefore; or sent, with every fax that uses it ended before
// sentBefore.
// used_at is on the document's own row so that the recheck PostgreSQL makes
// of a row a concurrent transaction updated (READ COMMITTED) sees a fax or
// draft made from it meanwhile: the subqueries alone would not.
const purgeableDocument = `d.purged_at IS NULL AND (
	(d.created_at < ? AND (d.used_at IS NULL OR d.used_at < ?)
		AND NOT EXISTS (SELECT 1 FROM faxes f WHERE f.document_id = d.id)
		AND NOT EXISTS (SELECT 1 FROM drafts r WHERE r.document_id = d.id AND r.status = 'open' AND r.expires_at > ?))
	OR ((d.used_at IS NULL OR d.used_at < ?) AND EXISTS (SELECT 1 FROM faxes f WHERE f.document_id = d.id)
		AND NOT EXISTS (SELECT 1 FROM faxes f WHERE f.document_id = d.id
			AND (f.status NOT IN ('delivered', 'partial', 'failed', 'canceled') OR f.completed_at IS NULL OR f.completed_at >= ?))))`

func (x q) PurgeableDocuments(ctx context.Context, now, unsentBefore, sentBefore time.Time, n int) ([]documents.Document, error) {
	var out []documents.Document
	err := x.sel(ctx, &out, "SELECT "+prefixed("d.", documentCols)+" FROM documents d WHERE "+purgeableDocument+
		" ORDER BY d.created_at, d.id"+limit(n), unsentBefore, unsentBefore, now, sentBefore, sentBefore)
	if err != nil {
		return nil, fmt.Errorf("list purgeable documents: %w", err)
	}
	return out, nil
}

// MarkDocumentPurged sets purged_at if the document is still purgeable
// (checked in the same statement); ErrConflict if it is not any more (a fax
// started using it meanwhile).
// The kept upload documents (rowcache.go) are told: a purged document is
// no upload's any more.
func (x q) MarkDocumentPurged(ctx context.Context, id string, now, unsentBefore, sentBefore time.Time) error {
	err := x.changing(ctx, x.db.caches.uploadDocs, func(x q) error {
		n, err := x.exec(ctx, "UPDATE documents SET purged_at = ? WHERE id = ? AND EXISTS (SELECT 1 FROM documents d WHERE d.id = documents.id AND "+purgeableDocument+")",
			now, id, unsentBefore, unsentBefore, now, sentBefore, sentBefore)
		if err == nil && n == 0 {
			err = x.missingOrConflict(ctx, "documents", "id = ?", id)
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("mark document purged: %w", err)
	}
	x.db.forgetDocument(id)
	return nil
}

// prefixed qualifies each column of a comma-separated list with p.
func prefixed(p, cols string) string {
	parts := fields(strings.ReplaceAll(cols, ",", " "))
	for i, c := range parts {
		parts[i] = p + c
	}
	return strings.Join(parts, ", ")
}
