package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/faxhub/faxhub/conformance/storetest"
	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/faxes"
	"github.com/faxhub/faxhub/core/mail"
	"github.com/faxhub/faxhub/internal/app"
	"github.com/faxhub/faxhub/internal/consoletest"
	"github.com/faxhub/faxhub/internal/testenv"
)

// webhookSite is a whole faxhub with its workers and dispatcher running,
// whose webhooks may reach loopback receivers (--webhooks-allow-private).
func webhookSite(t *testing.T) *consoletest.Site {
	t.Helper()
	dsn := ""
	if pg := os.Getenv(testenv.EnvPostgres); pg != "" {
		dsn = storetest.OpenPostgresSchema(t, pg)
	}
	site := consoletest.Start(t, func(base, _ string) app.Options {
		return app.Options{
			BaseURL: base, DataDir: testenv.DataDirFor(t, dsn), Database: dsn, Dev: true, SimTimeScale: 0, PollInterval: 20 * time.Millisecond,
			Webhooks: app.WebhookOptions{AllowPrivate: true, PollInterval: 20 * time.Millisecond},
			Logger:   slog.New(slog.NewTextHandler(testLog{t}, &slog.HandlerOptions{Level: slog.LevelWarn})),
		}
	})
	if err := site.App.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = site.App.Stop(ctx)
	})
	return site
}

// hookLog is a receiver that records the event types it got.
type hookLog struct {
	*httptest.Server
	mu    sync.Mutex
	types []string
	code  int
}

func newHookLog(t *testing.T, code int) *hookLog {
	h := &hookLog{code: code}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var ev struct {
			Type string `json:"type"`
		}
		_ = json.NewDecoder(r.Body).Decode(&ev)
		h.mu.Lock()
		h.types = append(h.types, ev.Type)
		h.mu.Unlock()
		w.WriteHeader(h.code)
	}))
	t.Cleanup(h.Close)
	return h
}

func (h *hookLog) got() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.types...)
}

// api calls /api/v1 with an API key.
func api(t *testing.T, site *consoletest.Site, key, method, path string, body any) (int, map[string]any) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, site.Base+path, rd)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var out map[string]any
	raw, _ := io.ReadAll(res.Body)
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &out); err != nil {
			t.Fatalf("%s %s: %d %s", method, path, res.StatusCode, raw)
		}
	}
	return res.StatusCode, out
}

