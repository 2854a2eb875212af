// Package stripe is the "stripe" payment method of machine payments (MPP): it
// settles a card shared payment token (SPT) a paying machine presents with
// ONE Stripe PaymentIntent call, and refunds through Stripe's refunds API.
//
// It speaks Stripe's form API over net/http because stripe-go on the module
// proxy has no shared_payment_granted_token field (SPTs are a private
// preview; see docs/payments.md and the research notes). It never imports
// core: core decides the amount, the currency and the idempotency key (it
// derives the key from the challenge id and the token, as mppx does with
// mpp_{challengeId}_{spt}); this package only translates.
//
// Secrets: the secret key and the SPT are never logged, never put into an
// error, and scrubbed from every message Stripe sends back before it reaches
// a Result or an error.
package stripe

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/faxhub/faxhub/core/payments"
)

// Name is the method's name in payment offers and charge records.
const Name = "stripe"

// Defaults of Options.
const (
	DefaultBaseURL    = "https://api.stripe.com"
	DefaultAPIVersion = "2026-07-29.preview"
	DefaultTimeout    = 30 * time.Second
)

// Bounds. Stripe's own limits where it has them (idempotency keys ≤ 255,
// metadata ≤ 50 keys of ≤ 40 chars with values ≤ 500); a response body
// larger than maxResponse is refused rather than read.
const (
	maxIdempotencyKey = 255
	maxSPT            = 255
	maxCredential     = 4 << 10
	maxMetadataKeys   = 50
	maxMetadataKey    = 40
	maxMetadataValue  = 500
	maxDescription    = 1000
	maxResponse       = 1 << 20
	maxMessage        = 500
)

// Options configures the method.
type Options struct {
	// SecretKey is the Stripe secret key (sk_live_…, sk_test_… or a
	// restricted rk_…). Required.
	SecretKey string
	// BaseURL is Stripe's API origin; a test backend's in tests and in
	// test mode. Default DefaultBaseURL.
	BaseURL string
	// APIVersion is sent as Stripe-Version; SPTs need the preview.
	APIVersion string
	// NetworkID is the Stripe Business Network profile (profile_…) that
	// offers carry as methodDetails.networkId. This package does not send
	// it to Stripe (the PaymentIntent call has no such field); it keeps it
	// so the one place that configures Stripe configures the offer too.
	NetworkID string
	// HTTPClient defaults to a client of its own (never
	// http.DefaultClient, whose settings are process-wide).
	HTTPClient *http.Client
	// Timeout bounds each call to Stripe. Default DefaultTimeout.
	Timeout time.Duration
}

// Method is the stripe payment method.
type Method struct {
	secret    string
	base      string
	version   string
	networkID string
	client    *http.Client
	timeout   time.Duration
}

var _ payments.PaymentMethod = (*Method)(nil)

// New returns the method, or an error when the options cannot work (no
// secret key, a base URL that is not an absolute http(s) URL).
func New(o Options) (*Method, error) {
	if o.SecretKey == "" {
		return nil, errors.New("stripe payment method: a secret key is required")
	}
	if strings.ContainsAny(o.SecretKey, " \t\r\n") {
		return nil, errors.New("stripe payment method: the secret key contains white space")
	}
	m := &Method{secret: o.SecretKey, base: o.BaseURL, version: o.APIVersion, networkID: o.NetworkID, client: o.HTTPClient, timeout: o.Timeout}
	if m.base == "" {
		m.base = DefaultBaseURL
	}
	u, err := url.Parse(m.base)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.RawQuery != "" {
		return nil, fmt.Errorf("stripe payment method: base URL %q must be an absolute http(s) URL without a query", m.base)
	}
	m.base = strings.TrimRight(m.base, "/")
	if m.version == "" {
		m.version = DefaultAPIVersion
	}
	if m.client == nil {
		m.client = &http.Client{}
	}
	if m.timeout <= 0 {
		m.timeout = DefaultTimeout
	}
	return m, nil
}

