package storetest

import (
	"slices"
	"testing"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/accounts"
	"github.com/faxhub/faxhub/core/agents"
	"github.com/faxhub/faxhub/core/approvals"
	"github.com/faxhub/faxhub/core/documents"
	"github.com/faxhub/faxhub/core/faxes"
	"github.com/faxhub/faxhub/core/services"
)

// purgeTests are the garbage collector's deletions (retention.PurgeStore), one
// test each: what is due goes, what is not stays, and a second run finds
// nothing.
var purgeTests = []struct {
	name string
	run  func(t *testing.T, s services.Store)
}{
	{"PurgeIdempotency", testPurgeIdempotency},
	{"PurgeSessions", testPurgeSessions},
	{"PurgeApprovals", testPurgeApprovals},
	{"PurgeUploads", testPurgeUploads},
	{"PurgeCheckouts", testPurgeCheckouts},
	{"PurgeAgentClaims", testPurgeAgentClaims},
	{"PurgeAgentEnrollments", testPurgeAgentEnrollments},
	{"PurgeRateLimits", testPurgeRateLimits},
	{"PurgeDocuments", testPurgeDocuments},
	{"PurgeAgentTasks", testPurgeAgentTasks},
	{"PurgeJWTIDs", testPurgeJWTIDs},
	{"PurgeDelegatedSends", testPurgeDelegatedSends},
	{"PurgeUnenrolledHosts", testPurgeUnenrolledHosts},
	{"PurgeEvents", testPurgeEvents},
}

func wantPurged(t *testing.T, what string, n int64, err error, want int64) {
	t.Helper()
	must(t, err)
	if n != want {
		t.Fatalf("%s: purged %d, want %d", what, n, want)
	}
}

func testPurgeIdempotency(t *testing.T, s services.Store) {
	ctx := t.Context()
	for i, sec := range []int{0, 100} {
		must(t, s.InsertIdempotency(ctx, &core.IdempotencyRecord{Scope: "own_x:test:send_fax", Key: string(rune('a' + i)),
			RequestHash: "h", ResponseCode: 200, Response: []byte("{}"), CreatedAt: at(sec)}))
	}
	n, err := s.PurgeIdempotency(ctx, at(50))
	wantPurged(t, "records created before", n, err, 1)
	_, err = s.GetIdempotency(ctx, "own_x:test:send_fax", "a")
	wantErr(t, "purged record", err, core.ErrNoRows)
	_, err = s.GetIdempotency(ctx, "own_x:test:send_fax", "b")
	must(t, err)
	n, err = s.PurgeIdempotency(ctx, at(50))
	wantPurged(t, "second run", n, err, 0)
}

func testPurgeSessions(t *testing.T, s services.Store) {
	ctx := t.Context()
	o := newOwner(t, s)
	var ids []string
	for _, exp := range []int{10, 1000} {
		id := core.NewID("ses_")
		must(t, s.CreateSession(ctx, &accounts.Session{ID: id, Hash: core.HashSecret(id), OwnerID: o.ID,
			CreatedAt: at(0), LastSeenAt: at(0), ExpiresAt: at(exp)}))
		ids = append(ids, id)
	}
	n, err := s.PurgeSessions(ctx, at(100))
	wantPurged(t, "expired sessions", n, err, 1)
	_, err = s.GetSessionByHash(ctx, core.HashSecret(ids[0]))
	wantErr(t, "expired session", err, core.ErrNoRows)
	_, err = s.GetSessionByHash(ctx, core.HashSecret(ids[1]))
	must(t, err)
}

