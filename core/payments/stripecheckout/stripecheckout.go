// Package stripecheckout is live mode's hosted checkout: a
// checkout.Gateway that opens a Stripe Checkout Session for a credit
// pack or a draft. Stripe reports the session's outcome through a signed
// webhook, received by rest/webhooks/stripe; core decides what a payment,
// an expiry or a refund does (core/checkout/checkouts.go, docs/payments.md).
package stripecheckout

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/stripe/stripe-go/v85"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/checkout"
)

// Stripe accepts a Checkout Session's expires_at between 30 minutes and
// 24 hours after it is created. A checkout's own expiry is clamped into
// that window with a minute's margin each side, since Stripe measures from
// its clock when the request arrives.
const (
	MinSessionLifetime = 30*time.Minute + time.Minute
	MaxSessionLifetime = 24*time.Hour - time.Minute
)

// DefaultTimeout bounds one call to Stripe when no HTTP client is given.
const DefaultTimeout = 30 * time.Second

// Options configure a Gateway.
type Options struct {
	// SecretKey is the Stripe secret key (sk_live_… or, for a staging
	// server whose live mode should not move real money, sk_test_…).
	SecretKey string
	// BaseURL is faxhub's public origin: where the payer comes back to.
	BaseURL string
	// Links builds the console pages' URLs from their route names (the
	// router); nil: from the links' templates on BaseURL.
	Links core.Links
	// APIURL is Stripe's API origin; empty: https://api.stripe.com. Tests
	// point it at stripe-mock.
	APIURL string
	// HTTPClient makes the calls; nil: a client with DefaultTimeout.
	HTTPClient *http.Client
	// Now is the clock for the session expiry; nil: time.Now.
	Now func() time.Time
}

// Gateway is the live-mode checkout.Gateway.
type Gateway struct {
	sc      *stripe.Client
	baseURL string
	links   core.Links
	now     func() time.Time
}

var _ checkout.Gateway = (*Gateway)(nil)

// New builds a Gateway.
func New(o Options) (*Gateway, error) {
	if o.SecretKey == "" {
		return nil, errors.New("stripecheckout: a Stripe secret key is required")
	}
	if o.BaseURL == "" {
		return nil, errors.New("stripecheckout: the base URL is required")
	}
	hc := o.HTTPClient
	if hc == nil {
		hc = &http.Client{Timeout: DefaultTimeout}
	}
	cfg := &stripe.BackendConfig{
		HTTPClient: hc,
		// The library's own logger writes to stderr; errors come back to
		// core wrapped instead, and nothing of a request is logged.
		LeveledLogger: &stripe.LeveledLogger{Level: stripe.LevelNull},
		// Creating a session is idempotent by its key, so the library's
		// retries of network failures cannot open two.
		MaxNetworkRetries: stripe.Int64(2),
	}
	if o.APIURL != "" {
		cfg.URL = stripe.String(strings.TrimRight(o.APIURL, "/"))
	}
	api := stripe.GetBackendWithConfig(stripe.APIBackend, cfg)
	sc := stripe.NewClient(o.SecretKey, stripe.WithBackends(&stripe.Backends{API: api, Connect: api, Uploads: api, MeterEvents: api}))
	now := o.Now
	if now == nil {
		now = time.Now
	}
	return &Gateway{sc: sc, baseURL: strings.TrimRight(o.BaseURL, "/"), links: o.Links, now: now}, nil
}

// IdempotencyKey is the key a checkout's session is created with: a retry
// of the same checkout (a network failure after Stripe acted) gets the
// same session back instead of a second one.
func IdempotencyKey(checkoutID string) string { return "faxhub-checkout-" + checkoutID }

// SessionExpiry is when c's session expires at Stripe: c's expiry, clamped
// into the window Stripe accepts (MinSessionLifetime, MaxSessionLifetime
// from now).
func SessionExpiry(c *checkout.Checkout, now time.Time) time.Time {
	at := c.ExpiresAt
	if lo := now.Add(MinSessionLifetime); at.Before(lo) {
		at = lo
	}
	if hi := now.Add(MaxSessionLifetime); at.After(hi) {
		at = hi
	}
	return at.Truncate(time.Second)
}

// Start opens a Checkout Session for c: one line item of c's amount in USD
// named description, c's id as client_reference_id and in the metadata of
// the session and of its PaymentIntent, and the payer sent back to the
// console afterwards. It returns the session's URL and id.
func (g *Gateway) Start(ctx context.Context, c *checkout.Checkout, description string) (string, string, error) {
	if c.Mode != core.ModeLive {
		return "", "", fmt.Errorf("start stripe checkout %s: Stripe Checkout takes live-mode checkouts only, not %s", c.ID, c.Mode)
	}
	back, err := g.returnURL(c)
	if err != nil {
		return "", "", fmt.Errorf("start stripe checkout %s: return page: %w", c.ID, err)
	}
	meta := map[string]string{"checkout_id": c.ID}
	params := &stripe.CheckoutSessionCreateParams{
		Mode: stripe.String(string(stripe.CheckoutSessionModePayment)),
		LineItems: []*stripe.CheckoutSessionCreateLineItemParams{{
			Quantity: stripe.Int64(1),
			PriceData: &stripe.CheckoutSessionCreateLineItemPriceDataParams{
				Currency:    stripe.String(core.Currency),
				UnitAmount:  stripe.Int64(core.CentsUp(c.AmountMicros)),
				ProductData: &stripe.CheckoutSessionCreateLineItemPriceDataProductDataParams{Name: stripe.String(cmp.Or(description, "faxhub"))},
			},
		}},
		ClientReferenceID: stripe.String(c.ID),
		Metadata:          meta,
		PaymentIntentData: &stripe.CheckoutSessionCreatePaymentIntentDataParams{Metadata: meta},
		SuccessURL:        stripe.String(addQuery(back, "checkout", "paid")),
		CancelURL:         stripe.String(addQuery(back, "checkout", "canceled")),
		ExpiresAt:         stripe.Int64(SessionExpiry(c, g.now()).Unix()),
	}
	params.SetIdempotencyKey(IdempotencyKey(c.ID))
	sess, err := g.sc.V1CheckoutSessions.Create(ctx, params)
	if err != nil {
		return "", "", fmt.Errorf("create stripe checkout session for %s: %w", c.ID, err)
	}
	if sess.URL == "" || sess.ID == "" {
		return "", "", fmt.Errorf("create stripe checkout session for %s: Stripe answered without a session URL", c.ID)
	}
	return sess.URL, sess.ID, nil
}

// returnURL is the console page the payer comes back to: the draft's page
// for a draft (it shows the fax once paid), the number's page for a number
// (it shows provisioning), the dashboard for a pack (it shows the balance).
func (g *Gateway) returnURL(c *checkout.Checkout) (string, error) {
	link, pairs := core.LinkDashboard, []string(nil)
	switch {
	case c.Kind == checkout.KindDraft && c.DraftID != nil:
		link, pairs = core.LinkDraftPage, []string{"id", *c.DraftID}
	case c.Kind == checkout.KindNumber && c.NumberID != nil:
		link, pairs = core.LinkNumberPage, []string{"id", *c.NumberID}
	}
	cfg := core.Config{BaseURL: g.baseURL, APIURL: g.baseURL}
	return core.LinkURL(g.links, cfg, link, url.Values{"mode": {string(c.Mode)}}, pairs...)
}

func addQuery(u, k, v string) string {
	sep := "?"
	if strings.Contains(u, "?") {
		sep = "&"
	}
	return u + sep + url.QueryEscape(k) + "=" + url.QueryEscape(v)
}
