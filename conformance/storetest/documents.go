package storetest

import (
	"context"
	"testing"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/accounts"
	"github.com/faxhub/faxhub/core/documents"
	"github.com/faxhub/faxhub/core/faxes"
	"github.com/faxhub/faxhub/core/services"
)

func newUpload(t *testing.T, s services.Store, o *accounts.Owner) *documents.Upload {
	t.Helper()
	u := &documents.Upload{
		ID: core.NewID(core.PrefixUpload), OwnerID: o.ID, Mode: core.ModeTest, ContentType: string(documents.FilePDF),
		MaxBytes: 50 << 20, CreatedAt: at(0), ExpiresAt: at(3600),
	}
	must(t, s.CreateUpload(t.Context(), u))
	return u
}

func testUploads(t *testing.T, s services.Store) {
	ctx := t.Context()
	o := newOwner(t, s)
	u := newUpload(t, s, o)
	get := func(what string, want *documents.Upload) {
		t.Helper()
		got, err := s.GetUpload(ctx, u.ID)
		must(t, err)
		wantEqual(t, what, got, want)
	}
	get("GetUpload", u)
	wantErr(t, "upload with a taken id", s.CreateUpload(ctx, u), core.ErrExists)

	wantErr(t, "CompleteUpload before a claim", s.CompleteUpload(ctx, u.ID, "put1", "doc_x"), core.ErrConflict)

	// A PUT leases the upload for a minute.
	must(t, s.ClaimUpload(ctx, u.ID, "put1", at(10), at(70)))
	u.ClaimedAt = ptr(at(10))
	get("claimed upload", u)
	wantErr(t, "ClaimUpload during the lease", s.ClaimUpload(ctx, u.ID, "put2", at(11), at(71)), core.ErrConflict)

	// A failed PUT gives the token back; it can be claimed again. Only the
	// claim that holds it can give it back.
	wantErr(t, "ReleaseUpload by another claim", s.ReleaseUpload(ctx, u.ID, "put2"), core.ErrConflict)
	must(t, s.ReleaseUpload(ctx, u.ID, "put1"))
	u.ClaimedAt = nil
	get("released upload", u)
	must(t, s.ClaimUpload(ctx, u.ID, "put3", at(12), at(72)))
	u.ClaimedAt = ptr(at(12))

	doc := newDocument(t, s, o, core.ModeTest)
	wantErr(t, "CompleteUpload by a released claim", s.CompleteUpload(ctx, u.ID, "put1", doc.ID), core.ErrConflict)
	must(t, s.CompleteUpload(ctx, u.ID, "put3", doc.ID))
	u.DocumentID = &doc.ID
	get("completed upload", u)
	wantErr(t, "CompleteUpload twice", s.CompleteUpload(ctx, u.ID, "put3", doc.ID), core.ErrConflict)
	wantErr(t, "ReleaseUpload after completion", s.ReleaseUpload(ctx, u.ID, "put3"), core.ErrConflict)
	wantErr(t, "RenewUpload after completion", s.RenewUpload(ctx, u.ID, "put3", at(100)), core.ErrConflict)
	wantErr(t, "ClaimUpload after completion", s.ClaimUpload(ctx, u.ID, "put4", at(13), at(73)), core.ErrConflict)
	wantErr(t, "ClaimUpload after completion and lapsed lease", s.ClaimUpload(ctx, u.ID, "put4", at(200), at(260)), core.ErrConflict)
	get("completed upload after refused changes", u)

	// The document uploaded with the token, in one read: only its owner's,
	// in its mode, and never one that is purged. Read again (on SQLite from
	// the kept row, rowcache.go; by UploadDocumentToUse from memory), after
	// a send marked it used and after a reader changed its copy.
	other := newOwner(t, s)
	for i, r := range []struct {
		name string
		read func(ctx context.Context, uploadID, ownerID string, mode core.Mode) (*documents.Document, error)
	}{{"GetUploadDocument", s.GetUploadDocument}, {"UploadDocumentToUse", s.UploadDocumentToUse}} {
		for _, read := range []string{"first", "second", "third"} {
			got, err := r.read(ctx, u.ID, o.ID, core.ModeTest)
			must(t, err)
			wantEqual(t, r.name+", "+read+" read", got, doc)
			got.Pages = 99 // the caller's copy
			if i == 0 && read == "first" {
				must(t, s.UseDocument(ctx, doc.ID, at(20)))
			}
		}
		_, err := r.read(ctx, u.ID, other.ID, core.ModeTest)
		wantErr(t, r.name+" of another owner", err, core.ErrNoRows)
		_, err = r.read(ctx, u.ID, o.ID, core.ModeLive)
		wantErr(t, r.name+" in the other mode", err, core.ErrNoRows)
		_, err = r.read(ctx, newUpload(t, s, o).ID, o.ID, core.ModeTest)
		wantErr(t, r.name+" of an upload without a document", err, core.ErrNoRows)
		_, err = r.read(ctx, "upl_missing", o.ID, core.ModeTest)
		wantErr(t, r.name+" of a missing upload", err, core.ErrNoRows)
	}
	must(t, s.MarkDocumentPurged(ctx, doc.ID, at(1_000_000), at(1_000_000), at(1_000_000)))
	_, err := s.GetUploadDocument(ctx, u.ID, o.ID, core.ModeTest)
	wantErr(t, "GetUploadDocument of a purged document", err, core.ErrNoRows)
	// A purge by this process drops what UploadDocumentToUse kept.
	_, err = s.UploadDocumentToUse(ctx, u.ID, o.ID, core.ModeTest)
	wantErr(t, "UploadDocumentToUse of a document purged here", err, core.ErrNoRows)

	_, err = s.GetUpload(ctx, "upl_missing")
	wantErr(t, "GetUpload of a missing upload", err, core.ErrNoRows)
	wantErr(t, "ClaimUpload of a missing upload", s.ClaimUpload(ctx, "upl_missing", "put", at(1), at(61)), core.ErrNoRows)
	wantErr(t, "RenewUpload of a missing upload", s.RenewUpload(ctx, "upl_missing", "put", at(61)), core.ErrNoRows)
	wantErr(t, "ReleaseUpload of a missing upload", s.ReleaseUpload(ctx, "upl_missing", "put"), core.ErrNoRows)
	wantErr(t, "CompleteUpload of a missing upload", s.CompleteUpload(ctx, "upl_missing", "put", doc.ID), core.ErrNoRows)
}

