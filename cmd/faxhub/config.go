package main

import (
	"cmp"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/convert"
	"github.com/faxhub/faxhub/core/web"
	"github.com/faxhub/faxhub/internal/app"
)

// config is every setting of the process, from flags with environment
// fallbacks (DESIGN.md section 5).
type config struct {
	Addr            string
	BaseURL         string
	APIURL          string
	DataDir         string
	Database        string
	BlobURL         string
	PriceTable      string
	MachinePayments bool
	MCPOAuth        bool
	Dev             bool
	DevAnyAddr      bool
	LogFormat       string
	LogLevel        string
	SimTimeScale    float64
	Soffice         string
	MaxUploadMB     int64
	MaxPages        int
	Workers         int
	SMTPURL         string
	AgentMode       string
	TrustedProxies  string
	// MetricsAddr is the metrics listener's address; empty: metrics off.
	MetricsAddr string
	Convert     convert.Options
	// Machine: the payment methods of machine payments (docs/payments.md);
	// its Stripe key and API URL also serve the owners' live Checkout.
	Machine app.MachineOptions
	// StripeWebhookSecret signs Stripe's webhooks, from the environment
	// only (secrets do not belong in a process's arguments, which any local
	// user can list).
	StripeWebhookSecret string // FAXHUB_STRIPE_WEBHOOK_SECRET
	// Telnyx: live mode's fax and number provider, from the environment
	// only (FAXHUB_TELNYX_*, docs/providers.md).
	Telnyx app.TelnyxOptions
	// MachineSweep is how often interrupted machine payments are finished
	// and due refunds performed (machine.Service.Sweep).
	MachineSweep time.Duration
	// NumberSweep is how often number reservations, renewals and
	// releases are acted on (numbers.Service.Sweep).
	NumberSweep time.Duration
	// FaxRetryBackoff is the wait after a fax's first failed attempt (4×
	// after the second…); tests shorten it, operators rarely need to.
	FaxRetryBackoff time.Duration
	// Webhooks: the address policy, workers, dispatcher poll and disabling
	// of owner webhooks (docs/webhooks.md).
	Webhooks app.WebhookOptions
	// Storage: quota, retention and garbage collection (core.StorageConfig).
	StorageQuotaMB int64
	Retention      time.Duration
	SentRetention  time.Duration
	InboxRetention time.Duration
	GCInterval     time.Duration
}

func env(name, def string) string { return cmp.Or(os.Getenv(name), def) }

func envBool(name string, def bool) bool {
	v := strings.ToLower(os.Getenv(name))
	switch v {
	case "1", "true", "on", "yes":
		return true
	case "0", "false", "off", "no":
		return false
	}
	return def
}

// onOff is a flag.Value for on|off switches.
type onOff struct{ v *bool }

func (o onOff) String() string {
	if o.v != nil && *o.v {
		return "on"
	}
	return "off"
}

func (o onOff) Set(s string) error {
	switch strings.ToLower(s) {
	case "on", "true", "1":
		*o.v = true
	case "off", "false", "0":
		*o.v = false
	default:
		return fmt.Errorf("want on or off, got %q", s)
	}
	return nil
}

// commonFlags registers the flags every database-using command shares.
func commonFlags(fs *flag.FlagSet, c *config) {
	fs.StringVar(&c.DataDir, "data", env("FAXHUB_DATA", "./faxhub-data"), "data directory [FAXHUB_DATA]")
	fs.StringVar(&c.Database, "database", os.Getenv("FAXHUB_DATABASE_URL"), "postgres://… URL or SQLite file path [FAXHUB_DATABASE_URL] (default: SQLite in the data dir)")
	fs.StringVar(&c.BaseURL, "base-url", env("FAXHUB_BASE_URL", "http://localhost:8080"), "public main origin [FAXHUB_BASE_URL]")
	fs.StringVar(&c.APIURL, "api-url", os.Getenv("FAXHUB_API_URL"), "public API origin [FAXHUB_API_URL] (default: the base URL)")
	fs.StringVar(&c.LogFormat, "log-format", env("FAXHUB_LOG_FORMAT", "text"), "text or json [FAXHUB_LOG_FORMAT]")
	fs.StringVar(&c.LogLevel, "log-level", env("FAXHUB_LOG_LEVEL", "info"), "debug, info, warn or error [FAXHUB_LOG_LEVEL]")
	c.StripeWebhookSecret = os.Getenv("FAXHUB_STRIPE_WEBHOOK_SECRET")
	c.Telnyx = app.TelnyxOptionsFromEnv(os.Getenv)
}

