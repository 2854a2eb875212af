package app

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/payments/testcheckout"
	"github.com/faxhub/faxhub/core/prometheus"
	"github.com/faxhub/faxhub/core/provider/simulated"
	"github.com/faxhub/faxhub/core/web"
	"github.com/faxhub/faxhub/hostagent"
	checkoutpage "github.com/faxhub/faxhub/internal/testcheckout"
	"github.com/faxhub/faxhub/oauth"
	"github.com/faxhub/faxhub/passkeys"
	a2aserver "github.com/faxhub/faxhub/protocols/a2a"
	mcpserver "github.com/faxhub/faxhub/protocols/mcp"
	"github.com/faxhub/faxhub/rest"
	stripehook "github.com/faxhub/faxhub/rest/webhooks/stripe"
	telnyxhook "github.com/faxhub/faxhub/rest/webhooks/telnyx"
)

// Handler is the whole HTTP surface of a process. Both origins (base and
// API) are served by it.
func (a *App) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		web.WriteJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	mux.HandleFunc("GET /readyz", a.readyz)

	var numbers []rest.TestNumber
	for _, n := range simulated.TestNumbers() {
		numbers = append(numbers, rest.TestNumber{Number: n.Number, Description: n.Description})
	}
	api := rest.New(a.Svc, rest.Options{
		BaseURL: a.BaseURL, APIURL: a.Svc.Config().APIURL, MachineOffers: machineOffers(a.Svc), TestNumbers: numbers,
		StripeTestMintPath: a.stripeTestMintPath(),
	}, a.Logger)
	mux.Handle("/api/v1/", api)
	mux.Handle("/openapi.json", api)
	mux.Handle("/llms.txt", api)
	if a.stripeTest != nil {
		mux.Handle("POST "+StripeTestMintPath, a.stripeTestMint())
	}
	mux.Handle(testcheckout.TestCheckoutPath, checkoutpage.TestCheckoutPage(a.Svc, a.Logger))
	// Stripe's signed events (live checkouts), on both origins.
	mux.Handle(stripehook.WebhookPath, a.stripeWebhookHandler())
	// Telnyx's signed events (live faxes, numbers, received faxes).
	mux.Handle(telnyxhook.WebhookPath, a.telnyxWebhookHandler())

	// The authorization server owns its discovery documents and /api/auth
	// endpoints; later issues add agent registration beside them.
	as := a.OAuth.Handler()
	for _, p := range oauth.Paths() {
		mux.Handle(p, as)
	}
	// The MCP server (Streamable HTTP, stateless) and the page where a
	// person uploads a file for a chat app.
	mux.Handle("/mcp", a.MCP)
	mux.Handle(mcpserver.UploadPagePath, mcpserver.UploadPage(a.Svc.Config().APIURL))
	mux.Handle(mcpserver.UploadPagePath+"/", mcpserver.UploadPage(a.Svc.Config().APIURL))
	// The A2A endpoint (JSON-RPC, 1.0 and 0.3 method names) and its card,
	// served on both origins without a token.
	mux.Handle(a2aserver.Path, a.A2A)
	mux.HandleFunc("GET "+a2aserver.CardPath, a.A2A.ServeCard)
	// Delegated hosts and agents (discovery, host create/enroll, agent
	// registration, device codes, status, revoke, capability execute).
	for _, p := range hostagent.Paths() {
		mux.Handle(p, a.HostAgent)
	}
	console := a.Console.Handler()
	for _, p := range passkeys.Paths() {
		mux.Handle(p, console)
	}
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		// People land on the console; programs find the API below it.
		http.Redirect(w, r, "/console", http.StatusSeeOther)
	})
	body := a.Body
	if body.Stream == nil {
		body.Stream = isStreamedBody
	}
	// Bodies carrying a document are not read ahead for the text check:
	// uploads are bytes, and the machine endpoints check their JSON text
	// themselves while decoding (a 413 must come before a 14 MB read).
	var routed http.Handler = mux
	if a.metrics != nil {
		routed = prometheus.CaptureRoute(mux)
	}
	h := web.ReadDeadlines(web.RefuseInvalidText(routed, refuseInvalidText(a.Logger), isStreamedBody), body)
	h = web.WithRequestID(web.RealClientIP(accessLog(a.Logger, h), a.proxies))
	if a.metrics != nil {
		// Outermost, so requests refused before the mux count too.
		h = a.metrics.Instrument(h)
	}
	return h
}

// stripeWebhookHandler is the Stripe webhook, or, without Stripe
// configured, a 503 that says so (an event sent there changes nothing).
func (a *App) stripeWebhookHandler() http.Handler {
	if a.stripeWebhook != nil {
		return a.stripeWebhook
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		web.WriteProblem(w, web.Problem{
			Type: web.ProblemType(core.CodeCheckoutUnavailable), Title: http.StatusText(http.StatusServiceUnavailable),
			Status: http.StatusServiceUnavailable, Code: core.CodeCheckoutUnavailable,
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