// testUploadLease: a PUT's claim is a lease. While it is renewed nobody else
// gets the upload; once it lapses (the PUT's process died) the next PUT
// does, and the PUT that lost it can neither renew nor complete.
func testUploadLease(t *testing.T, s services.Store) {
	ctx := t.Context()
	o := newOwner(t, s)
	u := newUpload(t, s, o)

	must(t, s.ClaimUpload(ctx, u.ID, "dead", at(10), at(70)))
	must(t, s.RenewUpload(ctx, u.ID, "dead", at(90)))
	wantErr(t, "ClaimUpload before the renewed lease lapses", s.ClaimUpload(ctx, u.ID, "next", at(89), at(149)), core.ErrConflict)
	// The process died after its last renewal: at 90 the lease has lapsed.
	must(t, s.ClaimUpload(ctx, u.ID, "next", at(90), at(150)))
	got, err := s.GetUpload(ctx, u.ID)
	must(t, err)
	wantEqual(t, "claimed_at of the new claim", got.ClaimedAt, ptr(at(90)))

	wantErr(t, "RenewUpload by the lapsed claim", s.RenewUpload(ctx, u.ID, "dead", at(200)), core.ErrConflict)
	wantErr(t, "ReleaseUpload by the lapsed claim", s.ReleaseUpload(ctx, u.ID, "dead"), core.ErrConflict)
	doc := newDocument(t, s, o, core.ModeTest)
	wantErr(t, "CompleteUpload by the lapsed claim", s.CompleteUpload(ctx, u.ID, "dead", doc.ID), core.ErrConflict)
	must(t, s.RenewUpload(ctx, u.ID, "next", at(210)))
	must(t, s.CompleteUpload(ctx, u.ID, "next", doc.ID))
}