func serveFlags(c *config, stderr io.Writer) *flag.FlagSet {
	return serverFlags("serve", c, stderr)
}

// serverFlags are serve's flags under another command's name (routes
// builds the very server serve would).
func serverFlags(name string, c *config, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	commonFlags(fs, c)
	fs.StringVar(&c.Addr, "addr", env("FAXHUB_ADDR", "127.0.0.1:8080"), "listen address [FAXHUB_ADDR]")
	fs.StringVar(&c.BlobURL, "blobs", os.Getenv("FAXHUB_BLOB_URL"), "blob store URL: file:///dir or s3://bucket?region=… [FAXHUB_BLOB_URL] (default: files in the data dir)")
	fs.StringVar(&c.PriceTable, "price-table", os.Getenv("FAXHUB_PRICE_TABLE"), "JSON price table replacing the embedded one [FAXHUB_PRICE_TABLE]")
	c.MachinePayments = envBool("FAXHUB_MACHINE_PAYMENTS", true)
	fs.Var(onOff{&c.MachinePayments}, "machine-payments", "on|off: machine payment endpoints (HTTP 402, docs/payments.md) [FAXHUB_MACHINE_PAYMENTS]")
	machineFlags(fs, c)
	c.MCPOAuth = envBool("FAXHUB_MCP_OAUTH", true)
	fs.Var(onOff{&c.MCPOAuth}, "mcp-oauth", "on|off: OAuth for MCP chat apps [FAXHUB_MCP_OAUTH]")
	fs.BoolVar(&c.Dev, "dev", envBool("FAXHUB_DEV", false), "developer mode: offers a demo owner on first start, test mode for agents, and a mailbox page at /console/mailbox showing sign-in and recovery links to loopback peers only; refused with a non-loopback --addr unless --dev-any-addr [FAXHUB_DEV]")
	fs.BoolVar(&c.DevAnyAddr, "dev-any-addr", envBool("FAXHUB_DEV_ANY_ADDR", false), "allow --dev on a non-loopback listen address (the dev mailbox still answers loopback peers only) [FAXHUB_DEV_ANY_ADDR]")
	scale, _ := strconv.ParseFloat(env("FAXHUB_SIM_TIMESCALE", "1"), 64)
	fs.Float64Var(&c.SimTimeScale, "sim-timescale", scale, "simulated provider timing multiplier; 0 delivers instantly [FAXHUB_SIM_TIMESCALE]")
	fs.StringVar(&c.Soffice, "soffice", os.Getenv("FAXHUB_SOFFICE"), "path of LibreOffice's soffice [FAXHUB_SOFFICE] (default: looked up on PATH)")
	maxMB, _ := strconv.ParseInt(env("FAXHUB_MAX_UPLOAD_MB", "50"), 10, 64)
	fs.Int64Var(&c.MaxUploadMB, "max-upload-mb", maxMB, "largest accepted upload in MB [FAXHUB_MAX_UPLOAD_MB]")
	maxPages, _ := strconv.Atoi(env("FAXHUB_MAX_PAGES", "350"))
	fs.IntVar(&c.MaxPages, "max-pages", maxPages, "most pages per fax [FAXHUB_MAX_PAGES]")
	workers, _ := strconv.Atoi(env("FAXHUB_WORKERS", "0"))
	fs.IntVar(&c.Workers, "workers", workers, "delivery workers per process [FAXHUB_WORKERS] (0: the queue's default)")
	fs.StringVar(&c.AgentMode, "agent-mode", cmp.Or(os.Getenv("FAXHUB_AGENT_MODE"), os.Getenv("FAXHUB_MCP_MODE")),
		"test|live: the mode every agent acts in: chat apps (MCP, A2A), registered and delegated agents [FAXHUB_AGENT_MODE] (default: test with --dev, else live)")
	fs.StringVar(&c.AgentMode, "mcp-mode", c.AgentMode, "the former name of --agent-mode [FAXHUB_MCP_MODE]")
	storageFlags(fs, c)
	convertFlags(fs, c)
	fs.StringVar(&c.TrustedProxies, "trusted-proxies", os.Getenv("FAXHUB_TRUSTED_PROXIES"), "comma-separated CIDRs of reverse proxies whose X-Forwarded-For names the client (rate limits and logs key on that address) [FAXHUB_TRUSTED_PROXIES] (default: none, the direct peer is the client)")
	fs.StringVar(&c.MetricsAddr, "metrics-addr", os.Getenv("FAXHUB_METRICS_ADDR"), "address of a separate listener serving Prometheus metrics at /metrics, e.g. 127.0.0.1:9464 (never on the public address) [FAXHUB_METRICS_ADDR] (default: off)")
	fs.StringVar(&c.SMTPURL, "smtp", os.Getenv("FAXHUB_SMTP_URL"), "owner mail over SMTP: smtp://user:pass@host:587?from=… [FAXHUB_SMTP_URL] (default: dev mailbox and log)")
	webhookFlags(fs, c)
	retry, _ := time.ParseDuration(env("FAXHUB_FAX_RETRY_BACKOFF", "30s"))
	fs.DurationVar(&c.FaxRetryBackoff, "fax-retry-backoff", retry, "wait after a fax's first failed attempt (busy, no answer); each later wait is 4 times the one before [FAXHUB_FAX_RETRY_BACKOFF]")
	return fs
}