func testPurgeApprovals(t *testing.T, s services.Store) {
	ctx := t.Context()
	o := newOwner(t, s)
	expired := newApproval(t, s, o, 0, 10)
	live := newApproval(t, s, o, 0, 1000)
	decidedOld := newApproval(t, s, o, 0, 1000)
	must(t, s.DecideApproval(ctx, o.ID, decidedOld.ID, approvals.Approved, nil, at(5)))
	decidedNew := newApproval(t, s, o, 0, 1000)
	must(t, s.DecideApproval(ctx, o.ID, decidedNew.ID, approvals.Declined, nil, at(500)))
	// Decided approvals stay until decidedBefore, whatever their expiry.
	n, err := s.PurgeApprovals(ctx, at(100), at(100))
	wantPurged(t, "expired undecided and long-decided approvals", n, err, 2)
	for _, a := range []*approvals.Approval{expired, decidedOld} {
		_, err := s.GetApproval(ctx, o.ID, a.ID)
		wantErr(t, "purged approval", err, core.ErrNoRows)
	}
	for _, a := range []*approvals.Approval{live, decidedNew} {
		_, err := s.GetApproval(ctx, o.ID, a.ID)
		must(t, err)
	}
}

func testPurgeUploads(t *testing.T, s services.Store) {
	ctx := t.Context()
	o := newOwner(t, s)
	unused := newUpload(t, s, o) // expires at 3600
	leased := newUpload(t, s, o)
	must(t, s.ClaimUpload(ctx, leased.ID, "put", at(3590), at(3650)))
	completed := newUpload(t, s, o)
	must(t, s.ClaimUpload(ctx, completed.ID, "put", at(10), at(70)))
	doc := newDocument(t, s, o, core.ModeTest)
	must(t, s.CompleteUpload(ctx, completed.ID, "put", doc.ID))
	fresh := &documents.Upload{ID: core.NewID(core.PrefixUpload), OwnerID: o.ID, Mode: core.ModeTest, MaxBytes: 1, CreatedAt: at(3000), ExpiresAt: at(7200)}
	must(t, s.CreateUpload(ctx, fresh))

	n, err := s.PurgeUploads(ctx, at(3620))
	wantPurged(t, "expired unused uploads", n, err, 1)
	_, err = s.GetUpload(ctx, unused.ID)
	wantErr(t, "expired unused upload", err, core.ErrNoRows)
	for _, u := range []*documents.Upload{leased, completed, fresh} {
		_, err := s.GetUpload(ctx, u.ID)
		must(t, err)
	}
	// The PUT's lease is over: the expired capability goes.
	n, err = s.PurgeUploads(ctx, at(3700))
	wantPurged(t, "expired upload after its lease", n, err, 1)
	// A completed upload goes with its document's blobs.
	must(t, s.MarkDocumentPurged(ctx, doc.ID, at(1_000_000), at(1_000_000), at(1_000_000)))
	n, err = s.PurgeUploads(ctx, at(3700))
	wantPurged(t, "upload of a purged document", n, err, 1)
	_, err = s.GetUpload(ctx, fresh.ID)
	must(t, err)
}

func testPurgeCheckouts(t *testing.T, s services.Store) {
	ctx := t.Context()
	o := newOwner(t, s)
	open, paid, live := newCheckout(t, s, o, nil), newCheckout(t, s, o, nil), newCheckout(t, s, o, nil)
	must(t, s.MarkCheckoutPaid(ctx, paid.ID, at(10)))
	n, err := s.PurgeCheckouts(ctx, at(3601))
	wantPurged(t, "expired open checkouts", n, err, 2)
	_, err = s.GetCheckout(ctx, open.ID)
	wantErr(t, "expired open checkout", err, core.ErrNoRows)
	_, err = s.GetCheckout(ctx, live.ID)
	wantErr(t, "expired open checkout", err, core.ErrNoRows)
	_, err = s.GetCheckout(ctx, paid.ID)
	must(t, err) // a paid checkout is a payment record
	n, err = s.PurgeCheckouts(ctx, at(3601))
	wantPurged(t, "second run", n, err, 0)
}

