package a2a_test

import (
	"bytes"
	"net/http"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/faxes"
	"github.com/faxhub/faxhub/internal/testenv"
)

// The immediate skills through a2a-go's own client: each one's success and
// its errors.
func TestImmediateSkills(t *testing.T) {
	e := newEnv(t)
	w := e.owner("skills@example.com")
	c := e.client(w.Token(t, allScopes, e.base+"/a2a"))

	q := call(t, c, skillMsg("validate_fax", map[string]any{"to": "+12125550100", "pages": 3, "cover": true}))
	if q["to"] != "+12125550100" || q["pages"] != float64(3) || q["billedPages"] != float64(4) || q["amount"] == "" || !strings.EqualFold(q["currency"].(string), "usd") {
		t.Fatalf("validate_fax = %v", q)
	}
	if q := call(t, c, skillMsg("validate_fax", map[string]any{"to": "+12125550100"})); q["pages"] != float64(1) {
		t.Fatalf("validate_fax default pages = %v", q)
	}
	_, err := c.SendMessage(t.Context(), skillMsg("validate_fax", map[string]any{"to": "12"}))
	if d := a2aErr(t, "validate_fax bad number", err, a2a.ErrInvalidParams, "destination"); d["code"] != core.CodeInvalidDestination {
		t.Fatalf("details %v", d)
	}
	_, err = c.SendMessage(t.Context(), skillMsg("validate_fax", map[string]any{"to": "+12125550100", "pages": 0}))
	a2aErr(t, "validate_fax 0 pages", err, a2a.ErrInvalidParams, "pages")

	up := call(t, c, skillMsg("create_upload", map[string]any{"contentType": "application/pdf", "fileName": "letter.pdf"}))
	tok, _ := up["uploadToken"].(string)
	if tok == "" || up["method"] != "PUT" || up["uploadPageUrl"] != e.base+"/upload#"+tok || up["maxBytes"].(float64) <= 0 || up["expiresAt"] == "" {
		t.Fatalf("create_upload = %v", up)
	}
	_, err = c.SendMessage(t.Context(), skillMsg("create_upload", map[string]any{"contentType": "application/x-nope"}))
	a2aErr(t, "create_upload bad type", err, a2a.ErrUnsupportedContentType, "unsupported_file_type")
	// fileName is only shown, never a path, but bounded like every input
	// (issue 26: 5,000 characters were taken): 255 bytes, else -32602
	// naming the field.
	if up := call(t, c, skillMsg("create_upload", map[string]any{"fileName": "../../etc/" + strings.Repeat("é", 122) + "x"})); up["uploadToken"] == "" {
		t.Fatalf("create_upload with a 255-byte fileName = %v", up)
	}
	_, err = c.SendMessage(t.Context(), skillMsg("create_upload", map[string]any{"fileName": "../../etc/passwd" + strings.Repeat("a", 4984)}))
	if d := a2aErr(t, "create_upload long fileName", err, a2a.ErrInvalidParams, "fileName"); d["field"] != "fileName" || d["limit"] != float64(255) {
		t.Fatalf("details %v", d)
	}

	cr := call(t, c, skillMsg("get_credits", nil))
	if cr["balance"] != "0.00" || cr["held"] != "0.00" || !strings.EqualFold(cr["currency"].(string), "usd") || len(cr["packs"].([]any)) != len(e.a.Svc.Credits.Packs()) {
		t.Fatalf("get_credits = %v", cr)
	}

	lf := call(t, c, skillMsg("list_faxes", map[string]any{"limit": 5}))
	if fx, ok := lf["faxes"].([]any); !ok || len(fx) != 0 || lf["hasMore"] != false {
		t.Fatalf("list_faxes = %v", lf)
	}
	_, err = c.SendMessage(t.Context(), skillMsg("list_faxes", map[string]any{"status": "weird"}))
	a2aErr(t, "list_faxes bad status", err, a2a.ErrInvalidParams, "invalid_request")

	_, err = c.SendMessage(t.Context(), skillMsg("get_fax", map[string]any{"faxId": "fax_nope"}))
	if d := a2aErr(t, "get_fax unknown", err, a2a.ErrInvalidParams, "not_found"); d["code"] != core.CodeNotFound {
		t.Fatalf("details %v", d)
	}

	pack := e.a.Svc.Credits.Packs()[0]
	co := call(t, c, skillMsg("create_credit_checkout", map[string]any{"packId": pack.ID}))
	if !strings.Contains(co["checkoutUrl"].(string), "/checkout/test/") || co["packId"] != pack.ID || co["amount"] != pack.Price || co["credit"] != pack.Credit {
		t.Fatalf("create_credit_checkout = %v", co)
	}
	_, err = c.SendMessage(t.Context(), skillMsg("create_credit_checkout", map[string]any{"packId": "pack_nope"}))
	if d := a2aErr(t, "unknown pack", err, a2a.ErrInvalidParams, "unknown_credit_pack"); d["packs"] == nil {
		t.Fatalf("details %v", d)
	}

	// A fax in the store shows up in get_fax and list_faxes.
	key, _, err := e.a.Svc.Accounts.CreateAPIKey(t.Context(), w.Account.ID, core.ModeTest, "k")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.a.Svc.Credits.Grant(t.Context(), w.Account.ID, core.ModeTest, 10*core.MicrosPerDollar, "test"); err != nil {
		t.Fatal(err)
	}
	p, err := e.a.Svc.Accounts.AuthenticateAPIKey(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	f := sendFaxWithCredits(t, e, p)
	got := call(t, c, skillMsg("get_fax", map[string]any{"faxId": f.ID}))
	if got["faxId"] != f.ID || got["status"] != "queued" || got["to"] != "+12125550100" || got["price"] == "" {
		t.Fatalf("get_fax = %v", got)
	}
	if lf := call(t, c, skillMsg("list_faxes", nil)); len(lf["faxes"].([]any)) != 1 {
		t.Fatalf("list_faxes = %v", lf)
	}
}

// sendFaxWithCredits queues a 1-page fax to +12125550100 the REST way.
func sendFaxWithCredits(t *testing.T, e *env, p core.Principal) *faxes.Fax {
	t.Helper()
	ctx := t.Context()
	up, err := e.a.Svc.Documents.CreateUpload(ctx, p, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.a.Svc.Documents.ReceiveUpload(ctx, up.UploadToken, bytes.NewReader(testenv.MinimalPDF(1))); err != nil {
		t.Fatal(err)
	}
	d, err := e.a.Svc.Faxes.CreateDraft(ctx, p, faxes.CreateDraftRequest{To: "+12125550100", UploadToken: up.UploadToken})
	if err != nil {
		t.Fatal(err)
	}
	f, _, err := e.a.Svc.Faxes.SendDraft(ctx, p, d.ID)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// Messages that are not one well-formed skill call are refused with
// InvalidParams saying what is expected and naming the skills or the
// failing field.
func TestRefusedMessages(t *testing.T) {
	e := newEnv(t)
	w := e.owner("refused@example.com")
	c := e.client(w.Token(t, allScopes, e.base+"/a2a"))
	data := func(v map[string]any) *a2a.SendMessageRequest {
		return &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewDataPart(v))}
	}
	fax := map[string]any{"skill": "create_fax", "arguments": map[string]any{"to": "+12125550100", "uploadToken": "x"}}
	for _, c2 := range []struct {
		name  string
		req   *a2a.SendMessageRequest
		want  string
		field string // the details' field, or "" for the skills list
	}{
		{"free text", &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("fax my letter to +12125550100"))}, "text, not data", ""},
		{"a file", &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewRawPart([]byte("%PDF-1.4")))}, "a file, not data", ""},
		{"a file URL", &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewFileURLPart("https://x.example/a.pdf", "application/pdf"))}, "a file, not data", ""},
		{"two parts", &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewDataPart(fax), a2a.NewTextPart("please"))}, "2 parts", ""},
		{"no skill", data(map[string]any{"arguments": map[string]any{}}), `no "skill"`, ""},
		{"an unknown skill", data(map[string]any{"skill": "send_fax", "arguments": map[string]any{}}), `unknown skill "send_fax"`, "skill"},
		{"an extra member", data(map[string]any{"skill": "get_credits", "arguments": map[string]any{}, "note": "hi"}), "note", "note"},
		{"an unknown argument", data(map[string]any{"skill": "create_fax", "arguments": map[string]any{"to": "+12125550100", "uploadToken": "x", "priority": "high"}}), `no argument "priority"`, "priority"},
		{"a differently-cased argument", data(map[string]any{"skill": "create_fax", "arguments": map[string]any{"To": "+12125550100", "uploadToken": "x"}}), `no argument "To"`, "To"},
		{"a missing argument", data(map[string]any{"skill": "create_fax", "arguments": map[string]any{"to": "+12125550100"}}), `"uploadToken"`, "uploadToken"},
		{"a wrong type", data(map[string]any{"skill": "validate_fax", "arguments": map[string]any{"to": "+12125550100", "pages": "three"}}), `"pages" of validate_fax must be a integer`, "pages"},
		{"arguments not an object", data(map[string]any{"skill": "get_credits", "arguments": []any{1}}), "JSON object", "arguments"},
		{"a task id on an immediate skill", func() *a2a.SendMessageRequest {
			r := data(map[string]any{"skill": "get_credits", "arguments": map[string]any{}})
			r.Message.TaskID = "tsk_x"
			return r
		}(), "does not continue a task", "taskId"},
	} {
		_, err := c.SendMessage(t.Context(), c2.req)
		d := a2aErr(t, c2.name, err, a2a.ErrInvalidParams, c2.want)
		if c2.field == "" {
			if sk, ok := d["skills"].([]any); !ok || len(sk) != 19 {
				t.Errorf("%s: details do not list the skills: %v", c2.name, d)
			}
		} else if d["field"] != c2.field {
			t.Errorf("%s: details name %v, want %s", c2.name, d["field"], c2.field)
		}
	}
	if n := countTasks(t, e); n != 0 {
		t.Fatalf("%d tasks were created by refused messages", n)
	}

	// The same refusals over 0.3, raw.
	auth := "Bearer " + w.Token(t, allScopes, e.base+"/a2a")
	_, _, body := e.rpc(auth, nil, `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","messageId":"m","role":"user","parts":[{"kind":"text","text":"send a fax"}]}}}`)
	if code, msg, _ := rpcError(t, body); code != -32602 || !strings.Contains(msg, `{"skill": <skill id>`) {
		t.Fatalf("0.3 text: %v", body)
	}
}