// webhookFlags set owner webhooks' operator settings (docs/webhooks.md).
func webhookFlags(fs *flag.FlagSet, c *config) {
	fs.BoolVar(&c.Webhooks.AllowPrivate, "webhooks-allow-private", envBool("FAXHUB_WEBHOOKS_ALLOW_PRIVATE", false),
		"deliver webhooks to private, loopback, link-local and CGNAT addresses too (receivers on an internal network), and accept http:// endpoints on loopback hosts; cloud metadata addresses stay refused [FAXHUB_WEBHOOKS_ALLOW_PRIVATE] (default: public addresses only; --dev allows loopback)")
	workers, _ := strconv.Atoi(env("FAXHUB_WEBHOOK_WORKERS", "0"))
	fs.IntVar(&c.Webhooks.Workers, "webhook-workers", workers, "webhook attempts sent at once per process, in their own job queue [FAXHUB_WEBHOOK_WORKERS] (0: 64)")
	poll, _ := time.ParseDuration(env("FAXHUB_WEBHOOK_POLL_INTERVAL", "200ms"))
	fs.DurationVar(&c.Webhooks.PollInterval, "webhook-poll-interval", poll, "how often each process looks for new events to fan out to webhook endpoints [FAXHUB_WEBHOOK_POLL_INTERVAL]")
	disable, _ := time.ParseDuration(env("FAXHUB_WEBHOOK_DISABLE_AFTER", "72h"))
	fs.DurationVar(&c.Webhooks.DisableAfter, "webhook-disable-after", disable, "an endpoint whose every attempt failed for this long is disabled and its owner told [FAXHUB_WEBHOOK_DISABLE_AFTER]")
}

// machineFlags register the payment methods of machine payments. The
// Stripe secret key is read from the environment only: a flag would show
// it in the process list.
func machineFlags(fs *flag.FlagSet, c *config) {
	c.Machine.StripeSecretKey = os.Getenv("FAXHUB_STRIPE_SECRET_KEY")
	fs.StringVar(&c.Machine.StripeNetworkID, "stripe-network-id", os.Getenv("FAXHUB_STRIPE_NETWORK_ID"), "Stripe profile (profile_…) offered to paying machines; required with FAXHUB_STRIPE_SECRET_KEY [FAXHUB_STRIPE_NETWORK_ID]")
	fs.StringVar(&c.Machine.StripeAPIURL, "stripe-api-url", os.Getenv("FAXHUB_STRIPE_API_URL"), "Stripe API origin, for stand-ins [FAXHUB_STRIPE_API_URL] (default: https://api.stripe.com)")
	fs.StringVar(&c.Machine.TempoRPCURL, "tempo-rpc-url", os.Getenv("FAXHUB_TEMPO_RPC_URL"), "Tempo JSON-RPC endpoint verifying push transfers; Tempo is offered when this, --tempo-recipient and --tempo-token are all set [FAXHUB_TEMPO_RPC_URL]")
	fs.StringVar(&c.Machine.TempoRecipient, "tempo-recipient", os.Getenv("FAXHUB_TEMPO_RECIPIENT"), "address (0x…) Tempo transfers must pay [FAXHUB_TEMPO_RECIPIENT]")
	fs.StringVar(&c.Machine.TempoToken, "tempo-token", os.Getenv("FAXHUB_TEMPO_TOKEN"), "TIP-20 token address (0x…) Tempo transfers must be of [FAXHUB_TEMPO_TOKEN]")
	sweep, _ := time.ParseDuration(env("FAXHUB_MACHINE_SWEEP_INTERVAL", "1m"))
	fs.DurationVar(&c.MachineSweep, "machine-sweep-interval", sweep, "how often interrupted machine payments are finished and due refunds paid back [FAXHUB_MACHINE_SWEEP_INTERVAL]")
	numberSweep, _ := time.ParseDuration(env("FAXHUB_NUMBER_SWEEP_INTERVAL", "1m"))
	fs.DurationVar(&c.NumberSweep, "number-sweep-interval", numberSweep, "how often lapsed number reservations are freed, months renewed from credits and unpaid numbers released [FAXHUB_NUMBER_SWEEP_INTERVAL]")
	chain, _ := strconv.ParseUint(os.Getenv("FAXHUB_TEMPO_CHAIN_ID"), 10, 64)
	fs.Uint64Var(&c.Machine.TempoChainID, "tempo-chain-id", chain, "Tempo chain id; 42431 (Moderato testnet) pays for test-mode faxes, any other for live ones [FAXHUB_TEMPO_CHAIN_ID] (default 42431)")
}