func testPurgeAgentClaims(t *testing.T, s services.Store) {
	ctx := t.Context()
	o := newOwner(t, s)
	e1, e2 := newEnrollment(o.ID, 0), newEnrollment(o.ID, 1000)
	for _, e := range []*agents.Enrollment{e1, e2} {
		must(t, s.CreateAgentEnrollment(ctx, e, 5))
	}
	_, old := registerAgent(t, s, e1, 0)
	_, recent := registerAgent(t, s, e2, 1000)
	n, err := s.PurgeAgentClaims(ctx, at(0).Add(agents.ClaimTTL+time.Second))
	wantPurged(t, "expired claims", n, err, 1)
	_, err = s.GetAgentClaimByToken(ctx, old.TokenHash)
	wantErr(t, "expired claim", err, core.ErrNoRows)
	_, err = s.GetAgentClaimByToken(ctx, recent.TokenHash)
	must(t, err)
}

func testPurgeAgentEnrollments(t *testing.T, s services.Store) {
	ctx := t.Context()
	o := newOwner(t, s)
	old, recent := newEnrollment(o.ID, 0), newEnrollment(o.ID, 1000)
	for _, e := range []*agents.Enrollment{old, recent} {
		must(t, s.CreateAgentEnrollment(ctx, e, 5))
	}
	n, err := s.PurgeAgentEnrollments(ctx, at(0).Add(agents.EnrollmentTTL+time.Second))
	wantPurged(t, "expired enrollments", n, err, 1)
	_, err = s.GetAgentEnrollmentByHash(ctx, old.TokenHash)
	wantErr(t, "expired enrollment", err, core.ErrNoRows)
	_, err = s.GetAgentEnrollmentByHash(ctx, recent.TokenHash)
	must(t, err)
}

// testPurgeRateLimits: a key whose allowance has fully recovered is deleted,
// and behaves afterwards as it did before (a full burst).
func testPurgeRateLimits(t *testing.T, s services.Store) {
	ctx := t.Context()
	allow := func(key string, sec int) bool {
		t.Helper()
		ok, _, err := s.AllowRate(ctx, key, at(sec), time.Second, 2)
		must(t, err)
		return ok
	}
	allow("idle", 0)
	allow("busy", 100)
	allow("busy", 100)
	n, err := s.PurgeRateLimits(ctx, at(100))
	wantPurged(t, "recovered keys", n, err, 1)
	if allow("busy", 100) {
		t.Fatal("purge reset a key that still limits")
	}
	first, second := allow("idle", 100), allow("idle", 100)
	if !first || !second {
		t.Fatal("a purged key lost its burst")
	}
}

