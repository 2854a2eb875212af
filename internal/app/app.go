// Package app wires faxhub together: the database and its migrations, the
// job queue, blobs, the converter, the destination checker, the providers,
// the checkout gateways, the core service and the HTTP surface. The binary
// (cmd/faxhub) and the test environment (internal/testenv) both build
// through it, so tests exercise the production wiring, not a copy of it.
package app

import (
	"cmp"
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/blob"
	"github.com/faxhub/faxhub/core/checkout"
	"github.com/faxhub/faxhub/core/convert"
	"github.com/faxhub/faxhub/core/documents"
	"github.com/faxhub/faxhub/core/egress"
	"github.com/faxhub/faxhub/core/faxdoc"
	"github.com/faxhub/faxhub/core/faxes"
	"github.com/faxhub/faxhub/core/machine"
	"github.com/faxhub/faxhub/core/mail"
	"github.com/faxhub/faxhub/core/numbers"
	"github.com/faxhub/faxhub/core/payments"
	"github.com/faxhub/faxhub/core/payments/stripecheckout"
	"github.com/faxhub/faxhub/core/payments/testcard"
	"github.com/faxhub/faxhub/core/payments/testcheckout"
	"github.com/faxhub/faxhub/core/phone"
	"github.com/faxhub/faxhub/core/prometheus"
	"github.com/faxhub/faxhub/core/provider/simulated"
	"github.com/faxhub/faxhub/core/queue"
	"github.com/faxhub/faxhub/core/services"
	"github.com/faxhub/faxhub/core/store"
	"github.com/faxhub/faxhub/core/web"
	"github.com/faxhub/faxhub/core/webhooks"
	"github.com/faxhub/faxhub/core/webhooks/httpsender"
	"github.com/faxhub/faxhub/hostagent"
	"github.com/faxhub/faxhub/internal/stripetest"
	"github.com/faxhub/faxhub/oauth"
	"github.com/faxhub/faxhub/passkeys"
	a2aserver "github.com/faxhub/faxhub/protocols/a2a"
	mcpserver "github.com/faxhub/faxhub/protocols/mcp"
	"github.com/faxhub/faxhub/rest/mpp"
	stripehook "github.com/faxhub/faxhub/rest/webhooks/stripe"
)

// Options configure a faxhub process. Zero values take the defaults of the
// packages they are passed to.
type Options struct {
	BaseURL, APIURL string
	// DataDir holds the SQLite file (unless Database is set), the blobs
	// (unless BlobURL is set) and the spool directory.
	DataDir  string
	Database string // postgres://… or a SQLite path
	BlobURL  string // file:///… or s3://…
	Prices   *core.PriceTable

	MaxUploadBytes int64
	MaxPages       int
	SimTimeScale   float64 // simulated provider: 1 real time, 0 instant
	Soffice        string  // LibreOffice binary; empty: looked up on PATH
	// Convert bounds conversions (timeout, slots, queue per owner); zero
	// fields take convert's defaults. SofficePath and TempDir are set here.
	Convert convert.Options

	// Queue: InsertOnly builds a queue without workers (admin commands;
	// tests that deliver by hand).
	Workers      int
	PollInterval time.Duration
	InsertOnly   bool

	// Feature switches: machine payment endpoints, OAuth for chat apps,
	// and developer mode (the console shows a dev mailbox).
	MachinePayments bool
	MCPOAuth        bool
	// Machine configures the payment methods of machine payments (read
	// only with MachinePayments on).
	Machine MachineOptions
	Dev     bool
	// AgentMode is the mode every agent principal acts in (chat apps,
	// registered and delegated agents: core.Config.AgentMode); empty means
	// test with Dev (no live provider is configured there) and live
	// otherwise (docs/design.md).
	AgentMode core.Mode
	// SMTPURL sends owner mail over SMTP (smtp://user:pass@host:587?from=…);
	// empty keeps mail in the dev mailbox and the log.
	SMTPURL string

	// Webhooks configures owner webhooks (docs/webhooks.md): the address
	// policy, the workers, the dispatcher's poll and when a failing
	// endpoint is disabled. Dev mode allows loopback endpoints.
	Webhooks WebhookOptions

	// Body bounds how long request bodies may take to arrive (zero values:
	// web's defaults, 30 s for a whole JSON or form body, uploads at
	// 64 KiB/s on average after 30 s). Tests shorten it.
	Body web.BodyDeadlines

	// TrustedProxies lists the CIDRs of the reverse proxies whose
	// X-Forwarded-For names the client (--trusted-proxies); empty: none,
	// the direct peer is the client.
	TrustedProxies string

	// Stripe configures live card payments; without a secret key live
	// checkouts answer checkout_not_configured.
	Stripe StripeOptions
	// Telnyx is live mode's fax and number provider (telnyx.go).
	Telnyx TelnyxOptions

	// MetricsAddr, when set (--metrics-addr), turns metrics on: StartMetrics
	// serves them at /metrics on this address, a listener of its own that
	// is never the public origin (docs/operations.md "Metrics"). Empty:
	// off, and nothing is counted.
	MetricsAddr string

	// A2AKeepAlive is how often an idle A2A stream sends an SSE comment
	// (zero: a2a.DefaultKeepAlive, 15 s). Tests shorten it.
	A2AKeepAlive time.Duration

	// Core adjusts the service configuration last (tests: clocks, limits).
	Core   func(*services.Config)
	Logger *slog.Logger
}

