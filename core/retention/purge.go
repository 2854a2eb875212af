package retention

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/documents"
	"github.com/faxhub/faxhub/core/inbox"
)

// PurgeStore is what the garbage collector deletes. Every method deletes in
// one statement and reports how many rows went, so replicas may run it at
// once.
type PurgeStore interface {
	// PurgeIdempotency deletes idempotency records created before before.
	PurgeIdempotency(ctx context.Context, before time.Time) (int64, error)
	// PurgeSessions deletes owner sessions that expired before now.
	PurgeSessions(ctx context.Context, now time.Time) (int64, error)
	// PurgeApprovals deletes approvals that expired undecided before
	// expiredBefore or were decided before decidedBefore (not those an OAuth
	// consent hand-off still refers to).
	PurgeApprovals(ctx context.Context, expiredBefore, decidedBefore time.Time) (int64, error)
	// PurgeUploads deletes upload capabilities that expired unused with no
	// PUT holding them, and those whose document was purged.
	PurgeUploads(ctx context.Context, now time.Time) (int64, error)
	// PurgeCheckouts deletes unpaid checkouts that expired before before.
	PurgeCheckouts(ctx context.Context, before time.Time) (int64, error)
	// PurgeAgentClaims and PurgeAgentEnrollments delete agent claims and
	// enrollment tokens that expired before before.
	PurgeAgentClaims(ctx context.Context, before time.Time) (int64, error)
	PurgeAgentEnrollments(ctx context.Context, before time.Time) (int64, error)
	// PurgeRateLimits deletes limiter rows that no longer limit anything.
	PurgeRateLimits(ctx context.Context, now time.Time) (int64, error)
	// PurgeCreditPurchases deletes AP2 purchases that ended (completed,
	// declined, failed, canceled, expired) before before, and those whose
	// cart expired before before without anyone ending them.
	PurgeCreditPurchases(ctx context.Context, before time.Time) (int64, error)
	// PurgeAgentTasks deletes agent tasks created before before, except
	// those whose subject is still live at now: an open draft that has not
	// expired, a queued or sending fax, a purchase whose cart has not
	// expired and that has not ended.
	PurgeAgentTasks(ctx context.Context, now, before time.Time) (int64, error)
	// PurgeJWTIDs deletes replay records of host and agent JWTs that
	// expired at or before now.
	PurgeJWTIDs(ctx context.Context, now time.Time) (int64, error)
	// PurgeDelegatedSends deletes delegated send requests created before
	// before whose approval window also ended before before.
	PurgeDelegatedSends(ctx context.Context, before time.Time) (int64, error)
	// PurgeUnenrolledHosts deletes hosts that never enrolled a key and
	// whose enrollment token expired before before (no agent can belong
	// to them).
	PurgeUnenrolledHosts(ctx context.Context, before time.Time) (int64, error)
	// PurgeableDocuments lists up to n documents whose blobs are due for
	// deletion: unsent (no fax, no live draft) and uploaded before
	// unsentBefore, or sent with every fax ended before sentBefore.
	PurgeableDocuments(ctx context.Context, now, unsentBefore, sentBefore time.Time, n int) ([]documents.Document, error)
	// MarkDocumentPurged marks a document purged if it is still due;
	// ErrConflict if a fax started using it meanwhile. A purged document
	// is not found by GetDocument.
	MarkDocumentPurged(ctx context.Context, id string, now, unsentBefore, sentBefore time.Time) error
	// PurgeableInbound lists up to n received (or failed) faxes received
	// before before, oldest first.
	PurgeableInbound(ctx context.Context, before time.Time, n int) ([]inbox.InboundFax, error)
	// DeleteInboundFax deletes a received fax's row; ErrNoRows if gone.
	DeleteInboundFax(ctx context.Context, id string) error
}

// AuthStatePurger deletes the authorization server's expired token
// sessions and consent hand-offs (core/authstate, in the same database);
// Deps.AuthState hands it to the garbage collector.
type AuthStatePurger interface {
	DeleteExpiredOAuth(ctx context.Context, t time.Time) (int64, error)
}

// decidedApprovalRetention is how long a decided approval stays in the
// owner's approval history.
const decidedApprovalRetention = 30 * 24 * time.Hour

// Retention of machine payments' bookkeeping (docs/design.md, Retention).
const (
	machineRequestRetention = 24 * time.Hour
	failedClaimRetention    = 7 * 24 * time.Hour
)

// PurgeCount is how many rows (or documents) one purge step removed.
type PurgeCount struct {
	What string
	N    int64
}