func testDocuments(t *testing.T, s services.Store) {
	ctx := t.Context()
	o, other := newOwner(t, s), newOwner(t, s)
	d := newDocument(t, s, o, core.ModeLive)
	wantErr(t, "document with a taken id", s.CreateDocument(ctx, d), core.ErrExists)

	// DocumentToUse answers as GetDocument (the second time and after from
	// memory, a copy its caller may change), and never another owner's or
	// mode's.
	for _, r := range []struct {
		name string
		read func(ctx context.Context, ownerID string, mode core.Mode, id string) (*documents.Document, error)
	}{{"GetDocument", s.GetDocument}, {"DocumentToUse", s.DocumentToUse}} {
		for _, read := range []string{"first", "second", "third"} {
			got, err := r.read(ctx, o.ID, core.ModeLive, d.ID)
			must(t, err)
			wantEqual(t, r.name+", "+read+" read", got, d)
			got.Pages++ // the caller's copy
		}
		_, err := r.read(ctx, o.ID, core.ModeTest, d.ID)
		wantErr(t, r.name+" in the other mode", err, core.ErrNoRows)
		_, err = r.read(ctx, other.ID, core.ModeLive, d.ID)
		wantErr(t, r.name+" of another owner", err, core.ErrNoRows)
		_, err = r.read(ctx, o.ID, core.ModeLive, "doc_missing")
		wantErr(t, r.name+" of a missing document", err, core.ErrNoRows)
	}
}

func newDraft(t *testing.T, s services.Store, doc *documents.Document) *faxes.Draft {
	t.Helper()
	d := &faxes.Draft{
		ID: core.NewID(core.PrefixDraft), OwnerID: doc.OwnerID, Mode: doc.Mode, DocumentID: doc.ID, To: "+14155550123", Country: "US",
		Cover: true, CoverText: "Attn: Billing", Pages: doc.Pages, PriceMicros: 280_000, Status: faxes.DraftOpen,
		CreatedAt: at(0), ExpiresAt: at(86400), SentBy: faxes.SentBy{Kind: core.PrincipalAgent, ID: "reg_01", Name: "billing agent"},
	}
	must(t, s.CreateDraft(t.Context(), d))
	return d
}

func testDrafts(t *testing.T, s services.Store) {
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
	fax.PaymentMethod, fax.DraftID = faxes.PayCheckout, &d.ID
	must(t, s.CreateFax(ctx, fax))
	must(t, s.MarkDraftPaid(ctx, d.ID, fax.ID))
	d.Status, d.FaxID = faxes.DraftPaid, &fax.ID
	got, err = s.GetDraft(ctx, o.ID, core.ModeTest, d.ID)
	must(t, err)
	wantEqual(t, "paid draft", got, d)
	wantErr(t, "MarkDraftPaid twice", s.MarkDraftPaid(ctx, d.ID, fax.ID), core.ErrConflict)
	wantErr(t, "MarkDraftPaid of a missing draft", s.MarkDraftPaid(ctx, "drf_missing", fax.ID), core.ErrNoRows)
}

// testDocumentUsage: the quota counts an owner's unsent documents in one
// mode, original plus converted PDF (once when they are the same blob).
func testDocumentUsage(t *testing.T, s services.Store) {
	ctx := t.Context()
	o, other := newOwner(t, s), newOwner(t, s)
	usage := func(what string, o *accounts.Owner, mode core.Mode, want int64) {
		t.Helper()
		got, err := s.DocumentUsage(ctx, o.ID, mode)
		must(t, err)
		wantEqual(t, what, got, want)
	}
	usage("no documents", o, core.ModeTest, 0)
	pdf := newDocument(t, s, o, core.ModeTest) // a PDF: one blob of 12345 bytes
	usage("one PDF", o, core.ModeTest, 12345)
	conv := *pdf
	conv.ID = core.NewID(core.PrefixDocument)
	conv.SourceType, conv.SourceKey, conv.PDFKey, conv.SourceBytes, conv.PDFBytes = string(documents.FileDOCX), conv.ID+"/source", conv.ID+"/document.pdf", 1000, 500
	must(t, s.CreateDocument(ctx, &conv))
	usage("a PDF, a converted file and its PDF", o, core.ModeTest, 12345+1500)
	newDocument(t, s, o, core.ModeLive)
	newDocument(t, s, other, core.ModeTest)
	usage("other modes and owners do not count", o, core.ModeTest, 12345+1500)
	newFax(t, s, pdf)
	usage("a sent document does not count", o, core.ModeTest, 1500)
}
