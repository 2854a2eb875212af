package passkeys_test

import (
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/faxes"
	"github.com/faxhub/faxhub/core/services"
	"github.com/faxhub/faxhub/internal/testenv"
)

var resendKey = regexp.MustCompile(`name="key" value="([A-Za-z0-9_-]+)"`)

// The faxes pages: the list with the door and its filters, a fax's page,
// another owner's fax not found, cancel (form token required) and an
// idempotent resend per form render that goes to the new fax's page.
func TestFaxesPages(t *testing.T) {
	h := newHostsHarness(t, testenv.WithoutWorkers())
	ada, _ := h.signUp("ada@example.com", "Ada")
	bob, _ := h.signUp("bob@example.com", "Bob")
	owner := h.ownerID("ada@example.com")
	ctx := t.Context()
	if _, err := h.env.Svc.Credits.Grant(ctx, owner, core.ModeTest, 10*core.MicrosPerDollar, "test"); err != nil {
		t.Fatal(err)
	}
	secret, _, err := h.env.Svc.Accounts.CreateAPIKey(ctx, owner, core.ModeTest, "billing backend")
	if err != nil {
		t.Fatal(err)
	}
	key, err := h.env.Svc.Accounts.AuthenticateAPIKey(ctx, secret)
	if err != nil {
		t.Fatal(err)
	}
	doc := h.upload(owner, core.ModeTest)
	f, _, err := h.env.Svc.Faxes.Send(ctx, key, "k1", faxes.SendRequest{To: "+14155550123", DocumentID: doc.ID})
	if err != nil {
		t.Fatal(err)
	}
	page := "/console/faxes/" + f.ID

	r := ada.get("/console/faxes?mode=test")
	wantStatus(t, "faxes", r, http.StatusOK)
	body := html.UnescapeString(r.body)
	for _, want := range []string{`href="` + page + `?mode=test"`, "+14155550123", "API key", "billing backend", "queued", `aria-current="page">Faxes`} {
		if !strings.Contains(body, want) {
			t.Errorf("faxes page lacks %q", want)
		}
	}
	if strings.Contains(r.body, secret) {
		t.Fatal("the page shows the API key's secret")
	}
	if r := ada.get("/console/faxes?mode=test&status=delivered"); strings.Contains(r.body, f.ID) || !strings.Contains(r.body, "No fax in test mode matches") {
		t.Errorf("status filter: %d %s", r.status, r.body)
	}
	if r := ada.get("/console/faxes?mode=test&from=2000-01-01&to=2000-01-02"); strings.Contains(r.body, f.ID) {
		t.Error("a period without faxes lists one")
	}
	r = ada.get("/console/faxes?mode=test&from=yesterday")
	wantStatus(t, "bad period", r, http.StatusBadRequest)
	if !strings.Contains(r.body, "created_from must be a date") || !strings.Contains(r.body, `value="yesterday"`) {
		t.Errorf("a bad date is not explained and kept: %s", r.body)
	}
	if r := ada.get("/console"); !strings.Contains(r.body, `href="`+page+`?mode=test"`) || !strings.Contains(r.body, `href="/console/faxes?mode=test"`) {
		t.Error("the dashboard does not link the fax and the faxes page")
	}

	r = ada.get(page)
	wantStatus(t, "fax page", r, http.StatusOK)
	for _, want := range []string{"Attempts", "No attempt yet", "Cancel this fax", "composed at the first attempt", "billing backend", key.SubjectID,
		// A fax not final follows itself (fax.js); the version is what it compares.
		`/console/static/fax.js`, `data-fax-version="queued 0 0" data-fax-live`, `data-fax-state>queued<`} {
		if !strings.Contains(r.body, want) {
			t.Errorf("fax page lacks %q", want)
		}
	}
	wantStatus(t, "another owner's fax", bob.get(page), http.StatusNotFound)
	wantStatus(t, "another owner's cancel", bob.form(page+"/cancel", url.Values{"csrf": {bob.csrf()}}), http.StatusNotFound)
	wantStatus(t, "a missing fax", ada.get("/console/faxes/fax_missing"), http.StatusNotFound)

	// Cancel: refused without the form token, then done.
	csrf := ada.csrf()
	wantStatus(t, "cancel without the form token", ada.form(page+"/cancel", url.Values{}), http.StatusForbidden)
	r = ada.form(page+"/cancel?mode=test", url.Values{"csrf": {csrf}})
	wantStatus(t, "cancel", r, http.StatusSeeOther)
	if loc := r.header.Get("Location"); loc != page+"?mode=test&done=canceled" {
		t.Fatalf("cancel went to %s", loc)
	}
	got, err := h.env.Svc.Faxes.Get(ctx, key, f.ID)
	if err != nil || got.Status != faxes.Canceled {
		t.Fatalf("after cancel: %v %+v", err, got)
	}
	r = ada.get(page + "?mode=test&done=canceled")
	if !strings.Contains(r.body, "Canceled: what was held") || strings.Contains(r.body, "Cancel this fax") || !strings.Contains(r.body, "Send again") ||
		strings.Contains(r.body, "data-fax-live") {
		t.Errorf("canceled fax page: %s", r.body)
	}
	// Canceling again is explained on the page, not a 500.
	r = ada.form(page+"/cancel", url.Values{"csrf": {csrf}})
	wantStatus(t, "cancel twice", r, http.StatusConflict)
	if !strings.Contains(r.body, "can no longer be canceled") {
		t.Errorf("cancel twice: %s", r.body)
	}

	// Resend: one render's key makes one fax however often it is posted.
	m := resendKey.FindStringSubmatch(ada.get(page).body)
	if m == nil {
		t.Fatal("no resend key on the page")
	}
	wantStatus(t, "resend without the form token", ada.form(page+"/resend", url.Values{"key": {m[1]}}), http.StatusForbidden)
	var locs []string
	for range 2 {
		r := ada.form(page+"/resend", url.Values{"csrf": {csrf}, "key": {m[1]}})
		wantStatus(t, "resend", r, http.StatusSeeOther)
		locs = append(locs, r.header.Get("Location"))
	}
	if locs[0] != locs[1] || !strings.HasPrefix(locs[0], "/console/faxes/fax_") || strings.Contains(locs[0], f.ID) {
		t.Fatalf("resends went to %v", locs)
	}
	list, err := h.env.Svc.Faxes.List(ctx, key, faxes.ListRequest{})
	if err != nil || len(list.Data) != 2 {
		t.Fatalf("after two posts of one resend form: %v %d faxes", err, len(list.Data))
	}
	nf := list.Data[0]
	if nf.Options.ResendOf != f.ID || nf.SentBy.Kind != core.PrincipalOwnerSession {
		t.Fatalf("the resent fax %+v", nf)
	}
	r = ada.get(locs[0])
	if !strings.Contains(r.body, "Sent again: this is the new fax.") || !strings.Contains(r.body, "Console") {
		t.Errorf("the new fax's page: %s", r.body)
	}
	// Another render, another fax.
	m2 := resendKey.FindStringSubmatch(ada.get(page).body)
	if m2 == nil || m2[1] == m[1] {
		t.Fatal("a render reuses the resend key")
	}
	wantStatus(t, "second resend", ada.form(page+"/resend", url.Values{"csrf": {csrf}, "key": {m2[1]}}), http.StatusSeeOther)
	wantStatus(t, "resend without a key", ada.form(page+"/resend", url.Values{"csrf": {csrf}}), http.StatusBadRequest)
	if list, _ := h.env.Svc.Faxes.List(ctx, key, faxes.ListRequest{}); len(list.Data) != 3 {
		t.Fatalf("%d faxes after a second render's resend", len(list.Data))
	}
}