// Purge is one run of the garbage collector: it deletes what has outlived
// its retention (docs/design.md, Retention) and returns counts in a fixed
// order. Steps are independent: one failing does not stop the others, and
// the errors are joined. The periodic job (core/queue) and `faxhub admin
// purge` both call it.
func (s *Service) Purge(ctx context.Context) ([]PurgeCount, error) {
	now := s.now()
	c := s.cfg
	expired := now.Add(-c.ExpiredRetention)
	var out []PurgeCount
	var errs []error
	step := func(what string, f func() (int64, error)) {
		n, err := f()
		if err != nil {
			errs = append(errs, fmt.Errorf("purge %s: %w", what, err))
		}
		out = append(out, PurgeCount{What: what, N: n})
	}
	st := s.d.Store
	// Documents first: their uploads go in the same run.
	step("documents", func() (int64, error) { return s.purgeDocuments(ctx, now) })
	step("uploads", func() (int64, error) { return st.PurgeUploads(ctx, now) })
	step("idempotency_records", func() (int64, error) { return st.PurgeIdempotency(ctx, now.Add(-c.IdempotencyRetention)) })
	step("sessions", func() (int64, error) { return st.PurgeSessions(ctx, now) })
	step("checkouts", func() (int64, error) { return st.PurgeCheckouts(ctx, expired) })
	if op := s.d.AuthState; op != nil {
		// Before approvals: a consent hand-off keeps its approval.
		step("oauth_tokens_and_consents", func() (int64, error) { return op.DeleteExpiredOAuth(ctx, now) })
	}
	step("approvals", func() (int64, error) { return st.PurgeApprovals(ctx, expired, now.Add(-decidedApprovalRetention)) })
	step("agent_claims", func() (int64, error) { return st.PurgeAgentClaims(ctx, expired) })
	step("agent_enrollments", func() (int64, error) { return st.PurgeAgentEnrollments(ctx, expired) })
	step("agent_tokens", func() (int64, error) { return st.DeleteExpiredAgentTokens(ctx, now) })
	step("rate_limits", func() (int64, error) { return st.PurgeRateLimits(ctx, now) })
	// Agent tasks follow drafts and purchases; a task whose subject is gone
	// reads as failed, so the order of these two does not matter.
	unsent := now.Add(-c.UnsentRetention)
	step("credit_purchases", func() (int64, error) { return st.PurgeCreditPurchases(ctx, unsent) })
	step("agent_tasks", func() (int64, error) { return st.PurgeAgentTasks(ctx, now, unsent) })
	step("jwt_ids", func() (int64, error) { return st.PurgeJWTIDs(ctx, now) })
	step("delegated_sends", func() (int64, error) { return st.PurgeDelegatedSends(ctx, unsent) })
	step("unenrolled_hosts", func() (int64, error) { return st.PurgeUnenrolledHosts(ctx, unsent) })
	// Machine payments: unpaid requests a day after their challenges
	// expired (a payer that comes back later starts over); refused claims
	// after a week (they answer replays of a refused credential meanwhile).
	step("machine_requests", func() (int64, error) { return st.PurgeMachineRequests(ctx, now.Add(-machineRequestRetention)) })
	step("machine_claims", func() (int64, error) { return st.PurgeMachineClaims(ctx, now.Add(-failedClaimRetention)) })
	step("inbound_faxes", func() (int64, error) { return s.purgeInbound(ctx, now.Add(-c.InboxRetention)) })
	for _, name := range slices.Sorted(maps.Keys(s.d.Purgers)) {
		step(name, func() (int64, error) { return s.d.Purgers[name](ctx) })
	}

	attrs := make([]any, 0, 2*len(out)+2)
	for _, pc := range out {
		attrs = append(attrs, pc.What, pc.N)
	}
	err := errors.Join(errs...)
	if err != nil {
		attrs = append(attrs, "err", err)
		s.d.Logger.WarnContext(ctx, "purge finished with errors", attrs...)
	} else {
		s.d.Logger.InfoContext(ctx, "purge", attrs...)
	}
	return out, err
}

// purgeInbound deletes received faxes (their PDF and their text) received
// before before, at most GCBatch per run: the row goes first, so a link
// signed meanwhile finds nothing, then the blob.
func (s *Service) purgeInbound(ctx context.Context, before time.Time) (int64, error) {
	fs, err := s.d.Store.PurgeableInbound(ctx, before, s.cfg.GCBatch)
	if err != nil {
		return 0, err
	}
	var n int64
	var errs []error
	for i := range fs {
		f := &fs[i]
		if err := s.d.Store.DeleteInboundFax(ctx, f.ID); err != nil {
			if !errors.Is(err, core.ErrNoRows) {
				errs = append(errs, err)
			}
			continue
		}
		if f.DocumentKey != "" {
			if err := s.d.Blobs.Delete(ctx, f.DocumentKey); err != nil {
				s.d.Logger.WarnContext(ctx, "purge: received fax blob left behind", "inbound_id", f.ID, "err", err)
			}
		}
		n++
	}
	return n, errors.Join(errs...)
}

// purgeDocuments deletes the blobs of documents past their retention, at
// most GCBatch per run. A document is marked purged first (if it is still
// due), so no new fax can pick it up, then its blobs go. A blob that cannot
// be deleted is logged and left behind.
func (s *Service) purgeDocuments(ctx context.Context, now time.Time) (int64, error) {
	c := s.cfg
	unsent, sent := now.Add(-c.UnsentRetention), now.Add(-c.SentRetention)
	docs, err := s.d.Store.PurgeableDocuments(ctx, now, unsent, sent, c.GCBatch)
	if err != nil {
		return 0, err
	}
	var n int64
	var errs []error
	for i := range docs {
		d := &docs[i]
		if err := s.d.Store.MarkDocumentPurged(ctx, d.ID, now, unsent, sent); err != nil {
			if !errors.Is(err, core.ErrConflict) && !errors.Is(err, core.ErrNoRows) {
				errs = append(errs, err)
			}
			continue
		}
		if err := s.d.Documents.DeleteBlobs(ctx, d); err != nil {
			s.d.Logger.WarnContext(ctx, "purge: blob left behind", "document_id", d.ID, "err", err)
		}
		n++
	}
	return n, errors.Join(errs...)
}