// storageFlags registers the storage settings: serve and admin purge share
// them (the purge applies the same retention as the server's collector).
func storageFlags(fs *flag.FlagSet, c *config) {
	quota, _ := strconv.ParseInt(env("FAXHUB_STORAGE_QUOTA_MB", "1024"), 10, 64)
	fs.Int64Var(&c.StorageQuotaMB, "storage-quota-mb", quota, "unsent documents per owner and mode, in MB; -1: no quota [FAXHUB_STORAGE_QUOTA_MB]")
	ret, _ := time.ParseDuration(env("FAXHUB_RETENTION", "168h"))
	fs.DurationVar(&c.Retention, "retention", ret, "unsent documents are deleted this long after upload [FAXHUB_RETENTION]")
	sent, _ := time.ParseDuration(env("FAXHUB_SENT_RETENTION", "168h"))
	inboxRet, _ := time.ParseDuration(env("FAXHUB_INBOX_RETENTION", "720h"))
	fs.DurationVar(&c.InboxRetention, "inbox-retention", inboxRet, "a received fax (its PDF and its text) is deleted this long after it arrived [FAXHUB_INBOX_RETENTION]")
	fs.DurationVar(&c.SentRetention, "sent-retention", sent, "a sent document's pages are deleted this long after its fax ended [FAXHUB_SENT_RETENTION]")
	gc, _ := time.ParseDuration(env("FAXHUB_GC_INTERVAL", "10m"))
	fs.DurationVar(&c.GCInterval, "gc-interval", gc, "how often expired rows and documents are purged [FAXHUB_GC_INTERVAL]")
}

// convertFlags set the bounds of document conversion (docs/conversion.md).
func convertFlags(fs *flag.FlagSet, c *config) {
	timeout, _ := time.ParseDuration(env("FAXHUB_CONVERT_TIMEOUT", "60s"))
	fs.DurationVar(&c.Convert.Timeout, "convert-timeout", timeout, "work one conversion may take (LibreOffice, images, PDF checks) [FAXHUB_CONVERT_TIMEOUT]")
	slots, _ := strconv.Atoi(env("FAXHUB_CONVERT_SLOTS", "2"))
	fs.IntVar(&c.Convert.MaxConcurrent, "convert-slots", slots, "LibreOffice conversions at once per process, and warm LibreOffice processes kept; an owner gets at most half while others wait [FAXHUB_CONVERT_SLOTS]")
	cold, _ := strconv.ParseBool(env("FAXHUB_CONVERT_COLD", "false"))
	fs.BoolVar(&c.Convert.ColdOffice, "convert-cold", cold, "start a LibreOffice for every conversion instead of keeping warm ones [FAXHUB_CONVERT_COLD]")
	recycle, _ := strconv.Atoi(env("FAXHUB_CONVERT_RECYCLE_AFTER", "100"))
	fs.IntVar(&c.Convert.OfficeRecycleAfter, "convert-recycle-after", recycle, "restart a warm LibreOffice after this many conversions [FAXHUB_CONVERT_RECYCLE_AFTER]")
	rssMB, _ := strconv.ParseInt(env("FAXHUB_CONVERT_MAX_RSS_MB", "768"), 10, 64)
	fs.Func("convert-max-rss-mb", "restart a warm LibreOffice holding more than this many MiB after a conversion (default "+strconv.FormatInt(rssMB, 10)+") [FAXHUB_CONVERT_MAX_RSS_MB]", func(v string) error {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			return fmt.Errorf("want a positive number of MiB")
		}
		c.Convert.OfficeMaxRSS = n << 20
		return nil
	})
	c.Convert.OfficeMaxRSS = rssMB << 20
	images, _ := strconv.Atoi(env("FAXHUB_CONVERT_IMAGE_SLOTS", "4"))
	fs.IntVar(&c.Convert.MaxConcurrentImages, "convert-image-slots", images, "image conversions and PDF checks at once per process [FAXHUB_CONVERT_IMAGE_SLOTS]")
	queued, _ := strconv.Atoi(env("FAXHUB_CONVERT_QUEUE_PER_OWNER", "4"))
	fs.IntVar(&c.Convert.MaxQueuedPerOwner, "convert-queue-per-owner", queued, "conversions one owner may have waiting for a slot; more get 429 [FAXHUB_CONVERT_QUEUE_PER_OWNER]")
}

