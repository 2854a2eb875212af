package faxes_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/events"
	"github.com/faxhub/faxhub/core/faxes"
	"github.com/faxhub/faxhub/internal/testenv"
)

func recipients(to ...string) []faxes.BatchRecipient {
	out := make([]faxes.BatchRecipient, len(to))
	for i, n := range to {
		out[i] = faxes.BatchRecipient{To: n}
	}
	return out
}

// TestBatchDelivered: a 3-recipient batch is three faxes with their own
// holds; the summary follows them, and batch.completed is written once,
// by the last fax's end. A replay answers the same batch; another body
// under the key is a conflict.
func TestBatchDelivered(t *testing.T) {
	e := testenv.New(t)
	p := e.Principal(t, e.KeyATest)
	req := faxes.BatchRequest{UploadToken: e.Upload(t, p, 2), Recipients: recipients("+12125550100", "+12125550104", "+12125550103")}
	req.Recipients[0].CoverPage = &faxes.RecipientCover{RecipientName: "Ada"}
	b, replayed, err := e.Svc.Faxes.SendBatch(ctx, p, "b1", req)
	if err != nil || replayed {
		t.Fatal(err, replayed)
	}
	if b.Total != 3 || len(b.Faxes) != 3 || b.Counts.Queued+b.Counts.Sending != 3 || b.PriceCents != 14+14+21 {
		t.Fatalf("created batch %+v", b)
	}
	again, replayed, err := e.Svc.Faxes.SendBatch(ctx, p, "b1", req)
	if err != nil || !replayed || again.ID != b.ID {
		t.Fatalf("replay: %v %v %+v", err, replayed, again)
	}
	other := req
	other.Recipients = recipients("+12125550100")
	if _, _, err := e.Svc.Faxes.SendBatch(ctx, p, "b1", other); core.ErrorCode(err) != core.CodeIdempotencyConflict {
		t.Fatalf("another body under the key: %v", err)
	}
	e.DrainQueue(t)
	got, err := e.Svc.Faxes.GetBatch(ctx, p, b.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.CompletedAt == nil || got.Counts != (faxes.BatchCounts{Delivered: 1, Partial: 1, Failed: 1}) {
		t.Fatalf("after delivery %+v", got)
	}
	for _, f := range got.Faxes {
		fx, err := e.Svc.Faxes.Get(ctx, p, f.ID)
		if err != nil || fx.BatchID == nil || *fx.BatchID != b.ID {
			t.Fatalf("fax %s: %v %+v", f.ID, err, fx)
		}
		if fx.To == "+12125550100" && (fx.Options.CoverPage == nil || fx.Options.CoverPage.RecipientName != "Ada") {
			t.Fatalf("recipient cover page %+v", fx.Options.CoverPage)
		}
	}
	if evs := e.Events(t, p, events.BatchCompleted); len(evs) != 1 || evs[0].SubjectID != b.ID {
		t.Fatalf("batch.completed events: %+v", evs)
	}
	if c := e.Credits(t, p); c.HeldMicros != 0 {
		t.Fatalf("held after the batch: %s", c.Held)
	}
}

// TestBatchRefusedWhole: a premium number, too many recipients, or too
// few credits refuse the whole batch: no fax, hold or batch is created.
func TestBatchRefusedWhole(t *testing.T) {
	e := testenv.New(t, testenv.WithoutWorkers())
	p := e.Principal(t, e.KeyATest)
	tok := e.Upload(t, p, 1)
	before := e.Credits(t, p)
	_, _, err := e.Svc.Faxes.SendBatch(ctx, p, "prem", faxes.BatchRequest{UploadToken: tok, Recipients: recipients("+12125550100", "+19005550100")})
	ce := core.AsError(err)
	if ce.Code != core.CodePremiumDestination || ce.Fields["recipient"] != 1 || ce.Fields["to"] != "+19005550100" {
		t.Fatalf("premium recipient: %v %v", err, ce.Fields)
	}
	many := make([]string, faxes.MaxBatchRecipients+1)
	for i := range many {
		many[i] = fmt.Sprintf("+1212555%04d", 1000+i)
	}
	_, _, err = e.Svc.Faxes.SendBatch(ctx, p, "many", faxes.BatchRequest{UploadToken: tok, Recipients: recipients(many...)})
	if ce := core.AsError(err); ce.Code != core.CodeInvalidRequest || ce.Fields["field"] != "recipients" || ce.Fields["limit"] != faxes.MaxBatchRecipients {
		t.Fatalf("101 recipients: %v", err)
	}
	// 100 recipients of a 350-page document cost more than 10 USD.
	big := e.Upload(t, p, 50)
	_, _, err = e.Svc.Faxes.SendBatch(ctx, p, "poor", faxes.BatchRequest{UploadToken: big, Recipients: recipients(many[:100]...)})
	if core.ErrorKind(err) != core.KindPaymentRequired {
		t.Fatalf("too few credits: %v", err)
	}
	after := e.Credits(t, p)
	if after.AvailableMicros != before.AvailableMicros || after.HeldMicros != 0 {
		t.Fatalf("credits moved: %s held %s", after.Available, after.Held)
	}
	if page, err := e.Svc.Faxes.List(ctx, p, faxes.ListRequest{}); err != nil || len(page.Data) != 0 {
		t.Fatalf("faxes after refusals: %v %d", err, len(page.Data))
	}
	if page, err := e.Svc.Faxes.ListBatches(ctx, p, "", 0); err != nil || len(page.Data) != 0 {
		t.Fatalf("batches after refusals: %v %+v", err, page)
	}
}

// TestBatchCancelScheduled: canceling a scheduled batch cancels every fax,
// releases every hold and completes the batch.
func TestBatchCancelScheduled(t *testing.T) {
	e, clk := testenv.Clocked(t)
	p := e.Principal(t, e.KeyATest)
	at := clk.Now().Add(time.Hour)
	req := faxes.BatchRequest{UploadToken: e.Upload(t, p, 1), Recipients: recipients("+12125550100", "+12125550101")}
	req.SendAt = &at
	b, _, err := e.Svc.Faxes.SendBatch(ctx, p, "sched", req)
	if err != nil || b.Counts.Scheduled != 2 {
		t.Fatalf("%v %+v", err, b)
	}
	if c := e.Credits(t, p); c.HeldMicros != b.PriceCents*10_000 || b.PriceCents == 0 {
		t.Fatalf("held %s", c.Held)
	}
	got, err := e.Svc.Faxes.CancelBatch(ctx, p, b.ID)
	if err != nil || got.Counts.Canceled != 2 || got.CompletedAt == nil {
		t.Fatalf("%v %+v", err, got)
	}
	if c := e.Credits(t, p); c.HeldMicros != 0 || c.AvailableMicros != 10*core.MicrosPerDollar {
		t.Fatalf("after cancel: available %s held %s", c.Available, c.Held)
	}
	if evs := e.Events(t, p, events.BatchCompleted); len(evs) != 1 {
		t.Fatalf("batch.completed %d", len(evs))
	}
}

// TestResend: a resend is a new fax of the earlier one's document, to the
// same number or another, naming the earlier one; a purged document is
// refused (410 document_purged).
func TestResend(t *testing.T) {
	e := testenv.New(t)
	p := e.Principal(t, e.KeyATest)
	first, _, err := e.Svc.Faxes.Send(ctx, p, "r0", faxes.SendRequest{To: "+12125550100", UploadToken: e.Upload(t, p, 1), Options: faxes.Options{Header: "ACME"}})
	if err != nil {
		t.Fatal(err)
	}
	same, _, err := e.Svc.Faxes.Resend(ctx, p, "r1", first.ID, faxes.ResendRequest{})
	if err != nil || same.ID == first.ID || same.To != first.To || same.DocumentID != first.DocumentID || same.Options.ResendOf != first.ID || same.Options.Header != "ACME" {
		t.Fatalf("resend to the same number: %v %+v", err, same)
	}
	other, _, err := e.Svc.Faxes.Resend(ctx, p, "r2", first.ID, faxes.ResendRequest{To: "+12125550104"})
	if err != nil || other.To != "+12125550104" || other.Options.ResendOf != first.ID {
		t.Fatalf("resend to another number: %v %+v", err, other)
	}
	if _, replayed, err := e.Svc.Faxes.Resend(ctx, p, "r2", first.ID, faxes.ResendRequest{To: "+12125550104"}); err != nil || !replayed {
		t.Fatalf("replay: %v %v", err, replayed)
	}
	e.DrainQueue(t)
	far := time.Now().Add(365 * 24 * time.Hour)
	if err := e.Store.MarkDocumentPurged(ctx, first.DocumentID, far, far, far); err != nil {
		t.Fatal(err)
	}
	_, _, err = e.Svc.Faxes.Resend(ctx, p, "r3", first.ID, faxes.ResendRequest{})
	if ce := core.AsError(err); ce.Kind != core.KindGone || ce.Code != faxes.CodeDocumentPurged {
		t.Fatalf("resend of a purged document: %v", err)
	}
}
