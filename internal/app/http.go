package app

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/checkout"
	"github.com/faxhub/faxhub/core/provider/simulated"
	"github.com/faxhub/faxhub/core/web"
	"github.com/faxhub/faxhub/internal/httpmetrics"
	checkoutpage "github.com/faxhub/faxhub/internal/testcheckout"
	"github.com/faxhub/faxhub/rest"
	stripehook "github.com/faxhub/faxhub/rest/webhooks/stripe"
	telnyxhook "github.com/faxhub/faxhub/rest/webhooks/telnyx"
)

// Router is the process's one router: every public route, registered by
// the adapter that owns it, built once by Open (docs/architecture.md,
// "Routing"). Both origins (base and API) are served by it.
func (a *App) Router() *web.Router { return a.router }

// Handler is the whole HTTP surface of a process: the router inside the
// middleware every request goes through.
func (a *App) Handler() http.Handler { return a.handler }

// Routes lists every route of the process: the public router's, then the
// metrics listener's (origin web.OriginMetrics) when metrics are on.
// `faxhub routes` prints them.
func (a *App) Routes() []web.RouteInfo {
	routes := a.router.Routes()
	if a.metricsRouter != nil {
		routes = append(routes, a.metricsRouter.Routes()...)
	}
	return routes
}

// buildRouter makes the router: the process's own routes (health, the
// home redirect, the built-in Stripe test backend's mint), then each
// adapter's, each registered by the adapter itself; then the middleware
// around it.
func (a *App) buildRouter() {
	r := a.router
	base := r.Group("app", web.OriginBase)
	base.HandleFunc(web.Route{Name: "app.healthz", Methods: "GET", Path: "/healthz", Auth: web.AuthNone}, func(w http.ResponseWriter, r *http.Request) {
		web.WriteJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	base.HandleFunc(web.Route{Name: "app.readyz", Methods: "GET", Path: "/readyz", Auth: web.AuthNone}, a.readyz)
	base.HandleFunc(web.Route{Name: "app.home", Methods: "GET", Path: "/", Auth: web.AuthNone}, func(w http.ResponseWriter, r *http.Request) {
		// People land on the console; programs find the API below it.
		http.Redirect(w, r, "/console", http.StatusSeeOther)
	})
	if a.stripeTest != nil {
		r.Group("app", web.OriginAPI).Handle(web.Route{
			Name: "app.stripeTestMint", Methods: "POST", Path: StripeTestMintPath, Auth: web.AuthNone,
		}, a.stripeTestMint())
	}

	var numbers []rest.TestNumber
	for _, n := range simulated.TestNumbers() {
		numbers = append(numbers, rest.TestNumber{Number: n.Number, Description: n.Description})
	}
	rest.New(a.Svc, rest.Options{
		BaseURL: a.BaseURL, APIURL: a.Svc.Config().APIURL, MachineOffers: machineOffers(a.Svc), TestNumbers: numbers,
		StripeTestMintPath: a.stripeTestMintPath(), Verifier: a.OAuth,
	}, a.Logger).Register(r)
	// Stripe's and Telnyx's signed events, or a 503 that says the
	// provider is not configured.
	stripehook.Register(r, a.stripeWebhookHandler())
	telnyxhook.Register(r, a.telnyxWebhookHandler())
	checkoutpage.NewPage(a.Svc.Checkout, a.Logger).Register(r)
	// The authorization server: its discovery documents, /api/auth
	// endpoints and agent registration.
	a.OAuth.Register(r)
	// The MCP server (Streamable HTTP, stateless) and the page where a
	// person uploads a file for a chat app.
	a.MCP.Register(r)
	// The A2A endpoint (JSON-RPC, 1.0 and 0.3 method names) and its card.
	a.A2A.Register(r)
	// Delegated hosts and agents (discovery, host create/enroll, agent
	// registration, device codes, status, revoke, capability execute).
	a.HostAgent.Register(r)
	a.Console.Register(r)
	a.router = r

	body := a.Body
	if body.Stream == nil {
		body.Stream = isStreamedBody
	}
	// Bodies carrying a document are not read ahead for the text check:
	// uploads are bytes, and the machine endpoints check their JSON text
	// themselves while decoding (a 413 must come before a 14 MB read).
	h := web.ReadDeadlines(web.RefuseInvalidText(r, refuseInvalidText(a.Logger), isStreamedBody), body)
	h = web.WithRequestID(web.RealClientIP(accessLog(a.Logger, h), a.proxies))
	if a.metrics != nil {
		// Outermost, so requests refused before the router count too.
		h = httpmetrics.Instrument(a.metrics, h)
		a.metricsRouter = web.NewRouter(web.Origins{web.OriginMetrics: "http://" + a.MetricsAddr})
		a.metricsRouter.Group("app", web.OriginMetrics).Handle(web.Route{
			Name: "app.metrics", Methods: "GET", Path: httpmetrics.Path, Auth: web.AuthNone,
		}, httpmetrics.Handler(a.metrics))
	}
	a.handler = h
}

// stripeWebhookHandler is the Stripe webhook, or, without Stripe
// configured, a 503 that says so (an event sent there changes nothing).
func (a *App) stripeWebhookHandler() http.Handler {
	if a.stripeWebhook != nil {
		return a.stripeWebhook
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		web.WriteProblem(w, web.Problem{
			Type: web.ProblemType(checkout.CodeCheckoutUnavailable), Title: http.StatusText(http.StatusServiceUnavailable),
			Status: http.StatusServiceUnavailable, Code: checkout.CodeCheckoutUnavailable,
			Detail: "Stripe is not configured on this server (FAXHUB_STRIPE_SECRET_KEY and FAXHUB_STRIPE_WEBHOOK_SECRET)",
		})
	})
}

func (a *App) readyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	if err := a.Ready(ctx); err != nil {
		a.Logger.WarnContext(ctx, "not ready", "err", err)
		web.WriteProblem(w, web.Problem{
			Type: web.ProblemType(core.CodeNotReady), Title: http.StatusText(http.StatusServiceUnavailable),
			Status: http.StatusServiceUnavailable, Code: core.CodeNotReady,
			Detail: "the database is unreachable or a migration is missing",
		})
		return
	}
	web.WriteJSON(w, http.StatusOK, map[string]string{"status": "ready"})
}

// statusRecorder captures the status for the access log.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int)        { s.status = code; s.ResponseWriter.WriteHeader(code) }
func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// Flush lets a handler stream through the access log (A2A's server-sent
// events): the writer it wraps is flushed.
func (s *statusRecorder) Flush() { _ = http.NewResponseController(s.ResponseWriter).Flush() }

// accessLog logs method, path (capability tokens redacted, cut at
// web.MaxLoggedPath bytes), the client address (web.ClientIP), status and
// duration; never headers or bodies,
// which carry secrets.
func accessLog(log *slog.Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(rec, r)
		if strings.HasPrefix(r.URL.Path, "/healthz") || strings.HasPrefix(r.URL.Path, "/readyz") {
			return
		}
		log.LogAttrs(r.Context(), slog.LevelInfo, "http",
			slog.String("method", r.Method), slog.String("path", web.LogPath(r.URL.Path)), slog.String("client", web.ClientIP(r)),
			slog.Int("status", rec.status), slog.Duration("dur", time.Since(start)))
	})
}
