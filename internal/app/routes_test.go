package app_test

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/web"
	"github.com/faxhub/faxhub/internal/app"
	"github.com/faxhub/faxhub/internal/testenv"
)

// Reasons a route is on neither /openapi.json nor a discovery document.
const (
	consolePage = "an owner's page in the console, reached from its navigation or from a link faxhub hands out (docs/console.md)"
	consoleForm = "a form or script of the console page it sits on posts here, same-origin (docs/console.md)"
	signInPage  = "the console's sign-up, sign-in, verification and recovery pages and their WebAuthn ceremonies (docs/console.md)"
)

// undiscovered lists, with why, every route that is in neither
// /openapi.json nor a discovery document. A route in none of the three
// fails TestEveryRouteIsDocumented; so does an entry here that is not a
// route any more.
var undiscovered = map[string]string{
	"app.home":           "GET / sends people to the console",
	"app.healthz":        "the operator's liveness probe (docs/operations.md)",
	"app.readyz":         "the operator's readiness probe (docs/operations.md)",
	"app.stripeTestMint": "the built-in Stripe test backend's SPT mint, explained in llms.txt (docs/payments.md)",
	"app.metrics":        "the metrics listener's only route, on --metrics-addr, never a public origin (docs/operations.md)",

	"webhooks.stripe": "Stripe's signed events, configured in Stripe's dashboard (docs/payments.md)",
	"webhooks.telnyx": "Telnyx's signed events, configured at Telnyx (docs/providers.md)",

	"testcheckout.page": "the test checkout page, at the checkoutUrl a test-mode checkout hands out (docs/payments.md)",
	"testcheckout.pay":  "the test checkout page's form posts here",

	"mcp.uploadPage":   "the page at the uploadPageUrl create_upload hands out (docs/mcp.md)",
	"mcp.uploadScript": "the upload page's script",

	"oauth.authorizeResume": "where the console sends the owner back once a consent is decided (docs/oauth.md)",
	"oauth.agentManage":     "the console's agent-access page calls it with the owner's session (docs/agents.md)",
	"oauth.agentIdentity":   "agent registration, described in auth.md, the metadata's service_documentation (docs/agents.md)",
	"oauth.agentClaim":      "agent registration, described in auth.md (docs/agents.md)",
	"oauth.agentRevoke":     "agent registration, described in auth.md (docs/agents.md)",

	"passkeys.static":       "the console's stylesheet and scripts (WebAuthn, the send page's)",
	"passkeys.mailbox":      "dev mode's mailbox page, loopback peers only (docs/console.md)",
	"passkeys.signupPage":   signInPage,
	"passkeys.signup":       signInPage,
	"passkeys.recoverPage":  signInPage,
	"passkeys.recover":      signInPage,
	"passkeys.verifyPage":   "the page of the link in a sign-up or recovery mail",
	"passkeys.verifyBegin":  signInPage,
	"passkeys.verifyFinish": signInPage,
	"passkeys.signinPage":   signInPage,
	"passkeys.signinBegin":  signInPage,
	"passkeys.signinFinish": signInPage,
	"passkeys.signout":      consoleForm,
	"passkeys.signoutAll":   consoleForm,

	"passkeys.dashboard":             consolePage,
	"passkeys.dashboardSlash":        consolePage,
	"passkeys.buyCredits":            consoleForm,
	"passkeys.setCreditAlert":        consoleForm,
	"passkeys.send":                  consolePage,
	"passkeys.sendFax":               consoleForm,
	"passkeys.sendUpload":            consoleForm,
	"passkeys.sendPreview":           consoleForm,
	"passkeys.sendCheck":             "the send page's script checks the number as it is typed (docs/console.md)",
	"passkeys.faxSettings":           consolePage,
	"passkeys.saveFaxSettings":       consoleForm,
	"passkeys.keys":                  consolePage,
	"passkeys.createKey":             consoleForm,
	"passkeys.revokeKey":             consoleForm,
	"passkeys.apps":                  consolePage,
	"passkeys.revokeApp":             consoleForm,
	"passkeys.agents":                consolePage,
	"passkeys.createEnrollment":      consoleForm,
	"passkeys.revokeEnrollment":      consoleForm,
	"passkeys.revokeRegistration":    consoleForm,
	"passkeys.hosts":                 consolePage,
	"passkeys.createHost":            consoleForm,
	"passkeys.revokeHost":            consoleForm,
	"passkeys.revokeDelegatedAgent":  consoleForm,
	"passkeys.device":                "the verification_uri a delegated agent's registration hands out (docs/hostagent.md)",
	"passkeys.decideDevice":          consoleForm,
	"passkeys.claim":                 "the verification_uri an agent's claim hands its owner (docs/agents.md)",
	"passkeys.decideClaim":           consoleForm,
	"passkeys.approvals":             consolePage,
	"passkeys.approval":              "an approval's page, the approvalUrl agents hand their owner (docs/console.md)",
	"passkeys.decide":                consoleForm,
	"passkeys.approvalPasskeyBegin":  consoleForm,
	"passkeys.approvalPasskeyFinish": consoleForm,
	"passkeys.draft":                 "a draft's page, the checkoutUrl of an A2A or MCP fax (docs/a2a.md)",
	"passkeys.payDraft":              consoleForm,
	"passkeys.numbers":               consolePage,
	"passkeys.buyNumber":             consoleForm,
	"passkeys.number":                "a number's page, the checkoutUrl of a number awaiting payment (docs/numbers.md)",
	"passkeys.payNumber":             consoleForm,
	"passkeys.payNumberWithCredits":  consoleForm,
	"passkeys.releaseNumber":         consoleForm,
	"passkeys.inbox":                 consolePage,
	"passkeys.simulateInbound":       consoleForm,
	"passkeys.inboxFax":              consolePage,
	"passkeys.faxes":                 consolePage,
	"passkeys.fax":                   consolePage,
	"passkeys.cancelFax":             consoleForm,
	"passkeys.resendFax":             consoleForm,
	"passkeys.faxReceipt":            consolePage,
	"passkeys.inboxDownload":         consoleForm,
	"passkeys.webhooks":              consolePage,
	"passkeys.webhook":               consolePage,
	"passkeys.createWebhook":         consoleForm,
	"passkeys.enableWebhook":         consoleForm,
	"passkeys.disableWebhook":        consoleForm,
	"passkeys.deleteWebhook":         consoleForm,
	"passkeys.rotateWebhook":         consoleForm,
	"passkeys.testWebhook":           consoleForm,
	"passkeys.redeliverWebhook":      consoleForm,
	"passkeys.account":               consolePage,
	"passkeys.addPasskeyBegin":       consoleForm,
	"passkeys.addPasskeyFinish":      consoleForm,
	"passkeys.renamePasskey":         consoleForm,
	"passkeys.deletePasskey":         consoleForm,
}

