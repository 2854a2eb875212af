package rest_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/faxes"
)

// TestBatchesOverREST: a broadcast over REST: three recipients, one with a
// cover page of its own, summarised while and after they are delivered;
// refused whole for one premium number or 101 recipients, with nothing
// charged; idempotent as a whole; and a resend of one of its faxes.
func TestBatchesOverREST(t *testing.T) {
	h := newHarness(t)
	key := h.env.KeyATest
	p := h.env.Principal(t, key)
	before := h.env.Credits(t, p).AvailableMicros
	tok := h.env.Upload(t, p, 2)
	body := map[string]any{"uploadToken": tok, "header": "Broadcast Co", "recipients": []any{
		map[string]any{"to": deliverable, "coverPage": map[string]any{"recipientName": "Ada"}},
		map[string]any{"to": "+12125550105"}, map[string]any{"to": "+12125550103"},
	}}

	h.do(key, "POST", "/api/v1/batches", map[string]any{"uploadToken": tok, "recipients": []any{
		map[string]any{"to": deliverable}, map[string]any{"to": "+19005550100"},
	}}, map[string]string{"Idempotency-Key": "b-premium"}).problem(http.StatusUnprocessableEntity, core.CodePremiumDestination)
	many := make([]any, faxes.MaxBatchRecipients+1)
	for i := range many {
		many[i] = map[string]any{"to": fmt.Sprintf("+1212555%04d", 100+i)}
	}
	pr := h.do(key, "POST", "/api/v1/batches", map[string]any{"uploadToken": tok, "recipients": many},
		map[string]string{"Idempotency-Key": "b-many"}).problem(http.StatusBadRequest, core.CodeInvalidRequest)
	if pr["field"] != "recipients" {
		t.Fatalf("101 recipients: %v", pr)
	}
	if after := h.env.Credits(t, p).AvailableMicros; after != before {
		t.Fatalf("refused batches charged %d", before-after)
	}

	var b faxes.BatchView
	h.do(key, "POST", "/api/v1/batches", body, map[string]string{"Idempotency-Key": "b-1"}).status(http.StatusOK).decode(&b)
	if b.Total != 3 || len(b.Faxes) != 3 {
		t.Fatalf("batch %+v", b)
	}
	replay := h.do(key, "POST", "/api/v1/batches", body, map[string]string{"Idempotency-Key": "b-1"}).status(http.StatusOK)
	var again faxes.BatchView
	replay.decode(&again)
	if again.ID != b.ID || replay.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("replay %+v", again)
	}
	body["header"] = "Another"
	h.do(key, "POST", "/api/v1/batches", body, map[string]string{"Idempotency-Key": "b-1"}).problem(http.StatusConflict, core.CodeIdempotencyConflict)

	h.env.DrainQueue(t)
	h.do(key, "GET", "/api/v1/batches/"+b.ID, nil, nil).status(http.StatusOK).decode(&b)
	if b.CompletedAt == nil || b.Counts.Delivered != 2 || b.Counts.Failed != 1 {
		t.Fatalf("finished batch %+v", b)
	}
	for _, f := range b.Faxes {
		var got faxes.Fax
		h.do(key, "GET", "/api/v1/faxes/"+f.ID, nil, nil).status(http.StatusOK).decode(&got)
		if got.BatchID == nil || *got.BatchID != b.ID || got.Options.Header != "Broadcast Co" || (got.To == deliverable) != (got.Options.CoverPage != nil) {
			t.Fatalf("batch fax %+v", got)
		}
	}

	var re faxes.Fax
	h.do(key, "POST", "/api/v1/faxes/"+b.Faxes[0].ID+"/resend", map[string]any{"to": "+12125550100"},
		map[string]string{"Idempotency-Key": "resend-1"}).status(http.StatusOK).decode(&re)
	if re.Options.ResendOf != b.Faxes[0].ID || re.To != "+12125550100" || re.BatchID != nil {
		t.Fatalf("resend %+v", re)
	}
	h.do(h.env.KeyBTest, "GET", "/api/v1/batches/"+b.ID, nil, nil).problem(http.StatusNotFound, core.CodeNotFound)
}
