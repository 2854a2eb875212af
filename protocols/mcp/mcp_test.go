package mcp_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/internal/app"
	"github.com/faxhub/faxhub/internal/consoletest"
	"github.com/faxhub/faxhub/internal/testenv"
	mcpserver "github.com/faxhub/faxhub/protocols/mcp"
)

type env struct {
	t    *testing.T
	a    *app.App
	site *consoletest.Site
	base string
	// noRedirect shows redirects instead of following them.
	noRedirect *http.Client
}

func newEnv(t *testing.T, mod func(*app.Options)) *env {
	t.Helper()
	site := consoletest.Start(t, func(base, _ string) app.Options {
		o := app.Options{BaseURL: base, DataDir: t.TempDir(), Database: consoletest.Database(t), Dev: true, MCPOAuth: true, SimTimeScale: 0, InsertOnly: true,
			Logger: slog.New(slog.DiscardHandler)}
		if mod != nil {
			mod(&o)
		}
		return o
	})
	return &env{t: t, a: site.App, site: site, base: site.Base,
		noRedirect: &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// owner is an account with a console session; its OAuth client is a chat
// app.
func (e *env) owner(email string) *consoletest.Owner {
	e.t.Helper()
	w := e.site.Owner(e.t, email)
	w.ClientName = "Test Chat"
	return w
}

func (e *env) browse(method, target, cookie string, form url.Values) (int, *url.URL, string) {
	e.t.Helper()
	if strings.HasPrefix(target, "/") {
		target = e.base + target
	}
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, _ := http.NewRequest(method, target, body)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", e.base)
	}
	if cookie != "" {
		req.Header.Set("Cookie", cookie)
	}
	resp, err := e.noRedirect.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	loc, _ := resp.Location()
	return resp.StatusCode, loc, string(b)
}

type bearer struct{ tok string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if b.tok != "" {
		r.Header.Set("Authorization", "Bearer "+b.tok)
	}
	return http.DefaultTransport.RoundTrip(r)
}

func (e *env) connect(tok string) *mcp.ClientSession {
	e.t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "test-chat", Version: "1"}, nil)
	check := &outputCheck{t: e.t}
	c.AddSendingMiddleware(check.middleware)
	cs := e.connectClient(c, tok, nil)
	check.load(cs)
	return cs
}

// connectClient connects c to /mcp with the bearer token tok.
func (e *env) connectClient(c *mcp.Client, tok string, opts *mcp.ClientSessionOptions) *mcp.ClientSession {
	e.t.Helper()
	cs, err := c.Connect(e.t.Context(), &mcp.StreamableClientTransport{
		Endpoint: e.base + "/mcp", HTTPClient: &http.Client{Transport: bearer{tok}}, DisableStandaloneSSE: true, MaxRetries: -1,
	}, opts)
	if err != nil {
		e.t.Fatalf("connect: %v", err)
	}
	e.t.Cleanup(func() { cs.Close() })
	return cs
}

// call runs a tool and decodes its structured content into out; it
// returns the error text of a tool error ("" on success).
func call(t *testing.T, cs *mcp.ClientSession, name string, args any, out any) string {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if res.IsError {
		var b strings.Builder
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				b.WriteString(tc.Text)
			}
		}
		return b.String()
	}
	if out != nil {
		raw, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("%s: decode %s: %v", name, raw, err)
		}
	}
	return ""
}

func mustOK(t *testing.T, name, errText string) {
	t.Helper()
	if errText != "" {
		t.Fatalf("%s: tool error %q", name, errText)
	}
}

func wantErr(t *testing.T, name, errText, want string) {
	t.Helper()
	if !strings.Contains(errText, want) {
		t.Fatalf("%s: error %q, want it to contain %q", name, errText, want)
	}
}