// WebhookOptions are the operator's webhook settings (serve's
// --webhooks-* flags); zero values take webhooks.Config's defaults.
type WebhookOptions struct {
	// AllowPrivate delivers to private, loopback and link-local
	// addresses (receivers on an internal network); never to cloud
	// metadata services.
	AllowPrivate bool
	// Workers is how many attempts this process sends at once.
	Workers int
	// PollInterval is how often the dispatcher looks for new events.
	PollInterval time.Duration
	// DisableAfter disables an endpoint failing continuously this long.
	DisableAfter time.Duration
	// Sender replaces the HTTP sender (tests: a resolver or TLS roots of
	// their own, through httpsender.New).
	Sender webhooks.Sender
}

// StripeOptions configure Stripe (docs/payments.md). With SecretKey and
// WebhookSecret, live credit packs and drafts are paid through Stripe
// Checkout and POST /webhooks/stripe learns their outcome; test mode keeps
// faxhub's own test checkout page whatever the key (an sk_test_ key makes
// live checkouts use Stripe's test mode, for a staging server).
type StripeOptions struct {
	SecretKey     string // FAXHUB_STRIPE_SECRET_KEY
	WebhookSecret string // FAXHUB_STRIPE_WEBHOOK_SECRET (whsec_…)
	// APIURL replaces https://api.stripe.com (stripe-mock in tests).
	APIURL     string
	HTTPClient *http.Client
}

// App is a wired process. Start runs the delivery workers; Close stops the
// warm LibreOffice processes and releases the database.
type App struct {
	Options
	DB      *store.DB
	Queue   *queue.Queue
	Svc     *services.Set
	OAuth   *oauth.Server
	Console *passkeys.Console
	MCP     *mcpserver.Handler
	A2A     *a2aserver.Handler
	// HostAgent is the delegated host/agent adapter (Agent Auth Protocol).
	HostAgent *hostagent.Handler

	proxies web.TrustedProxies
	// stripeTest is the built-in Stripe test backend when no Stripe key is
	// configured (its SPT mint is served).
	stripeTest *stripetest.Server
	// stripeWebhook serves POST /webhooks/stripe; nil when Stripe is not
	// configured.
	stripeWebhook *stripehook.Webhook
	// telnyxKey verifies POST /webhooks/telnyx; nil when Telnyx is not
	// configured.
	telnyxKey ed25519.PublicKey
	// signer forwards core's signing to the OAuth server, which is built
	// after the service (it needs it); wireOwners sets it once.
	signer *issuerSigner
	// metrics records the metrics; nil without MetricsAddr.
	metrics *prometheus.Metrics
	// converter turns uploads into PDFs; Close stops its warm LibreOffice
	// processes.
	converter *convert.Converter
	// Mailer sends owner mail: SMTP when configured, else a dev mailbox
	// (*mail.Mailbox, which tests read).
	Mailer core.Mailer
	// dispatch stops the webhook dispatcher Start began; done is closed
	// when it has returned.
	dispatch     context.CancelFunc
	dispatchDone chan struct{}
	// router is the public HTTP surface's one router, handler the router
	// in its middleware (buildRouter); metricsRouter the metrics
	// listener's, nil without MetricsAddr.
	router, metricsRouter *web.Router
	handler               http.Handler
}