// TestWebhookEndpointsAPI: the REST surface over HTTP, with an API key:
// create (the secret once), list, get, update, the test event reaching the
// receiver and its delivery log, redeliver, rotate, delete; problem codes
// for a bad URL, an unknown event, another owner's endpoint; the public
// signing key without credentials.
func TestWebhookEndpointsAPI(t *testing.T) {
	site := webhookSite(t)
	ctx := t.Context()
	o, err := site.App.Svc.Accounts.CreateOwner(ctx, "hooks@example.com", "Hooks", true)
	if err != nil {
		t.Fatal(err)
	}
	key, _, err := site.App.Svc.Accounts.CreateAPIKey(ctx, o.ID, core.ModeTest, "k")
	if err != nil {
		t.Fatal(err)
	}
	other, _ := site.App.Svc.Accounts.CreateOwner(ctx, "other@example.com", "Other", true)
	otherKey, _, _ := site.App.Svc.Accounts.CreateAPIKey(ctx, other.ID, core.ModeTest, "k")
	rcv := newHookLog(t, 200)

	st, out := api(t, site, key, "POST", "/api/v1/webhook-endpoints", map[string]any{"url": "http://10.0.0.1/x"})
	if st != 400 || out["code"] != "invalid_webhook_url" {
		t.Fatalf("a bad URL: %d %v", st, out)
	}
	st, out = api(t, site, "", "POST", "/api/v1/webhook-endpoints", map[string]any{"url": rcv.URL})
	if st != 401 {
		t.Fatalf("without a key: %d %v", st, out)
	}
	st, out = api(t, site, key, "POST", "/api/v1/webhook-endpoints", map[string]any{"url": rcv.URL, "eventTypes": []string{"fax.*"}, "signing": []string{"v1", "v1a"}, "extra": 1})
	if st != 400 || out["code"] != "invalid_request" {
		t.Fatalf("an unknown member: %d %v", st, out)
	}
	st, created := api(t, site, key, "POST", "/api/v1/webhook-endpoints", map[string]any{"url": rcv.URL, "description": "test receiver", "eventTypes": []string{"fax.*"}, "signing": []string{"v1", "v1a"}})
	if st != 200 || !strings.HasPrefix(created["secret"].(string), "whsec_") || created["enabled"] != true {
		t.Fatalf("create: %d %v", st, created)
	}
	id := created["id"].(string)
	one := "/api/v1/webhook-endpoints/" + id
	st, list := api(t, site, key, "GET", "/api/v1/webhook-endpoints", nil)
	if st != 200 || len(list["data"].([]any)) != 1 {
		t.Fatalf("list: %d %v", st, list)
	}
	if b, _ := json.Marshal(list); strings.Contains(string(b), "whsec_") {
		t.Fatal("the list shows a secret")
	}
	if st, out := api(t, site, otherKey, "GET", one, nil); st != 404 || out["code"] != "not_found" {
		t.Fatalf("another owner's endpoint: %d %v", st, out)
	}
	if st, out := api(t, site, key, "PATCH", one, map[string]any{"description": "renamed", "eventTypes": []string{}}); st != 200 || out["description"] != "renamed" || len(out["eventTypes"].([]any)) != 0 {
		t.Fatalf("patch: %d %v", st, out)
	}

	st, test := api(t, site, key, "POST", one+"/test", nil)
	if st != 200 || test["status"] != "pending" || test["eventType"] != "webhook.test" {
		t.Fatalf("test: %d %v", st, test)
	}
	eventually(t, "the test event", func() bool { return len(rcv.got()) == 1 })
	var log map[string]any
	eventually(t, "the delivery log", func() bool {
		_, log = api(t, site, key, "GET", one+"/deliveries?limit=10", nil)
		data := log["data"].([]any)
		return len(data) == 1 && data[0].(map[string]any)["status"] == "delivered"
	})
	d := log["data"].([]any)[0].(map[string]any)
	a := d["attempts"].([]any)[0].(map[string]any)
	if a["statusCode"] != float64(200) || a["status"] != "succeeded" || d["eventId"] != test["eventId"] {
		t.Fatalf("log: %v", d)
	}
	if st, out := api(t, site, key, "GET", one+"/deliveries?status=lost", nil); st != 400 || out["code"] != "invalid_request" {
		t.Fatalf("a bad status filter: %d %v", st, out)
	}
	if st, out := api(t, site, key, "POST", one+"/redeliver", map[string]any{"eventId": "evt_unknown"}); st != 404 {
		t.Fatalf("redeliver an unknown event: %d %v", st, out)
	}
	if st, out := api(t, site, key, "POST", one+"/redeliver", map[string]any{"eventId": test["eventId"]}); st != 200 || out["origin"] != "redeliver" {
		t.Fatalf("redeliver: %d %v", st, out)
	}
	eventually(t, "the redelivery", func() bool { return len(rcv.got()) == 2 })
	if st, out := api(t, site, key, "POST", one+"/rotate-secret", nil); st != 200 || out["secret"] == created["secret"] || out["previousSecretExpiresAt"] == nil {
		t.Fatalf("rotate: %d %v", st, out)
	}
	if st, out := api(t, site, "", "GET", "/api/v1/webhooks/signing-key", nil); st != 200 || !strings.HasPrefix(out["publicKey"].(string), "whpk_") {
		t.Fatalf("signing key: %d %v", st, out)
	}
	if st, out := api(t, site, key, "DELETE", one, nil); st != 200 || out["deleted"] != true {
		t.Fatalf("delete: %d %v", st, out)
	}
	if st, _ := api(t, site, key, "GET", one, nil); st != 404 {
		t.Fatalf("a deleted endpoint: %d", st)
	}
}

