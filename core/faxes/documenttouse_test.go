package faxes_test

import (
	"database/sql"
	"testing"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/faxes"
	"github.com/faxhub/faxhub/core/services"
	"github.com/faxhub/faxhub/internal/testenv"
)

// A send by document id or upload token may take the document from this
// process's memory (DocumentToUse, UploadDocumentToUse). One purged since
// by another process, which could not tell this one, is refused by the
// send's own transaction with the answer a fresh read gives, and the
// refused send leaves nothing: no fax, no hold.
func TestSendRefusesADocumentPurgedByAnotherProcess(t *testing.T) {
	e := testenv.New(t, testenv.WithoutWorkers(), testenv.WithConfig(func(c *services.Config) { c.SetLimit(core.LimitSend, core.Rate{Burst: 1000}) }))
	p := e.Principal(t, e.KeyATest)
	byToken := faxes.SendRequest{To: "+12125550100", UploadToken: e.Upload(t, p, 1)}
	first, _, err := e.Svc.Faxes.Send(ctx, p, "k1", byToken)
	if err != nil {
		t.Fatal(err)
	}
	byID := faxes.SendRequest{To: "+12125550100", DocumentID: first.DocumentID}
	second, _, err := e.Svc.Faxes.Send(ctx, p, "k2", byID)
	if err != nil {
		t.Fatalf("send by document id: %v", err)
	}
	before := e.Credits(t, p)

	// Purged as another replica's janitor would: in the database only.
	stmt := "UPDATE documents SET purged_at = CURRENT_TIMESTAMP WHERE id = $1"
	if _, err := e.Store.(interface{ SQL() *sql.DB }).SQL().ExecContext(ctx, stmt, first.DocumentID); err != nil {
		t.Fatal(err)
	}
	_, _, err = e.Svc.Faxes.Send(ctx, p, "k3", byID)
	testenv.WantCode(t, err, core.CodeNotFound)
	_, _, err = e.Svc.Faxes.Send(ctx, p, "k4", byToken)
	testenv.WantCode(t, err, core.CodeNotFound)

	if after := e.Credits(t, p); after.AvailableMicros != before.AvailableMicros || after.HeldMicros != before.HeldMicros {
		t.Fatalf("the refused send moved credits: available %s → %s, held %s → %s", before.Available, after.Available, before.Held, after.Held)
	}
	page, err := e.Svc.Faxes.List(ctx, p, faxes.ListRequest{Limit: 100})
	if err != nil || len(page.Data) != 2 {
		t.Fatalf("want the two faxes sent before the purge, got %d (%v)", len(page.Data), err)
	}
	if o, replayed, err := e.Svc.Faxes.Send(ctx, p, "k2", byID); err != nil || !replayed || o.ID != second.ID {
		t.Fatalf("replay of the send before the purge: %+v replayed=%v err=%v", o, replayed, err)
	}
}