func rawPost(t *testing.T, url, auth, body string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

const listTools = `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`

func TestDiscoverAndChallenges(t *testing.T) {
	e := newEnv(t, nil)
	// server/discover without a token, through the go-sdk client.
	cs := e.connect("")
	ir := cs.InitializeResult()
	if ir == nil || ir.ServerInfo == nil || ir.ServerInfo.Name != "faxhub" || !strings.Contains(ir.Instructions, "health information") {
		t.Fatalf("discover result = %+v", ir)
	}
	if _, err := cs.ListTools(t.Context(), nil); err == nil {
		t.Fatal("tools/list without a token succeeded")
	}

	allScopes := core.JoinScopes(core.FaxScopes())
	wantHeader := fmt.Sprintf(`Bearer resource_metadata="%s/.well-known/oauth-protected-resource/mcp", scope="%s"`, e.base, allScopes)
	resp, _ := rawPost(t, e.base+"/mcp", "", listTools)
	if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") != wantHeader {
		t.Fatalf("no token: %d %q, want 401 %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"), wantHeader)
	}
	resp, _ = rawPost(t, e.base+"/mcp", "Bearer nonsense", listTools)
	if got := resp.Header.Get("WWW-Authenticate"); resp.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(got, wantHeader+`, error="invalid_token"`) {
		t.Fatalf("bad token: %d %q", resp.StatusCode, got)
	}
	resp, body := rawPost(t, e.base+"/mcp", "DPoP abc", listTools)
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(body, "DPoP") {
		t.Fatalf("DPoP: %d %s", resp.StatusCode, body)
	}
	resp, body = rawPost(t, e.base+"/mcp?access_token=x", "", listTools)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, "query string") {
		t.Fatalf("query token: %d %s", resp.StatusCode, body)
	}
	// An API key is never an MCP credential.
	o := e.owner("keys@example.com")
	key, _, err := e.a.Svc.Accounts.CreateAPIKey(t.Context(), o.Account.ID, core.ModeTest, "k")
	if err != nil {
		t.Fatal(err)
	}
	resp, body = rawPost(t, e.base+"/mcp", "Bearer "+key, listTools)
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(body, "API keys") {
		t.Fatalf("api key: %d %s", resp.StatusCode, body)
	}
}

func TestMCPOff(t *testing.T) {
	e := newEnv(t, func(o *app.Options) { o.MCPOAuth = false })
	cs := e.connect("") // discover still answers
	if cs.InitializeResult().ServerInfo.Name != "faxhub" {
		t.Fatal("discover")
	}
	resp, _ := rawPost(t, e.base+"/mcp", "Bearer x", listTools)
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("off: %d", resp.StatusCode)
	}
}