// TestWebhookConsole: the console page creates an endpoint and shows its
// secret on that answer only; a test event appears in the endpoint's
// delivery log; an endpoint disabled by a 410 says so, and enabling it
// works without JavaScript (forms and redirects).
func TestWebhookConsole(t *testing.T) {
	site := webhookSite(t)
	owner := site.Owner(t, "console-hooks@example.com")
	rcv := newHookLog(t, 410)
	page := owner.Do(t, "GET", "/console/webhooks?mode=test", nil, "", nil)
	if page.Status != 200 || !strings.Contains(page.Body, "Add an endpoint") || !strings.Contains(page.Body, `href="/console/webhooks"`) {
		t.Fatalf("page: %d", page.Status)
	}
	csrf := owner.CSRF(t)
	created := owner.Form(t, "/console/webhooks?mode=test", url.Values{"csrf": {csrf}, "url": {rcv.URL + "/hook"}, "description": {"from the console"}, "signing": {"both"}})
	if created.Status != 200 || !strings.Contains(created.Body, "whsec_") || !strings.Contains(created.Body, rcv.URL+"/hook") {
		t.Fatalf("create: %d %s", created.Status, created.Body)
	}
	list := owner.Do(t, "GET", "/console/webhooks?mode=test", nil, "", nil)
	if strings.Contains(list.Body, "whsec_") {
		t.Fatal("the secret is shown again")
	}
	eps, err := site.App.Svc.Webhooks.List(t.Context(), core.OwnerPrincipal(owner.Account.ID, core.ModeTest))
	if err != nil || len(eps) != 1 {
		t.Fatalf("endpoints: %v %v", eps, err)
	}
	ep := eps[0]
	if bad := owner.Form(t, "/console/webhooks/"+ep.ID+"/test?mode=test", url.Values{"csrf": {"forged"}}); bad.Status != 403 {
		t.Fatalf("a forged form: %d", bad.Status)
	}
	r := owner.Form(t, "/console/webhooks/"+ep.ID+"/test?mode=test", url.Values{"csrf": {csrf}})
	if r.Status != 303 || !strings.Contains(r.Header.Get("Location"), "/console/webhooks/"+ep.ID) {
		t.Fatalf("test: %d %s", r.Status, r.Header.Get("Location"))
	}
	eventually(t, "the test attempt in the log", func() bool {
		p := owner.Do(t, "GET", "/console/webhooks/"+ep.ID+"?mode=test", nil, "", nil)
		return strings.Contains(p.Body, "webhook.test") && strings.Contains(p.Body, "HTTP 410")
	})
	// A test says nothing of the endpoint's health; a real event's 410
	// disables it.
	if got, _ := site.App.Svc.Webhooks.Get(t.Context(), core.OwnerPrincipal(owner.Account.ID, core.ModeTest), ep.ID); !got.Enabled {
		t.Fatal("a test's 410 disabled the endpoint")
	}
	p := core.OwnerPrincipal(owner.Account.ID, core.ModeTest)
	if _, err := site.App.Svc.Credits.Grant(t.Context(), owner.Account.ID, core.ModeTest, core.MicrosPerDollar, "test"); err != nil {
		t.Fatal(err)
	}
	upload := uploadPDF(t, site, p)
	if _, _, err := site.App.Svc.Faxes.Send(t.Context(), p, "k1", faxes.SendRequest{To: "+12125550100", UploadToken: upload}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the endpoint disabled by its 410", func() bool {
		got, _ := site.App.Svc.Webhooks.Get(t.Context(), p, ep.ID)
		return !got.Enabled
	})
	page = owner.Do(t, "GET", "/console/webhooks/"+ep.ID+"?mode=test", nil, "", nil)
	if !strings.Contains(page.Body, "answered 410 Gone") || !strings.Contains(page.Body, "Disabled") {
		t.Fatalf("no disabled notice on the endpoint's page")
	}
	eventually(t, "the owner's mail", func() bool {
		for _, m := range mailsOf(site) {
			if m.To == owner.Account.Email && strings.Contains(m.Subject, "disabled a webhook endpoint") {
				return true
			}
		}
		return false
	})
	r = owner.Form(t, "/console/webhooks/"+ep.ID+"/enable?mode=test", url.Values{"csrf": {csrf}, "back": {"endpoint"}})
	if r.Status != 303 {
		t.Fatalf("enable: %d", r.Status)
	}
	if got, _ := site.App.Svc.Webhooks.Get(t.Context(), p, ep.ID); !got.Enabled || got.DisabledReason != "" {
		t.Fatalf("enabled again: %+v", got)
	}
	r = owner.Form(t, "/console/webhooks/"+ep.ID+"/rotate?mode=test", url.Values{"csrf": {csrf}})
	if r.Status != 200 || !strings.Contains(r.Body, "whsec_") || !strings.Contains(r.Body, "signed with the old one too") {
		t.Fatalf("rotate: %d", r.Status)
	}
	if r = owner.Form(t, "/console/webhooks/"+ep.ID+"/delete?mode=test", url.Values{"csrf": {csrf}}); r.Status != 400 {
		t.Fatalf("delete without confirming: %d", r.Status)
	}
	if r = owner.Form(t, "/console/webhooks/"+ep.ID+"/delete?mode=test", url.Values{"csrf": {csrf}, "confirm": {"yes"}}); r.Status != 303 {
		t.Fatalf("delete: %d", r.Status)
	}
	if got := owner.Do(t, "GET", "/console/webhooks/"+ep.ID+"?mode=test", nil, "", nil); got.Status != 404 {
		t.Fatalf("a deleted endpoint's page: %d", got.Status)
	}
}

// uploadPDF stores a one-page PDF for p and returns its upload token.
func uploadPDF(t *testing.T, site *consoletest.Site, p core.Principal) string {
	t.Helper()
	capa, err := site.App.Svc.Documents.CreateUpload(t.Context(), p, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := site.App.Svc.Documents.ReceiveUpload(t.Context(), capa.UploadToken, bytes.NewReader(testenv.MinimalPDF(1))); err != nil {
		t.Fatal(err)
	}
	return capa.UploadToken
}

// mailsOf reads the dev mailbox.
func mailsOf(site *consoletest.Site) []mail.Message {
	mb, _ := site.App.Mailer.(*mail.Mailbox)
	if mb == nil {
		return nil
	}
	return mb.Messages()
}
