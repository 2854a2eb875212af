package hostagent_test

import (
	"bytes"
	"encoding/base64"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/approvals"
	"github.com/faxhub/faxhub/core/documents"
	"github.com/faxhub/faxhub/core/hosts"
	"github.com/faxhub/faxhub/hostagent"
	"github.com/faxhub/faxhub/internal/testenv"
)

// sendEnv is an owner with test credits and a passkey, and an agent
// granted send_fax and what it needs around it.
func sendEnv(t *testing.T) (*env, *owner, *agent) {
	e := newEnv(t)
	w := e.owner("send@example.com")
	if _, err := e.a.Svc.Credits.Grant(t.Context(), w.Account.ID, core.ModeTest, 10*core.MicrosPerDollar, "test fixture"); err != nil {
		t.Fatal(err)
	}
	w.AddPasskey(t)
	h := w.createHost()
	return e, w, w.activeAgent(h, "validate_fax", "create_upload", "send_fax", "get_fax_status", "get_credits")
}

func (a *agent) balanceCents(t *testing.T) float64 {
	t.Helper()
	r := a.execute("get_credits", nil)
	d, _ := r.body["data"].(map[string]any)
	c, ok := d["balance_cents"].(float64)
	if !ok {
		t.Fatalf("get_credits: %s", r.raw)
	}
	return c
}

func (a *agent) sendStatus(t *testing.T, statusURL string) reply {
	t.Helper()
	return call(t, nil, http.MethodGet, statusURL, nil, bearer(a.jwt(nil)))
}

func inlinePDF() string { return base64.StdEncoding.EncodeToString(testenv.MinimalPDF(2)) }

// send_fax: 202 pending; refused without UV; approved with UV through the
// console's passkey endpoints → the fax exists and was paid once; the
// approval cannot be replayed.
func TestSendFaxApprovedWithUV(t *testing.T) {
	e, w, ag := sendEnv(t)
	before := ag.balanceCents(t)
	r := ag.execute("send_fax", map[string]any{"to": "+14155550123", "content_base64": inlinePDF(), "cover": true, "cover_text": "Hello"})
	if r.status != http.StatusAccepted || r.str("status") != "pending" || r.str("status_url") == "" || r.header.Get("Location") != r.str("status_url") {
		t.Fatalf("send_fax: %d %s", r.status, r.raw)
	}
	if _, ok := r.body["data"]; ok {
		t.Fatal("a pending answer carries data")
	}
	if !strings.HasPrefix(r.str("status_url"), e.api+hostagent.PathCapabilityStat) || !strings.HasPrefix(r.str("approval_url"), e.base+"/console/approvals/") {
		t.Fatalf("urls: %s", r.raw)
	}
	statusURL, approvalID := r.str("status_url"), r.str("approval_id")
	if st := ag.sendStatus(t, statusURL); st.status != 200 || st.str("status") != "pending" {
		t.Fatalf("status: %d %s", st.status, st.raw)
	}
	if ag.balanceCents(t) != before {
		t.Fatal("charged before approval")
	}

	// Without user verification: refused, nothing sent.
	if res := w.Approve(t, approvalID, false); res.Status == 200 {
		t.Fatalf("approved without UV: %s", res.Body)
	}
	if st := ag.sendStatus(t, statusURL); st.str("status") != "pending" {
		t.Fatalf("after a refused approval: %s", st.raw)
	}

	// With UV: sent and paid once.
	if res := w.Approve(t, approvalID, true); res.Status != 200 {
		t.Fatalf("approve with UV: %d %s", res.Status, res.Body)
	}
	st := ag.sendStatus(t, statusURL)
	data, _ := st.body["data"].(map[string]any)
	if st.str("status") != "sent" || data == nil || !strings.HasPrefix(data["fax_id"].(string), core.PrefixFax) {
		t.Fatalf("sent status: %s", st.raw)
	}
	after := ag.balanceCents(t)
	if after >= before {
		t.Fatalf("not paid: %v → %v", before, after)
	}
	fx := ag.execute("get_fax_status", map[string]any{"fax_id": data["fax_id"]})
	if fx.status != 200 {
		t.Fatalf("get_fax_status: %d %s", fx.status, fx.raw)
	}

	// A replayed approval is refused and charges nothing more.
	if res := w.Approve(t, approvalID, true); res.Status == 200 {
		t.Fatalf("replayed approval accepted: %s", res.Body)
	}
	if ag.balanceCents(t) != after {
		t.Fatal("charged twice")
	}
	// Another agent cannot read this send.
	other := w.activeAgent(ag.h, "send_fax")
	if r := call(t, nil, http.MethodGet, statusURL, nil, bearer(other.jwt(nil))); r.status != http.StatusNotFound {
		t.Fatalf("other agent reads the send: %d %s", r.status, r.raw)
	}
}

