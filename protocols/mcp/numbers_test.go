package mcp_test

import (
	"encoding/base64"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/inbox"
	"github.com/faxhub/faxhub/internal/require"
	"github.com/faxhub/faxhub/internal/testenv"
)

type numberOut struct {
	ID, Number, Status, Mode, CheckoutURL, MonthlyPrice, ReservedUntil, PaidThrough string
}

type inboxItem struct {
	ID, NumberID, From, To, Status, TextStatus, TextPreview string
	Pages                                                   int
}

type inboxFax struct {
	inboxItem
	Text, TextNote, TextMethod, DownloadURL, DownloadExpiresAt string
}

// ownerPrincipal is the owner's test-mode principal (an API key), for what
// the owner does outside MCP: paying at the checkout, a fax arriving.
func ownerPrincipal(t *testing.T, e *env, ownerID string) core.Principal {
	t.Helper()
	key, _, err := e.a.Svc.Accounts.CreateAPIKey(t.Context(), ownerID, core.ModeTest, "owner")
	if err != nil {
		t.Fatal(err)
	}
	p, err := e.a.Svc.Accounts.AuthenticateAPIKey(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// The number and inbox tools end to end: search, buy (awaiting payment with
// the checkout page, no credits spent), the owner pays, the provider
// provisions it, a fax arrives and is read as text with a download link;
// another owner sees none of it.
func TestNumbersAndInbox(t *testing.T) {
	if _, err := exec.LookPath("pdftotext"); err != nil {
		require.Missing(t, "pdftotext", "apt-get install poppler-utils")
	}
	e := newEnv(t, nil)
	ctx := t.Context()
	o := e.owner("numbers@example.com")
	cs := e.connect(o.Token(t, allScopes, e.base+"/mcp"))
	p := ownerPrincipal(t, e, o.Account.ID)

	var found struct {
		Numbers []struct{ Number, Country, MonthlyPrice, Currency string }
	}
	mustOK(t, "search_numbers", call(t, cs, "search_numbers", map[string]any{"areaCode": "415", "limit": 3}, &found))
	if len(found.Numbers) != 3 || !strings.HasPrefix(found.Numbers[0].Number, "+1415") || found.Numbers[0].MonthlyPrice == "" || found.Numbers[0].Country != "US" {
		t.Fatalf("search_numbers = %+v", found)
	}
	for _, bad := range []map[string]any{{"country": "USA"}, {"areaCode": "4a5"}, {"limit": 500}} {
		wantErr(t, "search_numbers", call(t, cs, "search_numbers", bad, nil), "invalid_request")
	}

	var n numberOut
	mustOK(t, "buy_number", call(t, cs, "buy_number", map[string]any{"number": found.Numbers[0].Number}, &n))
	if n.Status != "awaiting_payment" || n.Number != found.Numbers[0].Number || n.Mode != "test" || n.ReservedUntil == "" ||
		n.CheckoutURL != e.base+"/console/numbers/"+n.ID+"?mode=test" {
		t.Fatalf("buy_number = %+v", n)
	}
	wantErr(t, "buy_number", call(t, cs, "buy_number", map[string]any{"number": found.Numbers[0].Number}, nil), "number_unavailable")
	wantErr(t, "buy_number", call(t, cs, "buy_number", map[string]any{"number": ""}, nil), "invalid_request")
	wantErr(t, "buy_number", call(t, cs, "buy_number", map[string]any{"number": "12"}, nil), "destination")
	var cr struct{ Balance string }
	mustOK(t, "get_credits", call(t, cs, "get_credits", map[string]any{}, &cr))
	if cr.Balance != "0.00" {
		t.Fatalf("buying spent credits: %+v", cr)
	}

	// The owner pays the first month; the provider provisions it.
	co, err := e.a.Svc.Checkout.StartNumber(ctx, p, n.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.a.Svc.Checkout.Complete(ctx, co.ID); err != nil {
		t.Fatal(err)
	}
	var list struct{ Numbers []numberOut }
	mustOK(t, "list_numbers", call(t, cs, "list_numbers", map[string]any{}, &list))
	if len(list.Numbers) != 1 || list.Numbers[0].Status != "pending" || list.Numbers[0].CheckoutURL != "" {
		t.Fatalf("list_numbers after paying = %+v", list)
	}
	if err := e.a.Svc.Numbers.PlaceOrder(ctx, n.ID); err != nil { // the order_number job (the queue is insert-only here)
		t.Fatal(err)
	}
	mustOK(t, "list_numbers", call(t, cs, "list_numbers", map[string]any{}, &list))
	if len(list.Numbers) != 1 || list.Numbers[0].Status != "active" || list.Numbers[0].PaidThrough == "" {
		t.Fatalf("list_numbers after provisioning = %+v", list)
	}

	// A fax arrives on it.
	path := filepath.Join(t.TempDir(), "in.pdf")
	if err := os.WriteFile(path, testenv.MinimalPDF(2), 0o600); err != nil {
		t.Fatal(err)
	}
	in, err := e.a.Svc.Inbox.Simulate(ctx, p, inbox.TestInboundFax{To: n.Number, From: "+13125550100", Path: path})
	if err != nil {
		t.Fatal(err)
	}
	var listed struct {
		Faxes   []inboxItem
		HasMore bool
	}
	mustOK(t, "list_inbox", call(t, cs, "list_inbox", map[string]any{}, &listed))
	if len(listed.Faxes) != 1 || listed.Faxes[0].Status != "receiving" {
		t.Fatalf("list_inbox while receiving = %+v", listed)
	}
	var f inboxFax
	mustOK(t, "read_inbox_fax", call(t, cs, "read_inbox_fax", map[string]any{"id": in.ID}, &f))
	if f.Status != "receiving" || f.DownloadURL != "" || f.TextNote == "" {
		t.Fatalf("read_inbox_fax while receiving = %+v", f)
	}
	if err := e.a.Svc.Inbox.Process(ctx, in.ID, false); err != nil { // the process_inbound job
		t.Fatal(err)
	}
	mustOK(t, "list_inbox", call(t, cs, "list_inbox", map[string]any{"numberId": n.ID, "limit": 5}, &listed))
	if len(listed.Faxes) != 1 || listed.Faxes[0].ID != in.ID || listed.Faxes[0].Status != "received" || listed.Faxes[0].Pages != 2 ||
		listed.Faxes[0].From != "+13125550100" || listed.Faxes[0].To != n.Number || listed.HasMore ||
		!strings.Contains(listed.Faxes[0].TextPreview, "faxhub test page 1") {
		t.Fatalf("list_inbox = %+v", listed)
	}
	mustOK(t, "list_inbox", call(t, cs, "list_inbox", map[string]any{"numberId": "num_other"}, &listed))
	if len(listed.Faxes) != 0 {
		t.Fatalf("list_inbox of another number = %+v", listed)
	}
	wantErr(t, "list_inbox", call(t, cs, "list_inbox", map[string]any{"limit": 1000}, nil), "invalid_request")

	mustOK(t, "read_inbox_fax", call(t, cs, "read_inbox_fax", map[string]any{"id": in.ID}, &f))
	if f.ID != in.ID || f.Status != "received" || f.Pages != 2 || f.TextStatus == "" ||
		!strings.HasPrefix(f.DownloadURL, e.a.Svc.Config().APIURL+core.LinkInboxFile.PathPrefix()) || f.DownloadExpiresAt == "" {
		t.Fatalf("read_inbox_fax = %+v", f)
	}
	if f.TextStatus != string(inbox.TextExtracted) || f.TextMethod != "text" ||
		!strings.Contains(f.Text, "faxhub test page 1") || !strings.Contains(f.Text, "faxhub test page 2") {
		t.Fatalf("read_inbox_fax text: %+v", f)
	}
	wantErr(t, "read_inbox_fax", call(t, cs, "read_inbox_fax", map[string]any{"id": "inb_nope"}, nil), "not_found")
	wantErr(t, "read_inbox_fax", call(t, cs, "read_inbox_fax", map[string]any{"id": ""}, nil), "invalid_request")

	// Sends can go from the number.
	var up uploadOut
	mustOK(t, "create_upload", call(t, cs, "create_upload", map[string]any{"contentBase64": base64.StdEncoding.EncodeToString(testenv.MinimalPDF(1))}, &up))
	var withFrom struct {
		DraftID, From string
	}
	mustOK(t, "create_fax_draft", call(t, cs, "create_fax_draft", map[string]any{"to": "+12125550100", "uploadToken": up.UploadToken, "from": n.Number}, &withFrom))
	if withFrom.From != n.Number {
		t.Fatalf("create_fax_draft from = %+v", withFrom)
	}
	wantErr(t, "create_fax_draft", call(t, cs, "create_fax_draft", map[string]any{"to": "+12125550100", "uploadToken": up.UploadToken, "from": "+14155550999"}, nil), "from_number_not_owned")

	// Another owner: nothing of it.
	o2 := e.owner("numbers-other@example.com")
	cs2 := e.connect(o2.Token(t, allScopes, e.base+"/mcp"))
	wantErr(t, "read_inbox_fax", call(t, cs2, "read_inbox_fax", map[string]any{"id": in.ID}, nil), "not_found")
	mustOK(t, "list_inbox", call(t, cs2, "list_inbox", map[string]any{}, &listed))
	mustOK(t, "list_numbers", call(t, cs2, "list_numbers", map[string]any{"all": true}, &list))
	if len(listed.Faxes) != 0 || len(list.Numbers) != 0 {
		t.Fatalf("another owner sees %+v %+v", listed, list)
	}
	wantErr(t, "buy_number", call(t, cs2, "buy_number", map[string]any{"number": n.Number}, nil), "number_unavailable")
}

// Each tool needs its scope from core's table: refused at the HTTP level
// (403 insufficient_scope naming it) and by the tool itself.
func TestNumberAndInboxScopes(t *testing.T) {
	e := newEnv(t, nil)
	o := e.owner("numscopes@example.com")
	for _, c := range []struct {
		tool, scope string
		args        string
	}{
		{"search_numbers", "fax:read", `{}`},
		{"list_numbers", "fax:read", `{}`},
		{"buy_number", "fax:draft", `{"number":"+14155550100"}`},
		{"list_inbox", "inbox:read", `{}`},
		{"read_inbox_fax", "inbox:read", `{"id":"inb_x"}`},
	} {
		var others []string
		for _, s := range allScopes {
			if s != c.scope {
				others = append(others, s)
			}
		}
		tok := o.Token(t, others, e.base+"/mcp")
		resp, body := rawPost(t, e.base+"/mcp", "Bearer "+tok,
			`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"`+c.tool+`","arguments":`+c.args+`}}`)
		if resp.StatusCode != http.StatusForbidden || !strings.Contains(resp.Header.Get("WWW-Authenticate"), `scope="`+c.scope+`", error="insufficient_scope"`) {
			t.Errorf("%s without %s: %d %q %s", c.tool, c.scope, resp.StatusCode, resp.Header.Get("WWW-Authenticate"), body)
		}
		tools, err := e.connect(tok).ListTools(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, tl := range tools.Tools {
			if tl.Name == c.tool && !strings.Contains(tl.Description, "Requires the "+c.scope+" scope.") {
				t.Errorf("%s's description does not name %s: %q", c.tool, c.scope, tl.Description)
			}
		}
	}
}