// issuerSigner is core.Deps.Signer: the OAuth server's key, which exists
// only once wireOwners has built the server. Until then (never while
// serving) signing fails instead of using some other key.
type issuerSigner struct{ srv *oauth.Server }

var _ core.Signer = (*issuerSigner)(nil)

func (s *issuerSigner) SignJWT(ctx context.Context, typ string, claims any) (string, error) {
	if s.srv == nil {
		return "", errors.New("app: the OAuth server is not wired yet")
	}
	return s.srv.SignJWT(ctx, typ, claims)
}

// SignReceipt is faxes.Deps.Receipts: the OAuth keyring's receipt key.
func (s *issuerSigner) SignReceipt(ctx context.Context, r faxes.Receipt) (string, error) {
	if s.srv == nil {
		return "", errors.New("app: the OAuth server is not wired yet")
	}
	return s.srv.SignReceipt(ctx, r)
}

func (s *issuerSigner) JWKSURL() string {
	if s.srv == nil {
		return ""
	}
	return s.srv.JWKSURL()
}

// OpenDB creates the data dir, opens the database and applies faxhub's and
// River's migrations (both safe to run from many replicas at once).
func OpenDB(ctx context.Context, dataDir, dsn string) (*store.DB, error) {
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return nil, fmt.Errorf("create data dir: %w", err)
	}
	db, err := store.Open(ctx, dsn)
	if err != nil {
		return nil, fmt.Errorf("open database: %w", err)
	}
	if err := db.Migrate(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("migrate: %w", err)
	}
	if err := queue.Migrate(ctx, db.SQL(), db.Dialect()); err != nil {
		db.Close()
		return nil, fmt.Errorf("migrate job queue: %w", err)
	}
	return db, nil
}