func TestSendFaxDeclinedExpiredChanged(t *testing.T) {
	e, w, ag := sendEnv(t)
	before := ag.balanceCents(t)

	// Upload through create_upload + PUT; send by document_id.
	up := ag.execute("create_upload", nil)
	d, _ := up.body["data"].(map[string]any)
	req, _ := http.NewRequest(http.MethodPut, d["upload_url"].(string), bytes.NewReader(testenv.MinimalPDF(1)))
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var put struct {
		Document struct {
			ID string `json:"id"`
		} `json:"document"`
	}
	_ = jsonDecode(res, &put)
	doc := put.Document
	if res.StatusCode/100 != 2 || doc.ID == "" {
		t.Fatalf("PUT: %d", res.StatusCode)
	}
	// A quote of the uploaded document has no side effects.
	q := ag.execute("validate_fax", map[string]any{"to": "+14155550123", "document_id": doc.ID})
	if q.status != 200 || q.body["data"].(map[string]any)["pages"] != float64(1) {
		t.Fatalf("validate_fax document: %d %s", q.status, q.raw)
	}

	// Declined: nothing sent.
	r := ag.execute("send_fax", map[string]any{"to": "+14155550123", "document_id": doc.ID})
	if r.status != http.StatusAccepted {
		t.Fatalf("send: %d %s", r.status, r.raw)
	}
	apr, err := e.a.Svc.Approvals.Get(t.Context(), w.Account.ID, r.str("approval_id"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.a.Svc.Approvals.Decide(t.Context(), w.Account.ID, apr.ID, approvals.Decision{Approve: false, BindingHash: apr.BindingHash}); err != nil {
		t.Fatalf("decline: %v", err)
	}
	if st := ag.sendStatus(t, r.str("status_url")); st.str("status") != "declined" || st.body["data"] != nil {
		t.Fatalf("declined: %s", st.raw)
	}

	// Changed document: refused at approval, nothing sent.
	r = ag.execute("send_fax", map[string]any{"to": "+14155550123", "document_id": doc.ID})
	if _, err := e.a.DB.SQL().ExecContext(t.Context(), "UPDATE documents SET sha256 = 'changed' WHERE id = '"+doc.ID+"'"); err != nil {
		t.Fatal(err)
	}
	if res := w.Approve(t, r.str("approval_id"), true); res.Status == 200 {
		t.Fatalf("approved a changed document: %s", res.Body)
	}
	if st := ag.sendStatus(t, r.str("status_url")); st.str("status") == "sent" {
		t.Fatalf("changed document sent: %s", st.raw)
	}

	// Expired: the owner did not decide in time.
	r = ag.execute("send_fax", map[string]any{"to": "+14155550123", "content_base64": inlinePDF()})
	e.clock.Advance(hosts.SendTTL + 1)
	if st := ag.sendStatus(t, r.str("status_url")); st.str("status") != "expired" {
		t.Fatalf("expired: %s", st.raw)
	}
	if res := w.Approve(t, r.str("approval_id"), true); res.Status == 200 {
		t.Fatalf("approved an expired send: %s", res.Body)
	}
	if ag.balanceCents(t) != before {
		t.Fatal("something was charged")
	}

	// Argument errors.
	wantError(t, "two documents", ag.execute("send_fax", map[string]any{"to": "+14155550123", "document_id": doc.ID, "content_base64": inlinePDF()}), 400, "invalid_request")
	wantError(t, "no document", ag.execute("send_fax", map[string]any{"to": "+14155550123"}), 400, "invalid_request")
	wantError(t, "bad base64", ag.execute("send_fax", map[string]any{"to": "+14155550123", "content_base64": "!!!"}), 400, "invalid_request")
	big := base64.StdEncoding.EncodeToString(make([]byte, hosts.MaxInlineDocumentBytes+1))
	wantError(t, "inline too large", ag.execute("send_fax", map[string]any{"to": "+14155550123", "content_base64": big}), 413, documents.CodeFileTooLarge)
}

// content_base64 is an upload: without create_upload it is refused.
func TestSendFaxInlineNeedsUpload(t *testing.T) {
	e := newEnv(t)
	w := e.owner("inline@example.com")
	ag := w.activeAgent(w.createHost(), "send_fax")
	wantError(t, "inline without create_upload", ag.execute("send_fax", map[string]any{"to": "+14155550123", "content_base64": inlinePDF()}), 403, hosts.CodeCapabilityNotGranted)
}

// A send approval lives 15 minutes (hosts.SendTTL), driven by the injected
// clock: approved through the console a nanosecond before it ends, it
// sends; at the instant it ends it reads expired and approving it is
// refused, with nothing charged.
func TestSendApprovalExpiry(t *testing.T) {
	e, w, ag := sendEnv(t)
	inTime := ag.execute("send_fax", map[string]any{"to": "+14155550123", "content_base64": inlinePDF()})
	late := ag.execute("send_fax", map[string]any{"to": "+14155550123", "content_base64": inlinePDF()})
	if inTime.status != http.StatusAccepted || late.status != http.StatusAccepted {
		t.Fatalf("send_fax: %d %s; %d %s", inTime.status, inTime.raw, late.status, late.raw)
	}
	e.clock.Advance(hosts.SendTTL - time.Nanosecond)
	if st := ag.sendStatus(t, late.str("status_url")); st.str("status") != "pending" {
		t.Fatalf("a nanosecond before its expiry: %s", st.raw)
	}
	if res := w.Approve(t, inTime.str("approval_id"), true); res.Status != 200 {
		t.Fatalf("approve a nanosecond before the expiry: %d %s", res.Status, res.Body)
	}
	if st := ag.sendStatus(t, inTime.str("status_url")); st.str("status") != "sent" {
		t.Fatalf("approved in time: %s", st.raw)
	}
	before := ag.balanceCents(t)

	e.clock.Advance(time.Nanosecond)
	if st := ag.sendStatus(t, late.str("status_url")); st.str("status") != "expired" {
		t.Fatalf("at its expiry: %s", st.raw)
	}
	if res := w.Approve(t, late.str("approval_id"), true); res.Status == 200 {
		t.Fatalf("approved at its expiry: %s", res.Body)
	}
	if st := ag.sendStatus(t, late.str("status_url")); st.str("status") != "expired" {
		t.Fatalf("after a refused late approval: %s", st.raw)
	}
	if ag.balanceCents(t) != before {
		t.Fatal("the expired send was charged")
	}
}