// testPurgeDocuments: which documents' blobs are due, and that marking one
// purged hides it and is refused once it is no longer due.
func testPurgeDocuments(t *testing.T, s services.Store) {
	ctx := t.Context()
	o := newOwner(t, s)
	ids := func(docs []documents.Document) []string {
		out := []string{}
		for _, d := range docs {
			out = append(out, d.ID)
		}
		slices.Sort(out) // same created_at: order by id
		return out
	}
	unsent := newDocument(t, s, o, core.ModeTest) // created at(1)
	drafted := newDocument(t, s, o, core.ModeTest)
	newDraft(t, s, drafted) // open until at(86400)
	queued := newDocument(t, s, o, core.ModeTest)
	newFax(t, s, queued)
	delivered := newDocument(t, s, o, core.ModeTest)
	f := newFax(t, s, delivered)
	f.Status, f.CompletedAt, f.UpdatedAt = faxes.Delivered, ptr(at(500)), at(500)
	must(t, s.UpdateFax(ctx, f, faxes.Queued))
	young := &documents.Document{ID: core.NewID(core.PrefixDocument), OwnerID: o.ID, Mode: core.ModeTest, SourceType: string(documents.FilePDF),
		SourceBytes: 1, SourceKey: "k", PDFKey: "k", PDFBytes: 1, Pages: 1, SHA256: "x", CreatedAt: at(5000)}
	must(t, s.CreateDocument(ctx, young))

	now := at(10_000)
	got, err := s.PurgeableDocuments(ctx, now, at(1000), at(1000), 0)
	must(t, err)
	wantEqual(t, "purgeable documents", ids(got), sorted(unsent.ID, delivered.ID))
	got, err = s.PurgeableDocuments(ctx, now, at(1000), at(400), 0)
	must(t, err)
	wantEqual(t, "purgeable before the fax ended", ids(got), []string{unsent.ID})
	got, err = s.PurgeableDocuments(ctx, at(90_000), at(1000), at(1000), 0)
	must(t, err)
	wantEqual(t, "after the draft expired", ids(got), sorted(unsent.ID, drafted.ID, delivered.ID))
	got, err = s.PurgeableDocuments(ctx, at(90_000), at(1000), at(1000), 2)
	must(t, err)
	wantEqual(t, "limit", len(got), 2)

	_, err = s.DocumentToUse(ctx, o.ID, core.ModeTest, unsent.ID)
	must(t, err)
	must(t, s.MarkDocumentPurged(ctx, unsent.ID, now, at(1000), at(1000)))
	_, err = s.GetDocument(ctx, o.ID, core.ModeTest, unsent.ID)
	wantErr(t, "GetDocument of a purged document", err, core.ErrNoRows)
	// A purge by this process drops the document DocumentToUse kept; one
	// it did not see is refused where the document would be used.
	_, err = s.DocumentToUse(ctx, o.ID, core.ModeTest, unsent.ID)
	wantErr(t, "DocumentToUse of a document purged here", err, core.ErrNoRows)
	wantErr(t, "UseDocument of a purged document", s.UseDocument(ctx, unsent.ID, now), core.ErrNoRows)
	wantErr(t, "MarkDocumentPurged twice", s.MarkDocumentPurged(ctx, unsent.ID, now, at(1000), at(1000)), core.ErrConflict)
	wantErr(t, "MarkDocumentPurged of a document in use", s.MarkDocumentPurged(ctx, queued.ID, now, at(1000), at(1000)), core.ErrConflict)
	wantErr(t, "MarkDocumentPurged of a missing document", s.MarkDocumentPurged(ctx, "doc_missing", now, at(1000), at(1000)), core.ErrNoRows)
	used, err := s.DocumentUsage(ctx, o.ID, core.ModeTest)
	must(t, err)
	wantEqual(t, "usage without the purged document", used, drafted.SourceBytes+young.SourceBytes)
	got, err = s.PurgeableDocuments(ctx, now, at(1000), at(1000), 0)
	must(t, err)
	wantEqual(t, "purgeable after one was purged", ids(got), []string{delivered.ID})

	// A fax or draft being made from a document writes its row: the purge
	// of that row then finds it used and leaves it, and a purged document
	// cannot be used.
	must(t, s.UseDocument(ctx, delivered.ID, at(9_999)))
	wantErr(t, "MarkDocumentPurged of a document just used", s.MarkDocumentPurged(ctx, delivered.ID, now, at(1000), at(1000)), core.ErrConflict)
	got, err = s.PurgeableDocuments(ctx, now, at(1000), at(1000), 0)
	must(t, err)
	wantEqual(t, "purgeable after a use", len(got), 0)
	got, err = s.PurgeableDocuments(ctx, at(30_000), at(20_000), at(20_000), 0)
	must(t, err)
	wantEqual(t, "purgeable once the use is old", ids(got), sorted(delivered.ID, young.ID))
	wantErr(t, "UseDocument of a purged document", s.UseDocument(ctx, unsent.ID, now), core.ErrNoRows)
	wantErr(t, "UseDocument of a missing document", s.UseDocument(ctx, "doc_missing", now), core.ErrNoRows)
}

func sorted(s ...string) []string {
	slices.Sort(s)
	return s
}
