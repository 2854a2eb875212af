package mcp_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/faxes"
)

// connectAt connects a client speaking protocol version (the SDK's newest
// when empty) that handles input requests itself.
func (e *env) connectAt(tok, version string) *mcp.ClientSession {
	e.t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "test-chat", Version: "1"}, &mcp.ClientOptions{MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true}})
	var opts *mcp.ClientSessionOptions
	if version != "" {
		opts = &mcp.ClientSessionOptions{ProtocolVersion: version}
	}
	return e.connectClient(c, tok, opts)
}

// TestSendAsksTheOwner: a chat app holding fax:draft but not fax:send
// gets the approval page as a URL elicitation (an input-required result
// for 2026-07-28 clients, the -32042 error for 2025-11-25 ones); the
// owner approves with the passkey (user verification); the retry sends
// and charges once. A decline sends nothing.
func TestSendAsksTheOwner(t *testing.T) {
	e := newEnv(t, nil)
	o := e.owner("ask@example.com")
	o.AddPasskey(t)
	if _, err := e.a.Svc.Credits.Grant(t.Context(), o.Account.ID, core.ModeTest, 10*core.MicrosPerDollar, "test"); err != nil {
		t.Fatal(err)
	}
	tok := o.Token(t, []string{"fax:read", "fax:draft"}, e.base+"/mcp")
	cs := e.connectAt(tok, "")
	var d draftOut
	mustOK(t, "create_fax_draft", call(t, cs, "create_fax_draft", map[string]any{"to": "+12125550100", "uploadToken": uploadPDF(t, cs, 2)}, &d))

	// No 403 step-up: the tool asks the owner.
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "send_fax", Arguments: map[string]any{"draftId": d.DraftID}})
	if err != nil {
		t.Fatal(err)
	}
	if !res.NeedsInput() || res.IsError || len(res.InputRequests) != 1 || res.RequestState == "" {
		t.Fatalf("send_fax = %+v", res)
	}
	el, ok := res.InputRequests[res.RequestState].(*mcp.ElicitParams)
	if !ok || el.Mode != "url" || el.ElicitationID != res.RequestState || el.URL != e.base+"/console/approvals/"+el.ElicitationID || !strings.Contains(el.Message, "passkey") {
		t.Fatalf("input request = %#v", res.InputRequests)
	}
	// A retry before the decision asks again, for the same approval.
	again, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "send_fax", Arguments: map[string]any{"draftId": d.DraftID}, RequestState: res.RequestState})
	if err != nil || !again.NeedsInput() || again.RequestState != res.RequestState {
		t.Fatalf("retry before the decision = %+v %v", again, err)
	}

	// A 2025-11-25 client gets the same approval as the -32042 error.
	old := e.connectAt(tok, "2025-11-25")
	_, err = old.CallTool(t.Context(), &mcp.CallToolParams{Name: "send_fax", Arguments: map[string]any{"draftId": d.DraftID}})
	var rpcErr *jsonrpc.Error
	if !errors.As(err, &rpcErr) || rpcErr.Code != mcp.CodeURLElicitationRequired || !strings.Contains(rpcErr.Message, el.URL) {
		t.Fatalf("2025-11-25 send_fax: %v", err)
	}
	var data struct{ Elicitations []mcp.ElicitParams }
	if err := json.Unmarshal(rpcErr.Data, &data); err != nil || len(data.Elicitations) != 1 || data.Elicitations[0].Mode != "url" ||
		data.Elicitations[0].ElicitationID != el.ElicitationID || data.Elicitations[0].URL != el.URL {
		t.Fatalf("-32042 data %s", rpcErr.Data)
	}

	// The page is the console's, for the signed-in owner only, with the
	// pages to be faxed.
	if code, _, page := e.browse(http.MethodGet, el.URL, o.Cookie(), nil); code != 200 || !strings.Contains(page, "The pages as they will be faxed") ||
		!strings.Contains(page, "Approve with passkey") {
		t.Fatalf("approval page: %d", code)
	}
	if code, _, _ := e.browse(http.MethodGet, el.URL, "", nil); code == 200 {
		t.Fatal("approval page without a session")
	}
	// Without user verification the passkey does not approve.
	if r := o.Approve(t, el.URL, false); r.Status == 200 {
		t.Fatalf("approve without UV: %d %s", r.Status, r.Body)
	}
	before := credits(t, e, o.Account.ID)
	if r := o.Approve(t, el.URL, true); r.Status != 200 {
		t.Fatalf("approve: %d %s", r.Status, r.Body)
	}
	if after := credits(t, e, o.Account.ID); after != before {
		t.Fatal("approving charged: the retry sends")
	}
	var f faxOut
	mustOK(t, "send_fax", call(t, cs, "send_fax", map[string]any{"draftId": d.DraftID, "approvalId": el.ElicitationID}, &f))
	if f.FaxID == "" || f.DraftID != d.DraftID || f.AlreadyPaid || f.PaymentMethod != "credits" {
		t.Fatalf("fax = %+v", f)
	}
	var f2 faxOut
	mustOK(t, "send_fax", call(t, old, "send_fax", map[string]any{"draftId": d.DraftID}, &f2))
	if f2.FaxID != f.FaxID || !f2.AlreadyPaid {
		t.Fatalf("second retry = %+v", f2)
	}
	if spent := before - credits(t, e, o.Account.ID); spent <= 0 || spent >= 10*core.MicrosPerDollar {
		t.Fatalf("spent %d", spent)
	}
	spent := before - credits(t, e, o.Account.ID)

	// Declined: a clear tool error, nothing charged.
	var d2 draftOut
	mustOK(t, "create_fax_draft", call(t, cs, "create_fax_draft", map[string]any{"to": "+12125550100", "uploadToken": uploadPDF(t, cs, 1)}, &d2))
	res, err = cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "send_fax", Arguments: map[string]any{"draftId": d2.DraftID}})
	if err != nil || !res.NeedsInput() {
		t.Fatalf("send_fax = %+v %v", res, err)
	}
	form := map[string][]string{"csrf": {o.CSRF(t)}, "decision": {"decline"}}
	apr, err := e.a.Svc.Approvals.Get(t.Context(), o.Account.ID, res.RequestState)
	if err != nil {
		t.Fatal(err)
	}
	form["binding"] = []string{apr.BindingHash}
	if code, _, _ := e.browse(http.MethodPost, "/console/approvals/"+apr.ID, o.Cookie(), form); code != http.StatusSeeOther && code != 200 {
		t.Fatalf("decline: %d", code)
	}
	wantErr(t, "send_fax declined", call(t, cs, "send_fax", map[string]any{"draftId": d2.DraftID}, nil), faxes.CodeApprovalDeclined+": ")
	if now := before - credits(t, e, o.Account.ID); now != spent {
		t.Fatalf("declined fax charged %d", now-spent)
	}
}

func credits(t *testing.T, e *env, ownerID string) int64 {
	t.Helper()
	c, err := e.a.Svc.Credits.Get(t.Context(), core.OwnerPrincipal(ownerID, core.ModeTest), "", 1)
	if err != nil {
		t.Fatal(err)
	}
	return c.AvailableMicros
}