func TestAudienceAndScopes(t *testing.T) {
	e := newEnv(t, nil)
	o := e.owner("aud@example.com")
	a2a := o.Token(t, []string{"fax:read", "credits:read"}, e.base+"/a2a")
	resp, _ := rawPost(t, e.base+"/mcp", "Bearer "+a2a, listTools)
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(resp.Header.Get("WWW-Authenticate"), `error="invalid_token"`) {
		t.Fatalf("a2a token at /mcp: %d %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}

	tok := o.Token(t, []string{"fax:read", "credits:read"}, e.base+"/mcp")
	cs := e.connect(tok)
	tools, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
	}
	slices.Sort(names)
	want := []string{"buy_number", "cancel_fax", "cancel_fax_batch", "create_credit_checkout", "create_fax_draft", "create_upload", "get_credits",
		"get_fax_batch", "get_fax_document", "get_fax_receipt", "get_fax_report", "get_fax_status", "list_faxes", "list_inbox", "list_numbers",
		"preview_fax", "read_inbox_fax", "search_numbers", "send_fax", "send_fax_batch", "validate_fax"}
	if !slices.Equal(names, want) {
		t.Fatalf("tools %v, want %v", names, want)
	}
	for _, tl := range tools.Tools {
		if tl.InputSchema == nil || tl.OutputSchema == nil || tl.Annotations == nil || !strings.Contains(tl.Description, "protected health information") {
			t.Fatalf("tool %s lacks schemas, annotations or the PHI warning: %+v", tl.Name, tl)
		}
	}
	var cr struct{ Available, Mode string }
	mustOK(t, "get_credits", call(t, cs, "get_credits", map[string]any{}, &cr))
	if cr.Mode != "test" {
		t.Fatalf("credits = %+v", cr)
	}
	// send_fax needs fax:send: 403 insufficient_scope at the HTTP level.
	resp, body := rawPost(t, e.base+"/mcp", "Bearer "+tok,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"send_fax","arguments":{"draftId":"x"}}}`)
	challenge := fmt.Sprintf(`Bearer resource_metadata="%s/.well-known/oauth-protected-resource/mcp", scope="fax:send", error="insufficient_scope"`, e.base)
	if resp.StatusCode != http.StatusForbidden || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), challenge) {
		t.Fatalf("scope: %d %q %s", resp.StatusCode, resp.Header.Get("WWW-Authenticate"), body)
	}
	if _, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "create_upload", Arguments: map[string]any{}}); err == nil {
		t.Fatal("create_upload without fax:draft succeeded")
	}
}

var allScopes = []string{"fax:read", "fax:draft", "fax:send", "inbox:read", "credits:read", "credits:checkout"}

type uploadOut struct {
	UploadURL, UploadToken, UploadPageURL, ExpiresAt string
	MaxBytes                                         int64
	Uploaded                                         bool
	Pages                                            int
}

type draftOut struct {
	DraftID, Status, To, CheckoutURL, Mode string
	Pages                                  int
	Quote                                  struct{ Amount string }
}

type faxOut struct {
	FaxID, Status, DraftID, PaymentMethod string
	AlreadyPaid                           bool
}

func TestToolsAndJourney(t *testing.T) {
	e := newEnv(t, nil)
	ctx := t.Context()
	o := e.owner("journey@example.com")
	tok := o.Token(t, allScopes, e.base+"/mcp")
	cs := e.connect(tok)

	// create_upload, then PUT the file with no OAuth header.
	var up uploadOut
	mustOK(t, "create_upload", call(t, cs, "create_upload", map[string]any{}, &up))
	// A file name is bounded (documents.MaxFileNameBytes), as over A2A.
	if msg := call(t, cs, "create_upload", map[string]any{"fileName": "../../" + strings.Repeat("a", 250)}, nil); !strings.HasPrefix(msg, "invalid_request") {
		t.Fatalf("a 256-byte fileName: %q", msg)
	}
	mustOK(t, "create_upload", call(t, cs, "create_upload", map[string]any{"fileName": strings.Repeat("a", 255)}, nil))
	if !strings.HasPrefix(up.UploadPageURL, e.base+"/upload#") || up.UploadToken == "" || up.MaxBytes == 0 {
		t.Fatalf("upload = %+v", up)
	}
	if code, _, page := e.browse(http.MethodGet, up.UploadPageURL, "", nil); code != 200 || !strings.Contains(page, "/upload/app.js") {
		t.Fatalf("upload page: %d", code)
	}
	req, _ := http.NewRequest(http.MethodPut, up.UploadURL, bytes.NewReader(testenv.MinimalPDF(2)))
	req.Header.Set("Content-Type", "application/pdf")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Fatalf("PUT: %d", resp.StatusCode)
	}

	// Errors of the document tools.
	wantErr(t, "create_fax_draft", call(t, cs, "create_fax_draft", map[string]any{"to": "+12125550100", "uploadToken": ""}, nil), "invalid_request")
	wantErr(t, "create_fax_draft", call(t, cs, "create_fax_draft", map[string]any{"to": "12", "uploadToken": up.UploadToken}, nil), "destination")
	big := base64.StdEncoding.EncodeToString(make([]byte, mcpserver.MaxInlineBytes+1))
	wantErr(t, "create_upload", call(t, cs, "create_upload", map[string]any{"contentBase64": big}, nil), "file_too_large")
	wantErr(t, "create_upload", call(t, cs, "create_upload", map[string]any{"contentBase64": "!!"}, nil), "base64")

	// Inline upload of a tiny file.
	var inl uploadOut
	mustOK(t, "create_upload", call(t, cs, "create_upload", map[string]any{"contentBase64": base64.StdEncoding.EncodeToString(testenv.MinimalPDF(1))}, &inl))
	if !inl.Uploaded || inl.Pages != 1 {
		t.Fatalf("inline = %+v", inl)
	}

	var q struct {
		To, Amount string
		Pages      int
	}
	mustOK(t, "validate_fax", call(t, cs, "validate_fax", map[string]any{"to": "+12125550100", "pages": 3}, &q))
	if q.To != "+12125550100" || q.Pages != 3 || q.Amount == "" {
		t.Fatalf("quote = %+v", q)
	}
	wantErr(t, "validate_fax", call(t, cs, "validate_fax", map[string]any{"to": "nope"}, nil), "destination")
	// core's pages rule: absent prices one page, 0 and negative are refused.
	mustOK(t, "validate_fax", call(t, cs, "validate_fax", map[string]any{"to": "+12125550100"}, &q))
	if q.Pages != 1 {
		t.Fatalf("quote without pages = %+v", q)
	}
	wantErr(t, "validate_fax 0 pages", call(t, cs, "validate_fax", map[string]any{"to": "+12125550100", "pages": 0}, nil), "invalid_request")
	wantErr(t, "validate_fax -1 pages", call(t, cs, "validate_fax", map[string]any{"to": "+12125550100", "pages": -1}, nil), "invalid_request")

	var d draftOut
	mustOK(t, "create_fax_draft", call(t, cs, "create_fax_draft", map[string]any{"to": "+12125550100", "uploadToken": up.UploadToken}, &d))
	if d.Pages != 2 || d.Status != "open" || d.Mode != "test" || !strings.HasPrefix(d.CheckoutURL, e.base+"/console/drafts/"+d.DraftID) {
		t.Fatalf("draft = %+v", d)
	}

	// send_fax without credits: a clear error naming the checkout. It is
	// the tool's own error (call fails the test on a JSON-RPC error), never
	// a -32042 payment challenge: MCP takes no machine payments.
	noCredits := call(t, cs, "send_fax", map[string]any{"draftId": d.DraftID}, nil)
	wantErr(t, "send_fax", noCredits, "insufficient_credits")
	if strings.Contains(noCredits, "-32042") || strings.Contains(noCredits, "paymentauth") || strings.Contains(noCredits, "org.paymentauth") {
		t.Fatalf("send_fax offered a machine payment: %q", noCredits)
	}
	wantErr(t, "send_fax", call(t, cs, "send_fax", map[string]any{"draftId": d.DraftID}, nil), d.CheckoutURL)
	wantErr(t, "send_fax", call(t, cs, "send_fax", map[string]any{"draftId": "drf_nope"}, nil), "not_found")

	// Pay the draft on the checkout page as the owner.
	code, _, page := e.browse(http.MethodGet, d.CheckoutURL, o.Cookie(), nil)
	if code != 200 || !strings.Contains(page, "12125550100") || !strings.Contains(page, d.Quote.Amount) {
		t.Fatalf("draft page: %d %s", code, page)
	}
	if code, loc, _ := e.browse(http.MethodGet, d.CheckoutURL, "", nil); code != http.StatusSeeOther || !strings.HasPrefix(loc.Path, "/signin") {
		t.Fatalf("signed out: %d %v", code, loc)
	}
	csrf := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(page)
	action := regexp.MustCompile(`action="(/console/drafts/[^"]+/pay[^"]*)"`).FindStringSubmatch(page)
	if csrf == nil || action == nil {
		t.Fatalf("no pay form in %s", page)
	}
	code, loc, body := e.browse(http.MethodPost, strings.ReplaceAll(action[1], "&amp;", "&"), o.Cookie(), url.Values{"csrf": {csrf[1]}})
	if code != http.StatusSeeOther || loc == nil || !strings.Contains(loc.Path, "/checkout/test/") {
		t.Fatalf("pay: %d %v %s", code, loc, body)
	}
	code, _, body = e.browse(http.MethodPost, loc.String(), "", url.Values{"card_number": {"4242 4242 4242 4242"}, "expiry": {"12/40"}, "cvc": {"123"}})
	if code != http.StatusSeeOther {
		t.Fatalf("test card: %d %s", code, body)
	}

	// The draft is now a fax; send_fax on it charges nothing more.
	var f faxOut
	mustOK(t, "send_fax", call(t, cs, "send_fax", map[string]any{"draftId": d.DraftID}, &f))
	if !f.AlreadyPaid || f.PaymentMethod != "checkout" || f.Status != "queued" {
		t.Fatalf("send after checkout = %+v", f)
	}
	if err := e.a.Svc.Faxes.Deliver(ctx, f.FaxID); err != nil {
		t.Fatal(err)
	}
	var st faxOut
	mustOK(t, "get_fax_status", call(t, cs, "get_fax_status", map[string]any{"faxId": f.FaxID}, &st))
	if st.Status != "delivered" {
		t.Fatalf("status = %+v", st)
	}
	wantErr(t, "get_fax_status", call(t, cs, "get_fax_status", map[string]any{"faxId": "ord_nope"}, nil), "not_found")

	// With credits, send_fax pays a fresh draft exactly once.
	if _, err := e.a.Svc.Credits.Grant(ctx, o.Account.ID, core.ModeTest, 10*core.MicrosPerDollar, "test"); err != nil {
		t.Fatal(err)
	}
	var d2 draftOut
	mustOK(t, "create_fax_draft", call(t, cs, "create_fax_draft", map[string]any{"to": "+12125550100", "uploadToken": up.UploadToken, "cover": true}, &d2))
	var f1, f2 faxOut
	mustOK(t, "send_fax", call(t, cs, "send_fax", map[string]any{"draftId": d2.DraftID}, &f1))
	mustOK(t, "send_fax", call(t, cs, "send_fax", map[string]any{"draftId": d2.DraftID}, &f2))
	if f1.FaxID != f2.FaxID || f1.AlreadyPaid || !f2.AlreadyPaid || f1.PaymentMethod != "credits" {
		t.Fatalf("send twice: %+v %+v", f1, f2)
	}
	var cr struct{ Held string }
	mustOK(t, "get_credits", call(t, cs, "get_credits", map[string]any{}, &cr))
	if cr.Held == "0.00" || cr.Held == "" {
		t.Fatalf("one hold expected: %+v", cr)
	}

	var lf struct {
		Faxes   []faxOut
		HasMore bool
	}
	mustOK(t, "list_faxes", call(t, cs, "list_faxes", map[string]any{}, &lf))
	if len(lf.Faxes) != 2 {
		t.Fatalf("list = %+v", lf)
	}
	wantErr(t, "list_faxes", call(t, cs, "list_faxes", map[string]any{"status": "weird"}, nil), "invalid_request")
	// By period: today has both, a day long gone none; a bad bound is
	// refused with the period's code.
	today := time.Now().UTC().Format(time.DateOnly)
	mustOK(t, "list_faxes", call(t, cs, "list_faxes", map[string]any{"createdFrom": today, "createdTo": today}, &lf))
	if len(lf.Faxes) != 2 {
		t.Fatalf("list today = %+v", lf)
	}
	mustOK(t, "list_faxes", call(t, cs, "list_faxes", map[string]any{"createdFrom": "2001-01-01", "createdTo": "2001-01-02"}, &lf))
	if len(lf.Faxes) != 0 {
		t.Fatalf("list of 2001 = %+v", lf)
	}
	wantErr(t, "list_faxes", call(t, cs, "list_faxes", map[string]any{"createdTo": "soon"}, nil), "invalid_period")
	// The door: a chat app's fax is sent by its OAuth grant, named as the
	// owner knows the app.
	var sb struct {
		SentBy struct{ Kind, ID, Name string }
	}
	mustOK(t, "get_fax_status", call(t, cs, "get_fax_status", map[string]any{"faxId": f1.FaxID}, &sb))
	if sb.SentBy.Kind != string(core.PrincipalOAuthGrant) || sb.SentBy.ID == "" || sb.SentBy.Name == "" {
		t.Errorf("get_fax_status sentBy = %+v", sb.SentBy)
	}

	var co struct{ CheckoutURL, PackID string }
	pack := e.a.Svc.Credits.Packs()[0].ID
	mustOK(t, "create_credit_checkout", call(t, cs, "create_credit_checkout", map[string]any{"packId": pack}, &co))
	if !strings.Contains(co.CheckoutURL, "/checkout/test/") || co.PackID != pack {
		t.Fatalf("checkout = %+v", co)
	}
	wantErr(t, "create_credit_checkout", call(t, cs, "create_credit_checkout", map[string]any{"packId": "nope"}, nil), "unknown_credit_pack")

	var inbox struct{ Faxes []any }
	mustOK(t, "list_inbox", call(t, cs, "list_inbox", map[string]any{}, &inbox))
	if inbox.Faxes == nil || len(inbox.Faxes) != 0 {
		t.Fatalf("inbox = %+v", inbox)
	}

	// Another owner's token sees none of it.
	o2 := e.owner("other@example.com")
	cs2 := e.connect(o2.Token(t, allScopes, e.base+"/mcp"))
	wantErr(t, "get_fax_status", call(t, cs2, "get_fax_status", map[string]any{"faxId": f.FaxID}, nil), "not_found")
	wantErr(t, "send_fax", call(t, cs2, "send_fax", map[string]any{"draftId": d2.DraftID}, nil), "not_found")
	wantErr(t, "create_fax_draft", call(t, cs2, "create_fax_draft", map[string]any{"to": "+12125550100", "uploadToken": up.UploadToken}, nil), "not_found")
	mustOK(t, "list_faxes", call(t, cs2, "list_faxes", map[string]any{}, &lf))
	if len(lf.Faxes) != 0 {
		t.Fatalf("other owner lists %d faxes", len(lf.Faxes))
	}
	if code, _, _ := e.browse(http.MethodGet, d2.CheckoutURL, o2.Cookie(), nil); code != http.StatusNotFound {
		t.Fatalf("other owner's draft page: %d", code)
	}
	_ = context.Background
}

// A batch of many requests is refused before the SDK answers any of them
// (20,000 tools/list in one 1 MB batch once made a 262 MB response), with
// any token, even one without scopes; a small batch is still served.
func TestBatchAmplification(t *testing.T) {
	e := newEnv(t, nil)
	owner := e.owner("batch@example.com")
	tok := owner.Token(t, []string{"fax:read"}, e.base+"/mcp")
	post := func(body []byte) (int, []byte) {
		req, _ := http.NewRequest(http.MethodPost, e.base+"/mcp", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+tok)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	batch := func(n int) []byte {
		var b bytes.Buffer
		b.WriteString("[")
		for i := range n {
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, `{"jsonrpc":"2.0","id":%d,"method":"tools/list"}`, i)
		}
		b.WriteString("]")
		return b.Bytes()
	}
	code, body := post(batch(20_000))
	if code != http.StatusBadRequest || len(body) > 1<<10 || !strings.Contains(string(body), `"code":-32600`) {
		t.Fatalf("huge batch: %d, %d bytes: %.300s", code, len(body), body)
	}
	code, body = post(batch(mcpserver.MaxBatch + 1))
	if code != http.StatusBadRequest {
		t.Fatalf("batch of %d: %d %.300s", mcpserver.MaxBatch+1, code, body)
	}
	code, body = post(batch(mcpserver.MaxBatch))
	var out []map[string]any
	if code != http.StatusOK || json.Unmarshal(body, &out) != nil || len(out) != mcpserver.MaxBatch {
		t.Fatalf("batch of %d: %d %.300s", mcpserver.MaxBatch, code, body)
	}
}

// The transport spec's DNS-rebinding guard: on a loopback listener a
// foreign Host is refused, the public host name (a reverse proxy here) is
// not; a browser Origin must be the server's own. The prompts capability is
// declared, as prompts/list is answered (with none).
func TestHostOriginAndPrompts(t *testing.T) {
	e := newEnv(t, nil)
	owner := e.owner("rebind@example.com")
	tok := owner.Token(t, []string{"fax:read"}, e.base+"/mcp")
	port := strings.TrimPrefix(e.base, "http://localhost:")
	call := func(host, origin, body string) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, "http://127.0.0.1:"+port+"/mcp", strings.NewReader(body))
		req.Host = host
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		req.Header.Set("Authorization", "Bearer "+tok)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	list := `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
	for _, c := range []struct {
		name, host, origin string
		want               int
	}{
		{"the public host", "localhost:" + port, "", 200},
		{"a loopback address", "127.0.0.1:" + port, "", 200},
		{"a rebinding domain", "evil.example:" + port, "", 403},
		{"the server's own origin", "localhost:" + port, e.base, 200},
		{"a loopback origin of a loopback server", "localhost:" + port, "http://127.0.0.1:9999", 200},
		{"a foreign origin", "localhost:" + port, "https://evil.example", 403},
		{"a malformed origin", "localhost:" + port, "::nonsense", 403},
	} {
		code, body := call(c.host, c.origin, list)
		if code != c.want {
			t.Errorf("%s: %d, want %d: %.300s", c.name, code, c.want, body)
		}
	}
	code, body := call("localhost:"+port, "", `{"jsonrpc":"2.0","id":7,"method":"prompts/list"}`)
	if code != 200 || !strings.Contains(body, `"prompts":[]`) {
		t.Fatalf("prompts/list: %d %s", code, body)
	}
	code, body = call("localhost:"+port, "", `{"jsonrpc":"2.0","id":8,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	if code != 200 || !strings.Contains(body, `"prompts":{`) {
		t.Fatalf("initialize must declare the prompts it answers: %d %.500s", code, body)
	}
}