// A scope the token lacks is refused by core's Authorize, naming the scope.
func TestScopeRefused(t *testing.T) {
	e := newEnv(t)
	w := e.owner("scope@example.com")
	c := e.client(w.Token(t, []string{"fax:read"}, e.base+"/a2a"))
	for skill, scope := range map[string]string{"validate_fax": "fax:draft", "create_upload": "fax:draft", "get_credits": "credits:read", "create_credit_checkout": "credits:checkout"} {
		args := map[string]any{}
		switch skill {
		case "validate_fax":
			args["to"] = "+12125550100"
		case "create_credit_checkout":
			args["packId"] = e.a.Svc.Credits.Packs()[0].ID
		}
		_, err := c.SendMessage(t.Context(), skillMsg(skill, args))
		d := a2aErr(t, skill, err, a2a.ErrUnauthorized, scope)
		if d["code"] != core.CodeInsufficientScope || d["required_scope"] != scope {
			t.Errorf("%s: details %v", skill, d)
		}
	}
	// The raw code is -31403.
	_, _, body := e.rpc("Bearer "+w.Token(t, []string{"fax:read"}, e.base+"/a2a"), http.Header{"A2A-Version": {"1.0"}},
		`{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"data":{"skill":"get_credits","arguments":{}}}]}}}`)
	if code, msg, _ := rpcError(t, body); code != -31403 || !strings.Contains(msg, "credits:read") {
		t.Fatalf("raw scope error %v", body)
	}
}

// countTasks counts every stored agent task.
func countTasks(t *testing.T, e *env) int {
	t.Helper()
	var n int
	if err := e.a.DB.SQL().QueryRowContext(t.Context(), `SELECT count(*) FROM agent_tasks`).Scan(&n); err != nil {
		t.Fatalf("count tasks: %v", err)
	}
	return n
}
