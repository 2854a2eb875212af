package core

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/faxhub/faxhub/core/payments"
)

// Config holds the kernel's tunables; zero values take the defaults below.
type Config struct {
	// BaseURL is the main origin; APIURL serves /api/v1 too (defaults to
	// BaseURL). Both without a trailing slash.
	BaseURL string
	APIURL  string
	// TempDir is where uploads are spooled and converted.
	TempDir string

	// AgentMode is the mode every agent principal acts in: OAuth grants
	// (chat apps), agent registrations, delegated agents. API keys carry
	// their own mode and owners pick theirs on each page. Default live.
	AgentMode Mode

	// Limits overrides rates of the limits table (core/limits.go); a zero
	// field keeps the default. Operators and tests tune limits here, never
	// at the door that charges them.
	Limits map[Limit]Rate

	// Now is the clock; tests replace it.
	Now func() time.Time
}

func (c *Config) setDefaults() {
	c.APIURL = cmp.Or(c.APIURL, c.BaseURL)
	c.TempDir = cmp.Or(c.TempDir, os.TempDir())
	if c.Now == nil {
		c.Now = time.Now
	}
	c.AgentMode = cmp.Or(c.AgentMode, ModeLive)
}

// Deps are the ports the kernel drives.
type Deps struct {
	Store       Store
	Blobs       BlobStore
	Destination DestinationChecker
	Prices      *PriceTable
	Logger      *slog.Logger
	// Signer signs what faxhub asserts to agents (AP2 cart mandates) with
	// the issuer's key; without it AP2 purchases answer
	// payment_method_not_configured.
	Signer Signer
	// PaymentMethods maps each mode to the method that charges AP2 payment
	// credentials (a card token): the test card in test mode, Stripe in
	// live mode once configured (payments issue).
	PaymentMethods map[Mode]payments.PaymentMethod
	// Links builds the URLs core hands out from route names (the router);
	// without it the kernel expands each Link's template (core's tests).
	Links Links
}

// Kernel is what every feature service shares (rate limits, secrets,
// signed links, the clock, Config). Its ports stay inside: adapters ask the
// feature services, never the store.
type Kernel struct {
	cfg Config
	d   Deps
	// limits is the effective rate of every limit: the table's defaults
	// with cfg.Limits applied.
	limits map[Limit]Rate
	// refused remembers the limiter's recent refusals, for Peek.
	refused *refusals
}

// NewKernel checks deps and returns a Kernel.
func NewKernel(cfg Config, deps Deps) (*Kernel, error) {
	cfg.setDefaults()
	switch {
	case deps.Store == nil:
		return nil, errors.New("core: Store is required")
	case cfg.BaseURL == "":
		return nil, errors.New("core: BaseURL is required")
	}
	if deps.Prices == nil {
		deps.Prices = DefaultPriceTable()
	}
	if deps.Logger == nil {
		deps.Logger = slog.New(slog.DiscardHandler)
	}
	limits, err := resolveLimits(cfg.Limits)
	if err != nil {
		return nil, err
	}
	return &Kernel{cfg: cfg, d: deps, limits: limits, refused: &refusals{until: map[string]time.Time{}}}, nil
}

// Config returns the effective configuration (defaults applied).
func (s *Kernel) Config() Config { return s.cfg }

// Now is the service clock (UTC, microseconds): adapters that stamp or
// compare times use it, so one clock governs a process and its tests.
func (s *Kernel) Now() time.Time { return s.now() }

// ResourceMCP is the MCP server's resource identifier (token audience).
func (s *Kernel) ResourceMCP() string { return s.cfg.BaseURL + "/mcp" }

// ResourceA2A is the A2A endpoint's resource identifier (token audience).
func (s *Kernel) ResourceA2A() string { return s.cfg.BaseURL + "/a2a" }

// Secret returns the named server secret, shared by every replica.
func (s *Kernel) Secret(ctx context.Context, name string) ([]byte, error) {
	return s.d.Store.Secret(ctx, name)
}

// now is the service clock in UTC at the stores' microsecond precision, so a
// stored idempotent response and a later read show the same instants.
func (s *Kernel) now() time.Time { return s.cfg.Now().UTC().Truncate(time.Microsecond) }

// storeErr translates a store sentinel into a caller-facing *Error for what.
func StoreErr(err error, what string) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrNoRows):
		return NotFound(what)
	}
	return fmt.Errorf("%s: %w", what, err)
}

// Ready reports whether the service can serve (database up, migrated).
func (s *Kernel) Ready(ctx context.Context) error { return s.d.Store.Ready(ctx) }