// discoveryDocuments are the routes that serve a discovery document: OAuth
// authorization server and protected resource metadata, the A2A agent card,
// the Agent Auth agent-configuration.
var discoveryDocuments = []string{
	"oauth.metadata", "oauth.metadataIssuer", "oauth.openidConfiguration", "oauth.openidConfigurationAppended",
	"oauth.protectedResource", "oauth.protectedResourceMCP", "oauth.protectedResourceA2A", "oauth.protectedResourceAPI",
	"a2a.card", "hostagent.configuration",
}

var methods = []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"}

// TestEveryRouteIsDocumented walks the router of a process with every
// optional route on (dev mode, machine payments, metrics) and two origins:
// each route is an operation of /openapi.json, a discovery document or
// named in one (a URL, or an Agent Auth endpoint path), or on the list
// above; every operation of /openapi.json is served by its route.
func TestEveryRouteIsDocumented(t *testing.T) {
	const base, api = "http://faxhub.test", "https://api.faxhub.test"
	a, err := app.Open(t.Context(), app.Options{
		BaseURL: base, APIURL: api, DataDir: testenv.MigratedDataDir(t), Dev: true, MCPOAuth: true, MachinePayments: true,
		MetricsAddr: "127.0.0.1:0", InsertOnly: true, Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	r := a.Router()
	get := func(u string) []byte {
		t.Helper()
		rec := httptest.NewRecorder()
		a.Handler().ServeHTTP(rec, httptest.NewRequest("GET", u, nil))
		if rec.Code != http.StatusOK {
			t.Fatalf("GET %s: %d %s", u, rec.Code, rec.Body)
		}
		return rec.Body.Bytes()
	}
	documented := map[string]string{} // route name → where

	// /openapi.json: each operation is served by the route of its path.
	openapi, err := r.URL("rest.getOpenAPI")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Paths map[string]map[string]any `json:"paths"`
	}
	if err := json.Unmarshal(get(openapi), &doc); err != nil {
		t.Fatal(err)
	}
	wildcard := regexp.MustCompile(`\{[^}]+\}`)
	for path, item := range doc.Paths {
		for m := range item {
			method := strings.ToUpper(m)
			if !slices.Contains(methods, method) {
				continue
			}
			rt, ok := r.Lookup(method, wildcard.ReplaceAllString(path, "x1"))
			if !ok || rt.Path != path {
				t.Errorf("/openapi.json has %s %s, which the router does not serve (%+v)", method, path, rt)
				continue
			}
			documented[rt.Name] = "/openapi.json"
		}
	}

	// Discovery documents, and every URL or endpoint path in them.
	mark := func(path, where string) {
		for _, m := range methods {
			if rt, ok := r.Lookup(m, path); ok {
				documented[rt.Name] = where
			}
		}
	}
	for _, name := range discoveryDocuments {
		u, err := r.URL(name)
		if err != nil {
			t.Fatal(err)
		}
		// The document's own path (its CORS preflight too).
		if p, err := url.Parse(u); err == nil {
			mark(p.Path, "a discovery document")
		}
		var v any
		if err := json.Unmarshal(get(u), &v); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var walk func(key string, v any)
		walk = func(key string, v any) {
			switch v := v.(type) {
			case map[string]any:
				for k, x := range v {
					walk(k, x)
				}
			case []any:
				for _, x := range v {
					walk(key, x)
				}
			case string:
				if p, err := url.Parse(v); err == nil && (p.Scheme+"://"+p.Host == base || p.Scheme+"://"+p.Host == api) && p.Path != "" {
					mark(p.Path, name)
				} else if name == "hostagent.configuration" && strings.HasPrefix(v, "/") {
					// Agent Auth endpoints are paths relative to the issuer.
					mark(v, name)
				}
			}
		}
		walk("", v)
	}

	routes := a.Routes()
	names := map[string]bool{}
	for _, rt := range routes {
		names[rt.Name] = true
		_, listed := undiscovered[rt.Name]
		where, found := documented[rt.Name]
		switch {
		case found && listed:
			t.Errorf("%s is in %s and on the undiscovered list: take it off the list", rt.Name, where)
		case !found && !listed:
			t.Errorf("%s (%s %s) is in neither /openapi.json nor a discovery document: document it, or list it in undiscovered with a reason", rt.Name, rt.Methods, rt.Path)
		}
	}
	for name, reason := range undiscovered {
		if !names[name] {
			t.Errorf("undiscovered lists %s, which is not a route", name)
		}
		if len(reason) < 10 {
			t.Errorf("undiscovered gives %s no reason", name)
		}
	}
	if !slices.ContainsFunc(routes, func(rt web.RouteInfo) bool { return rt.Origin == web.OriginMetrics }) {
		t.Error("the metrics listener's route is not in the table")
	}
	if len(documented) < 40 {
		t.Errorf("only %d documented routes: %v", len(documented), documented)
	}
}

// TestCoreLinksAreRoutes: every URL core hands out (core.Link) is a route
// on the router, on the origin and path its template says, so the router
// and core's own expansion (used where no router is wired) agree.
func TestCoreLinksAreRoutes(t *testing.T) {
	const base, api = "http://faxhub.test", "https://api.faxhub.test"
	a, err := app.Open(t.Context(), app.Options{
		BaseURL: base, APIURL: api, DataDir: testenv.MigratedDataDir(t), Dev: true, MCPOAuth: true, MachinePayments: true,
		InsertOnly: true, Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	cfg := core.Config{BaseURL: base, APIURL: api}
	for _, link := range core.AllLinks() {
		var pairs []string
		for _, v := range []string{"token", "id", "page"} {
			if strings.Contains(link.Path(), "{"+v+"}") {
				pairs = append(pairs, v, "x_"+v)
			}
		}
		got, err := a.Router().URL(string(link), pairs...)
		if err != nil {
			t.Errorf("%s: %v", link, err)
			continue
		}
		want, err := core.ExpandLink(cfg, link, pairs...)
		if err != nil {
			t.Fatalf("%s: %v", link, err)
		}
		if got != want {
			t.Errorf("%s: the router builds %s, core's template %s", link, got, want)
		}
		if rt, ok := a.Router().Lookup("GET", link.Path()); ok && rt.Name != string(link) && link != core.LinkUpload {
			t.Errorf("%s: GET %s is served by %s", link, link.Path(), rt.Name)
		}
	}
	// The kernel builds from the router: a status URL is the router's.
	if u := a.Svc.Kernel.URL(core.LinkDraftPage, url.Values{"mode": {"test"}}, "id", "drf_1"); u != base+"/console/drafts/drf_1?mode=test" {
		t.Errorf("draft page URL %s", u)
	}
}
