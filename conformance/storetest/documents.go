package storetest

import (
	"testing"

	"github.com/faxhub/faxhub/core"
)

func newUpload(t *testing.T, s core.Store, o *core.Owner) *core.Upload {
	t.Helper()
	u := &core.Upload{
		ID: core.NewID(core.PrefixUpload), OwnerID: o.ID, Mode: core.ModeTest, ContentType: string(core.FilePDF),
		MaxBytes: 50 << 20, CreatedAt: at(0), ExpiresAt: at(3600),
	}
	must(t, s.CreateUpload(t.Context(), u))
	return u
}

func testUploads(t *testing.T, s core.Store) {
	ctx := t.Context()
	o := newOwner(t, s)
	u := newUpload(t, s, o)
	get := func(what string, want *core.Upload) {
		t.Helper()
		got, err := s.GetUpload(ctx, u.ID)
		must(t, err)
		wantEqual(t, what, got, want)
	}
	get("GetUpload", u)
	wantErr(t, "upload with a taken id", s.CreateUpload(ctx, u), core.ErrExists)

	wantErr(t, "CompleteUpload before a claim", s.CompleteUpload(ctx, u.ID, "doc_x"), core.ErrConflict)

	must(t, s.ClaimUpload(ctx, u.ID, at(10)))
	u.ClaimedAt = ptr(at(10))
	get("claimed upload", u)
	wantErr(t, "ClaimUpload twice", s.ClaimUpload(ctx, u.ID, at(11)), core.ErrConflict)

	// A failed PUT gives the token back; it can be claimed again.
	must(t, s.ReleaseUpload(ctx, u.ID))
	u.ClaimedAt = nil
	get("released upload", u)
	must(t, s.ClaimUpload(ctx, u.ID, at(12)))
	u.ClaimedAt = ptr(at(12))

	doc := newDocument(t, s, o, core.ModeTest)
	must(t, s.CompleteUpload(ctx, u.ID, doc.ID))
	u.DocumentID = &doc.ID
	get("completed upload", u)
	wantErr(t, "CompleteUpload twice", s.CompleteUpload(ctx, u.ID, doc.ID), core.ErrConflict)
	wantErr(t, "ReleaseUpload after completion", s.ReleaseUpload(ctx, u.ID), core.ErrConflict)
	wantErr(t, "ClaimUpload after completion", s.ClaimUpload(ctx, u.ID, at(13)), core.ErrConflict)
	get("completed upload after refused changes", u)

	_, err := s.GetUpload(ctx, "upl_missing")
	wantErr(t, "GetUpload of a missing upload", err, core.ErrNoRows)
	wantErr(t, "ClaimUpload of a missing upload", s.ClaimUpload(ctx, "upl_missing", at(1)), core.ErrNoRows)
	wantErr(t, "ReleaseUpload of a missing upload", s.ReleaseUpload(ctx, "upl_missing"), core.ErrNoRows)
	wantErr(t, "CompleteUpload of a missing upload", s.CompleteUpload(ctx, "upl_missing", doc.ID), core.ErrNoRows)
}

func testDocuments(t *testing.T, s core.Store) {
	ctx := t.Context()
	o, other := newOwner(t, s), newOwner(t, s)
	d := newDocument(t, s, o, core.ModeLive)
	got, err := s.GetDocument(ctx, o.ID, core.ModeLive, d.ID)
	must(t, err)
	wantEqual(t, "GetDocument", got, d)

	_, err = s.GetDocument(ctx, o.ID, core.ModeTest, d.ID)
	wantErr(t, "GetDocument in the other mode", err, core.ErrNoRows)
	_, err = s.GetDocument(ctx, other.ID, core.ModeLive, d.ID)
	wantErr(t, "GetDocument of another owner", err, core.ErrNoRows)
	_, err = s.GetDocument(ctx, o.ID, core.ModeLive, "doc_missing")
	wantErr(t, "GetDocument of a missing document", err, core.ErrNoRows)
	wantErr(t, "document with a taken id", s.CreateDocument(ctx, d), core.ErrExists)
}

func newDraft(t *testing.T, s core.Store, doc *core.Document) *core.Draft {
	t.Helper()
	d := &core.Draft{
		ID: core.NewID(core.PrefixDraft), OwnerID: doc.OwnerID, Mode: doc.Mode, DocumentID: doc.ID, To: "+14155550123",
		Cover: true, CoverText: "Attn: Billing", Pages: doc.Pages, PriceMicros: 280_000, Status: core.DraftOpen,
		CreatedAt: at(0), ExpiresAt: at(86400),
	}
	must(t, s.CreateDraft(t.Context(), d))
	return d
}

func testDrafts(t *testing.T, s core.Store) {
	ctx := t.Context()
	o := newOwner(t, s)
	doc := newDocument(t, s, o, core.ModeTest)
	d := newDraft(t, s, doc)
	got, err := s.GetDraft(ctx, o.ID, core.ModeTest, d.ID)
	must(t, err)
	wantEqual(t, "GetDraft", got, d)
	_, err = s.GetDraft(ctx, o.ID, core.ModeLive, d.ID)
	wantErr(t, "GetDraft in the other mode", err, core.ErrNoRows)
	_, err = s.GetDraft(ctx, "own_other", core.ModeTest, d.ID)
	wantErr(t, "GetDraft of another owner", err, core.ErrNoRows)
	wantErr(t, "draft with a taken id", s.CreateDraft(ctx, d), core.ErrExists)

	fax := faxOf(doc, at(5))
	fax.PaymentMethod, fax.DraftID = core.PayCheckout, &d.ID
	must(t, s.CreateFax(ctx, fax))
	must(t, s.MarkDraftPaid(ctx, d.ID, fax.ID))
	d.Status, d.FaxID = core.DraftPaid, &fax.ID
	got, err = s.GetDraft(ctx, o.ID, core.ModeTest, d.ID)
	must(t, err)
	wantEqual(t, "paid draft", got, d)
	wantErr(t, "MarkDraftPaid twice", s.MarkDraftPaid(ctx, d.ID, fax.ID), core.ErrConflict)
	wantErr(t, "MarkDraftPaid of a missing draft", s.MarkDraftPaid(ctx, "drf_missing", fax.ID), core.ErrNoRows)
}