// Name implements payments.PaymentMethod.
func (*Method) Name() string { return Name }

// NetworkID is the configured Stripe profile for offers' methodDetails.
func (m *Method) NetworkID() string { return m.networkID }

// credential is the MPP stripe payload: {"spt":"spt_…","externalId"?:…}.
type credential struct {
	SPT        string  `json:"spt"`
	ExternalID *string `json:"externalId,omitempty"`
}

// parseCredential is strict: one JSON object, only the two known members,
// an spt that looks like one. Anything else is the payer's mistake (a
// verdict, StatusInvalid), never an error.
func parseCredential(raw json.RawMessage) (credential, string) {
	const usage = `the stripe credential payload must be {"spt":"spt_…"} with an optional "externalId"`
	if len(raw) == 0 || len(raw) > maxCredential {
		return credential{}, usage
	}
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	var c credential
	if err := dec.Decode(&c); err != nil {
		return credential{}, usage
	}
	if _, err := dec.Token(); err != io.EOF {
		return credential{}, usage
	}
	if !validSPT(c.SPT) {
		return credential{}, usage
	}
	return c, ""
}

// validSPT: Stripe ids are ASCII letters, digits and underscores.
func validSPT(s string) bool {
	if !strings.HasPrefix(s, "spt_") || len(s) <= len("spt_") || len(s) > maxSPT {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// Charge implements payments.PaymentMethod with one
// POST /v1/payment_intents (confirm=true).
//
// Verdicts: only "succeeded" pays (StatusSucceeded, Reference pi_…);
// requires_action → StatusRequiresAction; requires_payment_method and
// canceled, and a 402 card_error → StatusDeclined with Stripe's message; a
// token Stripe does not know or will not use (an invalid_request_error
// about shared_payment_granted_token) → StatusInvalid. No verdict (an
// error; retry with the same key): 429, 5xx, 409 (a concurrent request with
// the key), timeouts, connection failures, an idempotency_error (the key
// was used with other parameters: a caller's bug), an authentication error,
// "processing".
//
// Replays: a response with Idempotent-Replayed: true is the answer to the
// first request with this key, i.e. the same charge. mppx rejects a
// replayed success because its keys are single-use; our port is
// idempotent by contract (Charge again with the same key reports the first
// outcome), so a replayed success is reported as succeeded with the same
// pi_ reference, and a replayed refusal stays what it says. Core's single
// use of challenges is what stops a credential paying twice, not this.
func (m *Method) Charge(ctx context.Context, r payments.ChargeRequest) (payments.Result, error) {
	if err := checkKey(r.IdempotencyKey); err != nil {
		return payments.Result{}, fmt.Errorf("stripe charge: %w", err)
	}
	if r.Amount <= 0 {
		return payments.Result{}, fmt.Errorf("stripe charge: amount must be positive, got %d", r.Amount)
	}
	if !validCurrency(r.Currency) {
		return payments.Result{}, fmt.Errorf("stripe charge: currency %q is not a lowercase ISO 4217 code", r.Currency)
	}
	if len(r.Description) > maxDescription {
		return payments.Result{}, fmt.Errorf("stripe charge: description longer than %d bytes", maxDescription)
	}
	c, bad := parseCredential(r.Credential)
	if bad != "" {
		return payments.Result{Status: payments.StatusInvalid, Message: bad}, nil
	}
	form := url.Values{}
	form.Set("amount", strconv.FormatInt(r.Amount, 10))
	form.Set("currency", r.Currency)
	form.Set("shared_payment_granted_token", c.SPT)
	form.Set("confirm", "true")
	form.Set("automatic_payment_methods[enabled]", "true")
	form.Set("automatic_payment_methods[allow_redirects]", "never")
	if r.Description != "" {
		form.Set("description", r.Description)
	}
	if err := addMetadata(form, r.Metadata); err != nil {
		return payments.Result{}, fmt.Errorf("stripe charge: %w", err)
	}
	scrub := m.scrubber(c.SPT)
	resp, err := m.post(ctx, "/v1/payment_intents", r.IdempotencyKey, form)
	if err != nil {
		// A transport error names the URL and the cause, never the form.
		return payments.Result{}, fmt.Errorf("stripe charge: %w", err)
	}
	switch {
	case resp.status == http.StatusOK:
		var pi paymentIntent
		if err := json.Unmarshal(resp.body, &pi); err != nil || !strings.HasPrefix(pi.ID, "pi_") {
			return payments.Result{}, errors.New("stripe charge: a 200 answer that is not a payment intent")
		}
		return intentResult(pi, scrub)
	case resp.status == http.StatusPaymentRequired && resp.err.Type == "card_error":
		if resp.err.Code == "authentication_required" {
			return payments.Result{Status: payments.StatusRequiresAction, Message: message(&resp.err, scrub, "the card requires authentication")}, nil
		}
		return payments.Result{Status: payments.StatusDeclined, Message: message(&resp.err, scrub, "the card was declined")}, nil
	case resp.err.Type == "invalid_request_error" && resp.err.Param == "shared_payment_granted_token" && (resp.status == http.StatusBadRequest || resp.status == http.StatusNotFound):
		return payments.Result{Status: payments.StatusInvalid, Message: message(&resp.err, scrub, "Stripe does not accept this shared payment token")}, nil
	}
	return payments.Result{}, fmt.Errorf("stripe charge: %s", resp.describe(scrub))
}

// paymentIntent is the part of a PaymentIntent this method reads.
type paymentIntent struct {
	ID               string     `json:"id"`
	Object           string     `json:"object"`
	Status           string     `json:"status"`
	LastPaymentError *stripeErr `json:"last_payment_error"`
}

func intentResult(pi paymentIntent, scrub func(string) string) (payments.Result, error) {
	switch pi.Status {
	case "succeeded":
		return payments.Result{Status: payments.StatusSucceeded, Reference: pi.ID}, nil
	case "requires_action":
		return payments.Result{Status: payments.StatusRequiresAction, Message: "the card requires an action of its holder (e.g. 3-D Secure) before it can be charged; nothing was charged"}, nil
	case "requires_payment_method":
		return payments.Result{Status: payments.StatusDeclined, Message: message(pi.LastPaymentError, scrub, "the payment method was refused; nothing was charged")}, nil
	case "requires_confirmation":
		// confirm=true was sent, so Stripe did not confirm: nothing moved
		// and retrying the key replays this; a new payment is needed.
		return payments.Result{Status: payments.StatusDeclined, Message: "Stripe did not confirm the payment; nothing was charged"}, nil
	case "canceled":
		return payments.Result{Status: payments.StatusDeclined, Message: "the payment was canceled; nothing was charged"}, nil
	case "processing":
		// Not a verdict yet: money may still move. Core must not serve
		// nor refuse on it; the id lets an operator follow it.
		return payments.Result{}, fmt.Errorf("stripe charge: payment intent %s is still processing", pi.ID)
	}
	return payments.Result{}, fmt.Errorf("stripe charge: payment intent %s has unexpected status %q", pi.ID, pi.Status)
}

// refundReasons are the reasons Stripe knows; core's free-text reasons map
// to them, and the text itself goes to metadata[reason].
var refundReasons = map[string]string{
	"duplicate":             "duplicate",
	"fraudulent":            "fraudulent",
	"requested_by_customer": "requested_by_customer",
}

// Refund implements payments.PaymentMethod with POST /v1/refunds. A refund
// Stripe accepted as "pending" is reported as succeeded (Stripe has taken
// it and will settle it; it cannot be taken back by us); failed and
// canceled are StatusDeclined; charge_already_refunded (another key
// refunded it) is StatusDeclined with Stripe's message. Errors as Charge.
func (m *Method) Refund(ctx context.Context, r payments.RefundRequest) (payments.Result, error) {
	if err := checkKey(r.IdempotencyKey); err != nil {
		return payments.Result{}, fmt.Errorf("stripe refund: %w", err)
	}
	if !strings.HasPrefix(r.Reference, "pi_") || !validID(r.Reference) {
		return payments.Result{}, errors.New("stripe refund: the reference must be a payment intent id (pi_…)")
	}
	if r.Amount < 0 {
		return payments.Result{}, fmt.Errorf("stripe refund: amount must not be negative, got %d", r.Amount)
	}
	form := url.Values{}
	form.Set("payment_intent", r.Reference)
	if r.Amount > 0 { // 0: the whole remaining amount, Stripe's default
		form.Set("amount", strconv.FormatInt(r.Amount, 10))
	}
	if r.Reason != "" {
		if sr, ok := refundReasons[r.Reason]; ok {
			form.Set("reason", sr)
		}
		reason := r.Reason
		if len(reason) > maxMetadataValue {
			reason = reason[:maxMetadataValue]
		}
		form.Set("metadata[reason]", reason)
	}
	scrub := m.scrubber("")
	resp, err := m.post(ctx, "/v1/refunds", r.IdempotencyKey, form)
	if err != nil {
		return payments.Result{}, fmt.Errorf("stripe refund: %w", err)
	}
	if resp.status == http.StatusOK {
		var re struct {
			ID     string `json:"id"`
			Status string `json:"status"`
		}
		if err := json.Unmarshal(resp.body, &re); err != nil || !strings.HasPrefix(re.ID, "re_") {
			return payments.Result{}, errors.New("stripe refund: a 200 answer that is not a refund")
		}
		switch re.Status {
		case "succeeded", "pending":
			return payments.Result{Status: payments.StatusSucceeded, Reference: re.ID}, nil
		case "failed", "canceled":
			return payments.Result{Status: payments.StatusDeclined, Reference: re.ID, Message: "Stripe reports the refund " + re.Status}, nil
		}
		return payments.Result{}, fmt.Errorf("stripe refund: refund %s has unexpected status %q", re.ID, re.Status)
	}
	if resp.status == http.StatusBadRequest && resp.err.Code == "charge_already_refunded" {
		return payments.Result{Status: payments.StatusDeclined, Message: message(&resp.err, scrub, "the charge was refunded already")}, nil
	}
	return payments.Result{}, fmt.Errorf("stripe refund: %s", resp.describe(scrub))
}

// stripeErr is Stripe's error object.
type stripeErr struct {
	Type        string `json:"type"`
	Code        string `json:"code"`
	DeclineCode string `json:"decline_code"`
	Message     string `json:"message"`
	Param       string `json:"param"`
}

type response struct {
	status int
	body   []byte
	err    stripeErr // zero unless the body is {"error":{…}}
}

// describe says what went wrong without the secret or the token: the
// status, Stripe's type and code, and its (scrubbed) message.
func (r response) describe(scrub func(string) string) string {
	s := fmt.Sprintf("Stripe answered %d", r.status)
	if r.err.Type != "" {
		s += " " + r.err.Type
	}
	if r.err.Code != "" {
		s += " (" + r.err.Code + ")"
	}
	if r.err.Message != "" {
		s += ": " + clip(scrub(r.err.Message))
	}
	switch {
	case r.status == http.StatusTooManyRequests || r.status >= 500 || r.status == http.StatusConflict:
		s += "; retry with the same idempotency key"
	case r.err.Type == "idempotency_error":
		s += "; the idempotency key was used with other parameters"
	}
	return s
}

func message(e *stripeErr, scrub func(string) string, fallback string) string {
	if e == nil || e.Message == "" {
		return fallback
	}
	return clip(scrub(e.Message))
}

func clip(s string) string {
	if len(s) > maxMessage {
		return s[:maxMessage] + "…"
	}
	return s
}

// scrubber removes the secret key and the token from text that came from
// Stripe or from net/http (Stripe's messages quote the id they refuse:
// "No such shared_payment_granted_token: 'spt_…'"), and, in case an
// answer quotes others, anything shaped like a token or an API key.
func (m *Method) scrubber(spt string) func(string) string {
	return func(s string) string {
		s = strings.ReplaceAll(s, m.secret, "[secret key]")
		if spt != "" {
			s = strings.ReplaceAll(s, spt, "spt_[redacted]")
		}
		s = secretShaped.ReplaceAllString(s, "${1}[redacted]")
		return s
	}
}

// secretShaped matches Stripe secrets and tokens: API keys (sk_, rk_, in
// either mode) and shared payment tokens. Compiled once, never mutated.
var secretShaped = regexp.MustCompile(`\b((?:sk|rk)_(?:live|test)_|spt_)[A-Za-z0-9_]+`)

// post makes one form call. Transport failures and timeouts are errors; an
// HTTP answer of any status is a response.
func (m *Method) post(ctx context.Context, path, key string, form url.Values) (response, error) {
	ctx, cancel := context.WithTimeout(ctx, m.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, m.base+path, strings.NewReader(form.Encode()))
	if err != nil {
		return response{}, fmt.Errorf("building the request to %s: %w", path, err)
	}
	req.Header.Set("Authorization", "Bearer "+m.secret)
	req.Header.Set("Stripe-Version", m.version)
	req.Header.Set("Idempotency-Key", key)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	res, err := m.client.Do(req)
	if err != nil {
		// *url.Error names the URL (no secret in it) and the cause.
		return response{}, fmt.Errorf("calling Stripe %s: %w", path, err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, maxResponse+1))
	if err != nil {
		return response{}, fmt.Errorf("reading Stripe's answer to %s: %w", path, err)
	}
	if len(body) > maxResponse {
		return response{}, fmt.Errorf("the answer of Stripe to %s is larger than %d bytes", path, maxResponse)
	}
	// Idempotent-Replayed: true needs no branch: a replay is the first
	// answer to this key, and Charge's verdict on it is the same (see
	// Charge).
	out := response{status: res.StatusCode, body: body}
	if res.StatusCode != http.StatusOK {
		var e struct {
			Error stripeErr `json:"error"`
		}
		if json.Unmarshal(body, &e) == nil {
			out.err = e.Error
		}
	}
	return out, nil
}

func checkKey(k string) error {
	if k == "" {
		return errors.New("an idempotency key is required")
	}
	if len(k) > maxIdempotencyKey {
		return fmt.Errorf("the idempotency key is longer than %d bytes", maxIdempotencyKey)
	}
	for i := 0; i < len(k); i++ {
		if k[i] < 0x21 || k[i] > 0x7e {
			return errors.New("the idempotency key must be printable ASCII without spaces")
		}
	}
	return nil
}

func validCurrency(c string) bool {
	if len(c) != 3 {
		return false
	}
	for i := 0; i < 3; i++ {
		if c[i] < 'a' || c[i] > 'z' {
			return false
		}
	}
	return true
}

func validID(s string) bool {
	if len(s) > maxSPT {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

func addMetadata(form url.Values, md map[string]string) error {
	if len(md) > maxMetadataKeys {
		return fmt.Errorf("more than %d metadata keys", maxMetadataKeys)
	}
	for k, v := range md {
		if k == "" || len(k) > maxMetadataKey || strings.ContainsAny(k, "[]") {
			return fmt.Errorf("metadata key %q is empty, longer than %d bytes or has brackets", clip(k), maxMetadataKey)
		}
		if len(v) > maxMetadataValue {
			return fmt.Errorf("metadata %q is longer than %d bytes", k, maxMetadataValue)
		}
		form.Set("metadata["+k+"]", v)
	}
	return nil
}