// Open wires everything. The caller must Close the App.
func Open(ctx context.Context, o Options) (*App, error) {
	if o.DataDir == "" {
		return nil, errors.New("app: DataDir is required")
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	// Every line logged with a request's context names the request.
	o.Logger = slog.New(web.RequestIDLogs(o.Logger.Handler()))
	if o.Database == "" {
		o.Database = filepath.Join(o.DataDir, "faxhub.db")
	}
	proxies, err := web.ParseTrustedProxies(o.TrustedProxies)
	if err != nil {
		return nil, fmt.Errorf("app: %w", err)
	}
	if o.BlobURL == "" {
		o.BlobURL = "file://" + filepath.ToSlash(filepath.Join(o.DataDir, "blobs"))
	}
	db, err := OpenDB(ctx, o.DataDir, o.Database)
	if err != nil {
		return nil, err
	}
	a := &App{Options: o, DB: db, proxies: proxies}
	if err := a.wire(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return a, nil
}

func (a *App) wire(ctx context.Context) error {
	o := a.Options
	secret, err := a.DB.Secret(ctx, "upload-token")
	if err != nil {
		return fmt.Errorf("upload secret: %w", err)
	}
	blobs, err := blob.Open(ctx, o.BlobURL)
	if err != nil {
		return fmt.Errorf("open blob store: %w", err)
	}
	tmp := filepath.Join(o.DataDir, "tmp")
	if err := os.MkdirAll(tmp, 0o700); err != nil {
		return fmt.Errorf("create spool dir: %w", err)
	}

	// The queue calls the service and the service enqueues on the queue.
	var svc *services.Set
	q, err := queue.New(a.DB.QueuePool(), a.DB.Dialect(), queue.Handlers{
		Deliver: func(ctx context.Context, faxID string) error { return svc.Faxes.Deliver(ctx, faxID) },
		Outcome: func(ctx context.Context, faxID, attemptID string, res faxes.ProviderResult) error {
			return svc.Faxes.RecordProviderOutcome(ctx, faxID, attemptID, res)
		},
		OrderNumber: func(ctx context.Context, numberID string) error { return svc.Numbers.PlaceOrder(ctx, numberID) },
		GiveUpNumberOrder: func(ctx context.Context, numberID string, cause error) error {
			return svc.Numbers.GiveUpOrder(ctx, numberID, cause)
		},
		NumberOutcome: func(ctx context.Context, provider, orderRef string, res numbers.OrderResult) error {
			return svc.Numbers.RecordOrder(ctx, provider, orderRef, res)
		},
		ProcessInbound: func(ctx context.Context, id string, last bool) error {
			return svc.Inbox.Process(ctx, id, last)
		},
		DeliverWebhook: func(ctx context.Context, id string) error { return svc.Webhooks.Deliver(ctx, id) },
		WebhookNotice:  func(ctx context.Context, id string) error { return svc.Webhooks.NotifyDisabled(ctx, id) },
	}, queue.Options{
		Workers: o.Workers, PollInterval: o.PollInterval, InsertOnly: o.InsertOnly, StatsDB: a.DB.Reader(),
		WebhookWorkers: o.Webhooks.Workers,
	}, o.Logger)
	if err != nil {
		return fmt.Errorf("job queue: %w", err)
	}

	// The router exists before the services and the checkout gateways so
	// that the URLs they hand out are built from its route names; the
	// adapters register on it once the services exist (buildRouter).
	a.router = web.NewRouter(web.Origins{web.OriginBase: o.BaseURL, web.OriginAPI: cmp.Or(o.APIURL, o.BaseURL)})
	checkouts := map[core.Mode]checkout.Gateway{core.ModeTest: testcheckout.NewTestGateway(o.BaseURL, a.router)}
	live, err := liveCheckout(o, a.router)
	if err != nil {
		return err
	}
	if live != nil {
		checkouts[core.ModeLive] = live
	}

	cfg := services.Config{
		Config:    core.Config{BaseURL: o.BaseURL, APIURL: o.APIURL, TempDir: tmp, AgentMode: o.AgentMode},
		Documents: documents.Config{UploadSecret: secret, MaxUploadBytes: o.MaxUploadBytes, MaxPages: o.MaxPages},
	}
	cfg.Machine.Enabled = o.MachinePayments
	var machine []machine.Method
	if o.MachinePayments {
		// The built-in test backend keeps its state in the database, so a
		// test SPT minted on one replica settles and refunds on any.
		builtinState := stripetest.WithDatabase(a.DB.SQL(), a.DB.Dialect())
		if machine, a.stripeTest, err = machineMethods(o.Machine, builtinState); err != nil {
			return err
		}
	}
	if cfg.AgentMode == "" && o.Dev {
		cfg.AgentMode = core.ModeTest
	}
	cfg.Webhooks = webhooks.Config{
		AllowLoopback: o.Dev, AllowPrivate: o.Webhooks.AllowPrivate,
		PollInterval: o.Webhooks.PollInterval, DisableAfter: o.Webhooks.DisableAfter,
	}
	if o.Core != nil {
		o.Core(&cfg)
	}
	if a.Mailer, err = newMailer(o); err != nil {
		return err
	}
	a.signer = &issuerSigner{}
	a.converter = convert.New(convertOptions(o.Convert, o.Soffice, tmp))
	sim := simulated.New(simulated.Options{TimeScale: o.SimTimeScale, Report: q.ScheduleOutcome, ReportNumber: q.ScheduleNumberOutcome})
	deps := services.Deps{Store: a.DB, Queue: q, AuthState: a.DB, Machine: machine, Checkout: checkouts, MachineBinder: mpp.Binder{},
		Text:     convert.NewTextReader(convert.TextOptions{}),
		Composer: faxdoc.New(faxdoc.Options{}),
		Receipts: a.signer,
		// Live faxing needs a real provider account: wireTelnyx adds it
		// when configured; until then live sends answer
		// provider_not_configured.
		Providers:   map[core.Mode]faxes.Provider{core.ModeTest: sim},
		Blobs:       blobs,
		Converter:   a.converter,
		Destination: phone.New(),
		Numbers:     map[core.Mode]numbers.Provider{core.ModeTest: sim},
		// AP2 credit purchases: the test card in test mode; live card
		// charges come with the payments issue.
		PaymentMethods: map[core.Mode]payments.PaymentMethod{core.ModeTest: testcard.New()},
		Signer:         a.signer,
		Prices:         o.Prices,
		Webhooks:       webhookSender(o.Webhooks.Sender, cfg.Webhooks),
		Mailer:         a.Mailer,
		A2APush:        a2aserver.PushBody,
		Logger:         o.Logger}
	if o.MetricsAddr != "" {
		mo := prometheus.Options{
			Snapshot: func(ctx context.Context) (*faxes.Snapshot, error) { return svc.Faxes.Snapshot(ctx) },
		}
		if a.DB.Dialect() == store.DialectSQLite {
			mo.WriterStats = func() (int64, int64) { txs, commits, _ := a.DB.WriterStats(); return txs, commits }
			mo.WriterBusy, mo.Checkpoints = a.DB.WriterBusy, a.DB.Checkpoints
		}
		a.metrics = prometheus.New(mo)
		deps.Metrics = a.metrics
	}
	if err := a.wireTelnyx(&deps); err != nil {
		return err
	}
	deps.Links = a.router
	if svc, err = services.New(cfg, deps); err != nil {
		return err
	}
	a.Queue, a.Svc = q, svc
	if live != nil {
		if a.stripeWebhook, err = stripehook.NewWebhook(svc.Checkout, o.Stripe.WebhookSecret, o.Logger); err != nil {
			return err
		}
	}
	return a.wireOwners()
}

// liveCheckout is the live-mode checkout gateway: Stripe Checkout when the
// secret key and the webhook's signing secret are configured, nil
// otherwise. A key alone still pays machine payments (an SPT settles in one
// synchronous call), but it does not switch on live Checkout: Stripe would
// take payments that faxhub never learns of, so live checkouts keep
// answering checkout_not_configured and the log says why. A signing secret
// without a key is a mistake and refused.
func liveCheckout(o Options, links core.Links) (checkout.Gateway, error) {
	st := o.Stripe
	switch {
	case st.SecretKey == "" && st.WebhookSecret == "":
		return nil, nil
	case st.SecretKey == "":
		return nil, errors.New("app: FAXHUB_STRIPE_WEBHOOK_SECRET is set without FAXHUB_STRIPE_SECRET_KEY: set both to take live card payments, or neither")
	case st.WebhookSecret == "":
		if o.Logger != nil {
			o.Logger.Warn("FAXHUB_STRIPE_SECRET_KEY is set without FAXHUB_STRIPE_WEBHOOK_SECRET: machine payments use the key, but live checkouts stay off (503 checkout_not_configured) until the signed webhook (POST /webhooks/stripe) is configured with its signing secret (whsec_…)")
		}
		return nil, nil
	}
	gw, err := stripecheckout.New(stripecheckout.Options{
		SecretKey: st.SecretKey, BaseURL: o.BaseURL, Links: links, APIURL: st.APIURL, HTTPClient: st.HTTPClient,
	})
	if err != nil {
		return nil, fmt.Errorf("app: %w", err)
	}
	return gw, nil
}

// wireOwners builds the owner side: the OAuth server (a TokenVerifier for
// resources and the GrantDirectory of the console) and the console.
func (a *App) wireOwners() error {
	o := a.Options
	srv, err := oauth.New(a.Svc, a.DB, oauth.Options{
		BaseURL: o.BaseURL, APIURL: a.Svc.Config().APIURL, MCPOAuth: o.MCPOAuth, Logger: o.Logger,
	})
	if err != nil {
		return fmt.Errorf("oauth server: %w", err)
	}
	con := passkeys.New(a.Svc, a.DB, passkeys.Options{
		BaseURL: o.BaseURL, DevMailbox: o.Dev, Mailer: a.Mailer, Grants: srv, Logger: o.Logger,
	})
	if err := con.Err(); err != nil {
		// The API still serves; the console pages say they are
		// misconfigured (e.g. a base URL on an IP address, which WebAuthn
		// refuses: use a host name such as localhost).
		o.Logger.Error("owner console disabled: passkeys need the base URL to be a host name, not an IP address", "err", err)
	}
	a.OAuth, a.Console = srv, con
	a.signer.srv = srv
	a.MCP = mcpserver.New(a.Svc, srv, mcpserver.Options{BaseURL: o.BaseURL, Enabled: o.MCPOAuth, Logger: o.Logger})
	// The agent card names the authorization server's endpoints: the
	// router builds them from their routes' names.
	a.A2A = a2aserver.New(a.Svc, srv, a2aserver.Options{BaseURL: o.BaseURL, KeepAlive: o.A2AKeepAlive, Logger: o.Logger})
	a.HostAgent = hostagent.New(a.Svc, hostagent.Options{BaseURL: o.BaseURL, APIURL: a.Svc.Config().APIURL, Logger: o.Logger})
	a.buildRouter()
	return nil
}

// newMailer is SMTP when configured, else the dev mailbox (kept in
// memory: the console's mailbox page in dev mode, and the log).
func newMailer(o Options) (core.Mailer, error) {
	if o.SMTPURL != "" {
		cfg, err := mail.ParseSMTPURL(o.SMTPURL)
		if err != nil {
			return nil, fmt.Errorf("smtp: %w", err)
		}
		return mail.NewSMTP(cfg, o.Logger), nil
	}
	if !o.Dev {
		o.Logger.Warn("no SMTP configured (FAXHUB_SMTP_URL): sign-up and recovery mails, and notices of disabled webhook endpoints, are only logged, without their links")
	}
	return mail.NewMailbox(o.Logger, 50), nil
}

// webhookSender is the HTTP sender of webhook attempts under the
// configured address policy, unless the options bring their own.
func webhookSender(custom webhooks.Sender, c webhooks.Config) webhooks.Sender {
	if custom != nil {
		return custom
	}
	c.SetDefaults()
	return httpsender.New(httpsender.Options{
		Policy: egress.Policy{AllowLoopback: c.AllowLoopback, AllowPrivate: c.AllowPrivate}, Timeout: c.AttemptTimeout,
		MaxIdleConnsPerHost: c.MaxInFlightPerEndpoint,
	})
}

// Start runs what a serving process runs besides its HTTP handler: the
// job queue's workers and the webhook dispatcher. An insert-only process
// runs neither (it neither delivers nor dispatches).
func (a *App) Start(ctx context.Context) error {
	if a.InsertOnly {
		return nil
	}
	if err := a.Queue.Start(ctx); err != nil {
		return err
	}
	dctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	a.dispatch, a.dispatchDone = cancel, make(chan struct{})
	go func() {
		defer close(a.dispatchDone)
		a.Svc.Webhooks.RunDispatcher(dctx)
	}()
	return nil
}

// Stop stops the dispatcher, then the queue (which waits for running jobs
// until ctx ends).
func (a *App) Stop(ctx context.Context) error {
	if a.dispatch != nil {
		a.dispatch()
		<-a.dispatchDone
		a.dispatch = nil
	}
	if a.InsertOnly {
		return nil
	}
	return a.Queue.Stop(ctx)
}

// Ready reports whether the database is reachable and every migration of
// faxhub and of the job queue is applied.
func (a *App) Ready(ctx context.Context) error {
	if err := a.Svc.Kernel.Ready(ctx); err != nil {
		return err
	}
	return queue.Validate(ctx, a.DB.SQL(), a.DB.Dialect())
}

// Close stops the warm LibreOffice processes and releases the database.
func (a *App) Close() error {
	if a.converter != nil {
		a.converter.Close()
	}
	return a.DB.Close()
}

// convertOptions is the converter's configuration: the operator's bounds
// with the binary and work directory this app decides.
func convertOptions(o convert.Options, soffice, tmp string) convert.Options {
	o.SofficePath, o.TempDir = soffice, tmp
	return o
}