// A delegated agent's fax approval and a draft show their pages as they
// will be faxed ("Page n of N"), as images from the API origin the CSP
// allows; a document gone says so on the page, the decision still there.
func TestApprovalShowsPages(t *testing.T) {
	h := newHostsHarness(t, testenv.WithConfig(func(c *services.Config) { c.AgentMode = core.ModeTest }))
	ada, _ := h.signUp("ada@example.com", "Ada")
	owner := h.ownerID("ada@example.com")
	_, agent, p := h.sendingAgent(ada, owner)
	doc := h.upload(owner, p.Mode)
	_, apr := h.requestSend(p, agent, doc)

	r := ada.get("/console/approvals/" + apr.ID)
	wantStatus(t, "approval", r, http.StatusOK)
	if !strings.Contains(r.body, `alt="Page 1 of 1"`) || !strings.Contains(r.body, "/api/v1/preview-files/") || !strings.Contains(r.body, "Approve with passkey") {
		t.Fatalf("the approval page lacks the pages: %s", r.body)
	}
	api, _ := url.Parse(h.env.Svc.Config().APIURL)
	if csp := r.header.Get("Content-Security-Policy"); !strings.Contains(csp, "img-src 'self' data: "+api.Scheme+"://"+api.Host+";") || !strings.Contains(csp, "script-src 'self';") {
		t.Errorf("CSP %q", csp)
	}
	if r := ada.get("/console/approvals"); !strings.Contains(r.body, `href="/console/approvals/`+apr.ID+`">See the pages`) {
		t.Error("the inbox card does not link to the pages")
	}

	// A draft a chat app made shows its pages too.
	app := h.env.Svc.Kernel.GrantPrincipal(core.GrantAccess{OwnerID: owner, GrantID: "grant_1", ClientID: "c1", ClientName: "App", Scopes: core.FaxScopes()})
	app.Mode = core.ModeTest
	d, err := h.env.Svc.Faxes.CreateDraft(t.Context(), app, faxes.CreateDraftRequest{To: "+14155550123", DocumentID: doc.ID, Cover: true})
	if err != nil {
		t.Fatal(err)
	}
	r = ada.get("/console/drafts/" + d.ID)
	if !strings.Contains(r.body, `alt="Page 1 of 2"`) || !strings.Contains(r.body, `alt="Page 2 of 2"`) {
		t.Fatalf("the draft page lacks its pages (cover included): %s", r.body)
	}

	// The document purged: said on the page, the decision still offered.
	far := time.Now().Add(365 * 24 * time.Hour)
	if err := h.env.Store.MarkDocumentPurged(t.Context(), doc.ID, far, far, far); err != nil {
		t.Fatal(err)
	}
	r = ada.get("/console/approvals/" + apr.ID)
	wantStatus(t, "approval of a purged document", r, http.StatusOK)
	if !strings.Contains(r.body, "The pages cannot be shown") || !strings.Contains(r.body, "Approve with passkey") {
		t.Errorf("purged: %s", r.body)
	}
}