// storage is the core storage configuration the flags ask for.
func (c config) storage(s *core.StorageConfig) {
	switch {
	case c.StorageQuotaMB < 0:
		s.QuotaBytes = -1
	case c.StorageQuotaMB > 0:
		s.QuotaBytes = c.StorageQuotaMB << 20
	}
	s.UnsentRetention, s.SentRetention, s.GCInterval = c.Retention, c.SentRetention, c.GCInterval
	s.InboxRetention = c.InboxRetention
}

// finish derives defaults that depend on other settings.
func (c *config) finish() error {
	c.BaseURL = strings.TrimRight(c.BaseURL, "/")
	c.APIURL = strings.TrimRight(cmp.Or(c.APIURL, c.BaseURL), "/")
	abs, err := filepath.Abs(c.DataDir)
	if err != nil {
		return fmt.Errorf("data dir: %w", err)
	}
	c.DataDir = abs
	if c.Database == "" {
		c.Database = filepath.Join(c.DataDir, "faxhub.db")
	}
	if c.AgentMode != "" {
		if _, err := core.ParseMode(c.AgentMode); err != nil {
			return usageError{"--agent-mode must be test or live"}
		}
	}
	if v := os.Getenv("FAXHUB_TEMPO_CHAIN_ID"); v != "" {
		if _, err := strconv.ParseUint(v, 10, 64); err != nil {
			return usageError{fmt.Sprintf("FAXHUB_TEMPO_CHAIN_ID must be a chain id (a positive integer), got %q", v)}
		}
	}
	if c.BlobURL == "" {
		c.BlobURL = "file://" + filepath.ToSlash(filepath.Join(c.DataDir, "blobs"))
	}
	if c.FaxRetryBackoff != 0 && c.FaxRetryBackoff < time.Second {
		return usageError{"--fax-retry-backoff must be at least 1s"}
	}
	if w := c.Webhooks; w.Workers < 0 || (w.PollInterval != 0 && w.PollInterval < 10*time.Millisecond) || (w.DisableAfter != 0 && w.DisableAfter < time.Hour) {
		return usageError{"--webhook-workers must not be negative, --webhook-poll-interval must be at least 10ms and --webhook-disable-after at least 1h"}
	}
	return nil
}

// checkDevAddr refuses developer mode on an address other machines reach:
// dev mode creates a demo owner with test credits and keeps account-recovery
// links in a mailbox page.
func (c *config) checkDevAddr() error {
	if !c.Dev || c.DevAnyAddr || web.LoopbackHost(c.Addr) {
		return nil
	}
	return usageError{fmt.Sprintf("--dev listens on loopback addresses only (got --addr %s): use --addr 127.0.0.1:PORT, or --dev-any-addr if this machine is yours alone", c.Addr)}
}

// dataFlag is the --data argument that points another command at this
// server's data, for the hints serve prints.
func (c *config) dataFlag() string {
	return "--data " + shellQuote(c.DataDir)
}

func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:=+@,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// shutdownGrace bounds how long serve waits for requests and jobs to finish.
const shutdownGrace = 15 * time.Second
