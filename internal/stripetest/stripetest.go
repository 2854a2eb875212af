// Package stripetest is a faithful local stand-in for the few Stripe
// endpoints the stripe payment method uses, for test mode and for tests:
//
//	POST /v1/test_helpers/shared_payment/granted_tokens  mint a test SPT (mppx's MPPX_STRIPE_SPT_URL)
//	POST /v1/payment_intents                              settle an SPT (confirm=true)
//	GET  /v1/payment_intents/{id}
//	POST /v1/refunds
//
// It behaves as Stripe does where the stripe method can tell: form bodies,
// Bearer test keys, Stripe's JSON error shape {"error":{type, code, message,
// param?, decline_code?}} with Stripe's statuses (400, 401, 402, 404),
// Idempotency-Key semantics (same key + same parameters → the saved answer
// with Idempotent-Replayed: true; same key + other parameters → 400
// idempotency_error; answers are saved only once an endpoint executed, i.e.
// 200 and 402, as Stripe documents), an SPT's usage limits (currency,
// max_amount, expires_at), single use, and its seller: a token settles only
// for the account whose network business profile it was granted to
// (seller_details[network_id]; WithProfile), never for another or when it
// was granted to none (resource_missing, as for another account's object).
//
// A usd PaymentIntent under 50 cents is refused (amount_too_small), as
// Stripe refuses it; other currencies' minimums are not modelled.
//
// Test payment methods, as Stripe names them: pm_card_visa and
// pm_card_mastercard mint tokens that succeed; pm_card_chargeDeclined and
// pm_card_insufficientFunds decline (402 card_error); pm_card_authenticationRequired
// leaves the intent in requires_action.
//
// Where Stripe's SPT preview is undocumented (the error codes of a used,
// expired or over-limit token) the stand-in answers invalid_request_error
// with param shared_payment_granted_token and codes of its own
// (shared_payment_granted_token_consumed, …_expired, …_usage_limit_exceeded).
//
// Every request runs whole against one state, serialized with every other
// request on that state (so concurrent requests with one key are serialized
// and the later ones are replays, where Stripe might answer 409 to a
// request racing one in flight). The state is in memory by default (one
// process; nothing survives a restart) or, WithDatabase, in the
// stripe_standin_* tables, shared by every process on that database: a
// token minted by one replica settles on another. Idempotency records are
// kept 24 hours, as Stripe keeps them.
package stripetest

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/faxhub/faxhub/internal/inproc"
)

const (
	maxBody        = 64 << 10
	maxIdempotency = 255
	maxMetaKeys    = 50
	maxMetaKey     = 40
	maxMetaValue   = 500
	minUSD         = 50 // cents: Stripe refuses smaller usd charges
	// idemTTL is how long an idempotency key is remembered, as at Stripe.
	idemTTL = 24 * time.Hour
)

// Kinds of stored objects.
const (
	kindToken  = "token"
	kindIntent = "intent"
	kindRefund = "refund"
	kindCharge = "charge" // a succeeded charge: what Charges counts
)

// Option configures a Server.
type Option func(*Server)

// WithClock sets the clock used for created times, token expiry and the
// age of idempotency records.
func WithClock(now func() time.Time) Option { return func(s *Server) { s.now = now } }

// DefaultProfile is the network business profile of the stand-in's seller
// account unless WithProfile names another.
const DefaultProfile = "profile_test_stripetest"

// WithProfile sets the network business profile (profile_…) of the seller
// account every accepted key acts as: the one profile whose shared payment
// tokens (minted with seller_details[network_id] set to it) this account
// may settle, as at Stripe, where a token is granted to one seller.
func WithProfile(profile string) Option { return func(s *Server) { s.profile = profile } }

// WithDatabase keeps the state in db's stripe_standin_objects and
// stripe_standin_idempotency tables (faxhub's migration 00015) instead of
// in memory, so every Server on one database is one stand-in. dialect is
// "sqlite" or "postgres". On SQLite db must begin transactions with the
// write lock (_txlock=immediate), as faxhub's writer pool does.
func WithDatabase(db *sql.DB, dialect string) Option {
	return func(s *Server) { s.st = &dbState{db: db, postgres: dialect == "postgres", dialect: dialect} }
}

// Server is the stand-in; it is an http.Handler.
type Server struct {
	now func() time.Time
	st  state
	// profile is the seller account's network business profile: only
	// tokens granted to it settle (WithProfile).
	profile string
}

type token struct {
	ID, PaymentMethod, Currency, NetworkID  string
	MaxAmount, ExpiresAt, Created, Captured int64
	DeactivatedAt                           int64
	DeactivatedReason                       string
}

type intent struct {
	ID, Status, Currency, Description, Token, PaymentMethod, LatestCharge string
	Amount, AmountReceived, Refunded, Created                             int64
	Metadata                                                              map[string]string
	LastPaymentError                                                      *apiError
}

type refund struct {
	ID, Intent, Currency, Reason, Status string
	Amount, Created                      int64
	Metadata                             map[string]string
}

type charge struct {
	ID, Intent string
	Amount     int64
}

// New returns a stand-in with an empty state in memory, or the state
// WithDatabase names.
func New(opts ...Option) *Server {
	s := &Server{now: time.Now, profile: DefaultProfile}
	for _, o := range opts {
		o(s)
	}
	if s.st == nil {
		s.st = newMemState()
	}
	return s
}

// Charges is the number of payment intents that succeeded (money moved),
// or -1 if the state could not be read (so a test comparing it fails).
func (s *Server) Charges() int { return s.count(kindCharge) }

// Refunds is the number of refunds made (money returned), or -1 if the
// state could not be read.
func (s *Server) Refunds() int { return s.count(kindRefund) }

func (s *Server) count(kind string) int {
	n := -1
	err := s.st.do(context.Background(), func(tx stateTx) error {
		var err error
		n, err = tx.count(kind)
		return err
	})
	if err != nil {
		return -1
	}
	return n
}

// Mint mints a test SPT for tests in Go, as the test helper endpoint does:
// paymentMethod is one of the pm_card_… test methods, max and currency
// its usage limits; it expires in an hour and is granted to the server's
// own profile (WithProfile), so it settles here.
func (s *Server) Mint(paymentMethod string, max int64, currency string) (string, error) {
	var id string
	var e *apiError
	err := s.st.do(context.Background(), func(tx stateTx) error {
		t, ae, err := s.mint(tx, paymentMethod, currency, s.profile, max, s.now().Add(time.Hour).Unix())
		if t != nil {
			id = t.ID
		}
		e = ae
		return err
	})
	if err != nil {
		return "", fmt.Errorf("stripetest: minting a token: %w", err)
	}
	if e != nil {
		return "", fmt.Errorf("stripetest: minting a token: %s", e.Message)
	}
	return id, nil
}

// apiError is Stripe's error object.
type apiError struct {
	status        int
	Type          string          `json:"type"`
	Code          string          `json:"code,omitempty"`
	DeclineCode   string          `json:"decline_code,omitempty"`
	Message       string          `json:"message"`
	Param         string          `json:"param,omitempty"`
	PaymentIntent json.RawMessage `json:"payment_intent,omitempty"`
}

func invalid(status int, code, param, msg string) *apiError {
	return &apiError{status: status, Type: "invalid_request_error", Code: code, Param: param, Message: msg}
}

// testMethods: the pm_card_… names the stand-in accepts, and what a charge
// with each does.
var testMethods = map[string]struct{ brand, last4, outcome, declineCode string }{
	"pm_card_visa":                   {"visa", "4242", "succeeded", ""},
	"pm_card_mastercard":             {"mastercard", "4444", "succeeded", ""},
	"pm_card_chargeDeclined":         {"visa", "0002", "declined", "generic_decline"},
	"pm_card_insufficientFunds":      {"visa", "9995", "declined", "insufficient_funds"},
	"pm_card_authenticationRequired": {"visa", "3184", "requires_action", ""},
}

// ServeHTTP routes as Stripe does; an unknown URL is a JSON 404.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Request-Id", "req_"+randomID(14))
	path := r.URL.Path
	var route func(stateTx, *http.Request, url.Values) (int, any, *apiError, error)
	switch {
	case r.Method == http.MethodPost && path == "/v1/test_helpers/shared_payment/granted_tokens":
		route = s.postToken
	case r.Method == http.MethodPost && path == "/v1/payment_intents":
		route = s.postIntent
	case r.Method == http.MethodPost && path == "/v1/refunds":
		route = s.postRefund
	case r.Method == http.MethodGet && strings.HasPrefix(path, "/v1/payment_intents/") && !strings.Contains(path[len("/v1/payment_intents/"):], "/"):
		route = s.getIntent
	default:
		writeError(w, invalid(http.StatusNotFound, "", "", fmt.Sprintf("Unrecognized request URL (%s: %s). Please see https://stripe.com/docs or we can help at https://support.stripe.com/.", r.Method, path)))
		return
	}
	key, e := authenticate(r)
	if e != nil {
		writeError(w, e)
		return
	}
	form := url.Values{}
	if r.Method == http.MethodPost {
		if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/x-www-form-urlencoded") {
			writeError(w, invalid(http.StatusBadRequest, "", "", "Invalid request: Stripe's API accepts application/x-www-form-urlencoded bodies."))
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, maxBody)
		if err := r.ParseForm(); err != nil {
			writeError(w, invalid(http.StatusBadRequest, "", "", "Invalid request: the body could not be read as a form (too large or malformed)."))
			return
		}
		form = r.PostForm
		for k, vs := range form {
			if len(vs) != 1 {
				writeError(w, invalid(http.StatusBadRequest, "parameter_invalid_string", k, fmt.Sprintf("Invalid string: %s was given more than once.", k)))
				return
			}
		}
	}
	idemKey := r.Header.Get("Idempotency-Key")
	if len(idemKey) > maxIdempotency {
		writeError(w, &apiError{status: http.StatusBadRequest, Type: "invalid_request_error", Message: fmt.Sprintf("Idempotency keys must be at most %d characters.", maxIdempotency)})
		return
	}
	endpoint := r.Method + " " + path
	// The record is found by a digest of the secret key and the
	// Idempotency-Key (keys are per account at Stripe; the secret key is
	// never stored) and holds a digest of the request, so both are
	// bounded.
	scope := digest(key, idemKey)
	fingerprint := digest(endpoint, form.Encode()) // Encode sorts by key: stable
	saveable := r.Method == http.MethodPost && idemKey != ""
	var status int
	var body []byte
	var replayed bool
	err := s.st.do(r.Context(), func(tx stateTx) error {
		now := s.now()
		if saveable {
			prev, err := tx.idem(scope, now.Add(-idemTTL).Unix())
			if err != nil {
				return err
			}
			if prev != nil {
				if prev.Fingerprint != fingerprint {
					e := &apiError{status: http.StatusBadRequest, Type: "idempotency_error", Message: fmt.Sprintf("Keys for idempotent requests can only be used with the same parameters they were first used with. Try using a key other than '%s' if you meant to execute a different request.", idemKey)}
					status, body = e.status, errorBody(e)
					return nil
				}
				status, body, replayed = prev.Status, prev.Body, true
				return nil
			}
		}
		st, v, e, err := route(tx, r, form)
		if err != nil {
			return err
		}
		if e != nil {
			st = e.status
			v = map[string]any{"error": e}
		}
		b, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("encoding the answer: %w", err)
		}
		status, body = st, b
		// Stripe saves an idempotent answer once the endpoint executed (a
		// charge attempt that succeeded or was declined), not a validation
		// failure, which a fixed retry may repeat with the same key.
		if saveable && (status == http.StatusOK || status == http.StatusPaymentRequired) {
			return tx.saveIdem(scope, saved{Fingerprint: fingerprint, Status: status, Body: body}, now.Unix(), now.Add(-idemTTL).Unix())
		}
		return nil
	})
	if err != nil {
		// The request's changes were rolled back: a retry is safe.
		writeError(w, &apiError{status: http.StatusInternalServerError, Type: "api_error", Message: "stripetest: the request could not be completed (state store); retry it"})
		return
	}
	if replayed {
		w.Header().Set("Idempotent-Replayed", "true")
	}
	if idemKey != "" {
		w.Header().Set("Idempotency-Key", idemKey)
	}
	writeRaw(w, status, body)
}

// digest is a hex SHA-256 of parts joined by NUL.
func digest(parts ...string) string {
	h := sha256.New()
	for i, p := range parts {
		if i > 0 {
			h.Write([]byte{0})
		}
		h.Write([]byte(p))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// authenticate accepts test-mode keys only (this stand-in never moves
// money), sent as Stripe takes them: "Bearer <key>" or HTTP Basic with the
// key as the user name and no password (mppx mints SPTs with Basic).
func authenticate(r *http.Request) (string, *apiError) {
	key, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		if user, pass, basic := r.BasicAuth(); basic && pass == "" {
			key, ok = user, true
		}
	}
	if !ok || key == "" {
		return "", &apiError{status: http.StatusUnauthorized, Type: "invalid_request_error", Message: "You did not provide an API key. You need to provide your API key in the Authorization header, using Bearer auth (e.g. 'Authorization: Bearer YOUR_SECRET_KEY')."}
	}
	if !strings.HasPrefix(key, "sk_test_") && !strings.HasPrefix(key, "rk_test_") {
		return "", &apiError{status: http.StatusUnauthorized, Type: "invalid_request_error", Message: "Invalid API Key provided: this test backend accepts only test-mode keys (sk_test_…, rk_test_…)."}
	}
	return key, nil
}

func (s *Server) postToken(tx stateTx, r *http.Request, f url.Values) (int, any, *apiError, error) {
	// Stripe's preview spec knows no metadata here: mppx sends
	// metadata[…] when it has some and, told "Received unknown parameter",
	// mints again without it; seller_details[network_id] is what mppx sends
	// in test mode and is accepted.
	if e := allowOnly(f, "payment_method", "usage_limits[currency]", "usage_limits[max_amount]", "usage_limits[expires_at]", "seller_details[network_id]", "customer", "shared_metadata[*]", "expand[*]"); e != nil {
		return 0, nil, e, nil
	}
	for _, p := range []string{"payment_method", "usage_limits[currency]", "usage_limits[max_amount]"} {
		if f.Get(p) == "" {
			return 0, nil, invalid(http.StatusBadRequest, "parameter_missing", p, "Missing required param: "+p+"."), nil
		}
	}
	max, err := strconv.ParseInt(f.Get("usage_limits[max_amount]"), 10, 64)
	if err != nil || max <= 0 {
		return 0, nil, invalid(http.StatusBadRequest, "parameter_invalid_integer", "usage_limits[max_amount]", "Invalid positive integer"), nil
	}
	var exp int64
	if v := f.Get("usage_limits[expires_at]"); v != "" {
		if exp, err = strconv.ParseInt(v, 10, 64); err != nil {
			return 0, nil, invalid(http.StatusBadRequest, "parameter_invalid_integer", "usage_limits[expires_at]", "Invalid integer: "+v), nil
		}
		if exp <= s.now().Unix() {
			return 0, nil, invalid(http.StatusBadRequest, "parameter_invalid_integer", "usage_limits[expires_at]", "usage_limits[expires_at] must be in the future."), nil
		}
	}
	t, e, err := s.mint(tx, f.Get("payment_method"), f.Get("usage_limits[currency]"), f.Get("seller_details[network_id]"), max, exp)
	if err != nil || e != nil {
		return 0, nil, e, err
	}
	return http.StatusOK, t.json(), nil, nil
}

func (s *Server) mint(tx stateTx, pm, currency, network string, max, exp int64) (*token, *apiError, error) {
	if _, ok := testMethods[pm]; !ok {
		return nil, invalid(http.StatusBadRequest, "resource_missing", "payment_method", fmt.Sprintf("No such PaymentMethod: '%s'; this test backend knows pm_card_visa, pm_card_mastercard, pm_card_chargeDeclined, pm_card_insufficientFunds and pm_card_authenticationRequired.", pm)), nil
	}
	if !validCurrency(currency) {
		return nil, invalid(http.StatusBadRequest, "parameter_invalid_string", "usage_limits[currency]", "Invalid currency: "+currency), nil
	}
	if max <= 0 {
		return nil, invalid(http.StatusBadRequest, "parameter_invalid_integer", "usage_limits[max_amount]", "Invalid positive integer"), nil
	}
	t := &token{ID: "spt_test_" + randomID(24), PaymentMethod: pm, Currency: currency, NetworkID: network, MaxAmount: max, ExpiresAt: exp, Created: s.now().Unix()}
	if err := tx.put(kindToken, t.ID, t.Created, t); err != nil {
		return nil, nil, err
	}
	return t, nil, nil
}

func (t *token) json() map[string]any {
	m := testMethods[t.PaymentMethod]
	var exp, deact, reason, network any
	if t.ExpiresAt != 0 {
		exp = t.ExpiresAt
	}
	if t.DeactivatedAt != 0 {
		deact, reason = t.DeactivatedAt, t.DeactivatedReason
	}
	if t.NetworkID != "" {
		network = t.NetworkID
	}
	return map[string]any{
		"id": t.ID, "object": "shared_payment.granted_token", "created": t.Created, "livemode": false,
		"deactivated_at": deact, "deactivated_reason": reason,
		"payment_method_details": map[string]any{"type": "card", "card": map[string]any{"brand": m.brand, "last4": m.last4}},
		"shared_metadata":        nil,
		"usage_details":          map[string]any{"amount_captured": map[string]any{"currency": t.Currency, "value": t.Captured}},
		"usage_limits":           map[string]any{"currency": t.Currency, "max_amount": t.MaxAmount, "expires_at": exp},
		"agent_details":          map[string]any{"network_business_profile": network},
	}
}

func (s *Server) postIntent(tx stateTx, r *http.Request, f url.Values) (int, any, *apiError, error) {
	if r.Header.Get("Stripe-Version") == "" {
		return 0, nil, invalid(http.StatusBadRequest, "", "", "Shared payment tokens are in preview: send a preview Stripe-Version header (e.g. 2026-07-29.preview)."), nil
	}
	if e := allowOnly(f, "amount", "currency", "shared_payment_granted_token", "confirm", "automatic_payment_methods[enabled]", "automatic_payment_methods[allow_redirects]", "description", "metadata[*]", "return_url"); e != nil {
		return 0, nil, e, nil
	}
	for _, p := range []string{"amount", "currency", "shared_payment_granted_token"} {
		if f.Get(p) == "" {
			return 0, nil, invalid(http.StatusBadRequest, "parameter_missing", p, "Missing required param: "+p+"."), nil
		}
	}
	amount, err := strconv.ParseInt(f.Get("amount"), 10, 64)
	if err != nil || amount <= 0 {
		return 0, nil, invalid(http.StatusBadRequest, "parameter_invalid_integer", "amount", "Invalid positive integer"), nil
	}
	currency := f.Get("currency")
	if !validCurrency(currency) {
		return 0, nil, invalid(http.StatusBadRequest, "parameter_invalid_string", "currency", "Invalid currency: "+currency), nil
	}
	// Stripe's minimum charge (only usd's here; the method offers usd).
	if currency == "usd" && amount < minUSD {
		return 0, nil, invalid(http.StatusBadRequest, "amount_too_small", "amount", fmt.Sprintf("Amount must be at least $0.%d usd", minUSD)), nil
	}
	if f.Get("confirm") != "true" {
		return 0, nil, invalid(http.StatusBadRequest, "", "confirm", "This test backend settles shared payment tokens only with confirm=true."), nil
	}
	if f.Get("automatic_payment_methods[enabled]") != "true" {
		return 0, nil, invalid(http.StatusBadRequest, "", "automatic_payment_methods[enabled]", "automatic_payment_methods[enabled] must be true."), nil
	}
	if f.Get("automatic_payment_methods[allow_redirects]") != "never" && f.Get("return_url") == "" {
		return 0, nil, invalid(http.StatusBadRequest, "", "return_url", "This PaymentIntent is configured to accept payment methods enabled in your Dashboard, some of which may require a full page redirect. Provide a return_url or set automatic_payment_methods[allow_redirects]=never."), nil
	}
	md, e := metadata(f)
	if e != nil {
		return 0, nil, e, nil
	}
	id := f.Get("shared_payment_granted_token")
	var t token
	ok, err := tx.get(kindToken, id, &t)
	if err != nil {
		return 0, nil, nil, err
	}
	// A token is granted to one seller, by its network business profile:
	// to any other account (and a token granted to no one, to every
	// account) it does not exist, as Stripe answers for another account's
	// object.
	if !ok || t.NetworkID != s.profile {
		return 0, nil, invalid(http.StatusBadRequest, "resource_missing", "shared_payment_granted_token", fmt.Sprintf("No such shared_payment_granted_token: '%s'", id)), nil
	}
	now := s.now().Unix()
	switch {
	case t.DeactivatedAt != 0:
		return 0, nil, invalid(http.StatusBadRequest, "shared_payment_granted_token_"+t.DeactivatedReason, "shared_payment_granted_token", "This shared payment token was "+t.DeactivatedReason+" and can no longer be used."), nil
	case t.ExpiresAt != 0 && now >= t.ExpiresAt:
		return 0, nil, invalid(http.StatusBadRequest, "shared_payment_granted_token_expired", "shared_payment_granted_token", "This shared payment token expired and can no longer be used."), nil
	case t.Currency != currency:
		return 0, nil, invalid(http.StatusBadRequest, "shared_payment_granted_token_usage_limit_exceeded", "shared_payment_granted_token", fmt.Sprintf("This shared payment token is limited to %s; the PaymentIntent is in %s.", t.Currency, currency)), nil
	case t.Captured+amount > t.MaxAmount:
		return 0, nil, invalid(http.StatusBadRequest, "shared_payment_granted_token_usage_limit_exceeded", "shared_payment_granted_token", fmt.Sprintf("The amount %d exceeds what this shared payment token may still capture (%d).", amount, t.MaxAmount-t.Captured)), nil
	}
	m := testMethods[t.PaymentMethod]
	pi := &intent{ID: "pi_" + randomID(24), Amount: amount, Currency: currency, Description: f.Get("description"), Token: id, PaymentMethod: "pm_" + randomID(24), Metadata: md, Created: now}
	var decline *apiError
	switch m.outcome {
	case "succeeded":
		pi.Status, pi.AmountReceived, pi.LatestCharge = "succeeded", amount, "ch_"+randomID(24)
		t.Captured += amount
		t.DeactivatedAt, t.DeactivatedReason = now, "consumed"
		if err := tx.put(kindToken, t.ID, t.Created, &t); err != nil {
			return 0, nil, nil, err
		}
		if err := tx.put(kindCharge, pi.LatestCharge, now, charge{ID: pi.LatestCharge, Intent: pi.ID, Amount: amount}); err != nil {
			return 0, nil, nil, err
		}
	case "requires_action":
		pi.Status = "requires_action"
	default:
		decline = &apiError{status: http.StatusPaymentRequired, Type: "card_error", Code: "card_declined", DeclineCode: m.declineCode, Message: "Your card was declined."}
		if m.declineCode == "insufficient_funds" {
			decline.Message = "Your card has insufficient funds."
		}
		// The intent keeps a copy without the intent in it.
		lpe := *decline
		pi.Status, pi.LastPaymentError, pi.LatestCharge = "requires_payment_method", &lpe, "ch_"+randomID(24)
	}
	if err := tx.put(kindIntent, pi.ID, now, pi); err != nil {
		return 0, nil, nil, err
	}
	if decline == nil {
		return http.StatusOK, pi.json(), nil, nil
	}
	decline.PaymentIntent, _ = json.Marshal(pi.json()) // plain maps: cannot fail
	return 0, nil, decline, nil
}

func (pi *intent) json() map[string]any {
	var desc, lpe, next, charge any
	if pi.Description != "" {
		desc = pi.Description
	}
	if pi.LastPaymentError != nil {
		lpe = map[string]any{"type": pi.LastPaymentError.Type, "code": pi.LastPaymentError.Code, "decline_code": pi.LastPaymentError.DeclineCode, "message": pi.LastPaymentError.Message}
	}
	if pi.Status == "requires_action" {
		next = map[string]any{"type": "use_stripe_sdk", "use_stripe_sdk": map[string]any{"type": "three_d_secure_redirect"}}
	}
	if pi.LatestCharge != "" {
		charge = pi.LatestCharge
	}
	md := pi.Metadata
	if md == nil {
		md = map[string]string{}
	}
	return map[string]any{
		"id": pi.ID, "object": "payment_intent", "amount": pi.Amount, "amount_received": pi.AmountReceived,
		"currency": pi.Currency, "status": pi.Status, "created": pi.Created, "livemode": false,
		"description": desc, "metadata": md, "payment_method": pi.PaymentMethod,
		"shared_payment_granted_token": pi.Token, "latest_charge": charge,
		"last_payment_error": lpe, "next_action": next, "capture_method": "automatic",
		"confirmation_method": "automatic", "payment_method_types": []string{"card"},
		"automatic_payment_methods": map[string]any{"enabled": true, "allow_redirects": "never"},
	}
}

func (s *Server) getIntent(tx stateTx, r *http.Request, _ url.Values) (int, any, *apiError, error) {
	id := strings.TrimPrefix(r.URL.Path, "/v1/payment_intents/")
	var pi intent
	if ok, err := tx.get(kindIntent, id, &pi); err != nil || !ok {
		if err != nil {
			return 0, nil, nil, err
		}
		return 0, nil, invalid(http.StatusNotFound, "resource_missing", "intent", fmt.Sprintf("No such payment_intent: '%s'", id)), nil
	}
	return http.StatusOK, pi.json(), nil, nil
}

var refundReasons = map[string]bool{"duplicate": true, "fraudulent": true, "requested_by_customer": true}

func (s *Server) postRefund(tx stateTx, r *http.Request, f url.Values) (int, any, *apiError, error) {
	if e := allowOnly(f, "payment_intent", "amount", "reason", "metadata[*]"); e != nil {
		return 0, nil, e, nil
	}
	id := f.Get("payment_intent")
	if id == "" {
		return 0, nil, invalid(http.StatusBadRequest, "parameter_missing", "payment_intent", "Missing required param: payment_intent."), nil
	}
	if reason := f.Get("reason"); reason != "" && !refundReasons[reason] {
		return 0, nil, invalid(http.StatusBadRequest, "parameter_invalid_string", "reason", "Invalid reason: must be one of duplicate, fraudulent, or requested_by_customer"), nil
	}
	md, e := metadata(f)
	if e != nil {
		return 0, nil, e, nil
	}
	var pi intent
	if ok, err := tx.get(kindIntent, id, &pi); err != nil || !ok {
		if err != nil {
			return 0, nil, nil, err
		}
		return 0, nil, invalid(http.StatusBadRequest, "resource_missing", "payment_intent", fmt.Sprintf("No such payment_intent: '%s'", id)), nil
	}
	if pi.Status != "succeeded" {
		return 0, nil, invalid(http.StatusBadRequest, "", "payment_intent", fmt.Sprintf("This PaymentIntent (%s) does not have a successful charge to refund.", id)), nil
	}
	left := pi.AmountReceived - pi.Refunded
	if left <= 0 {
		return 0, nil, invalid(http.StatusBadRequest, "charge_already_refunded", "", fmt.Sprintf("Charge %s has already been refunded.", pi.LatestCharge)), nil
	}
	amount := left
	if v := f.Get("amount"); v != "" {
		a, err := strconv.ParseInt(v, 10, 64)
		if err != nil || a <= 0 {
			return 0, nil, invalid(http.StatusBadRequest, "parameter_invalid_integer", "amount", "Invalid positive integer"), nil
		}
		if a > left {
			return 0, nil, invalid(http.StatusBadRequest, "amount_too_large", "amount", fmt.Sprintf("Refund amount (%d) is greater than unrefunded amount on charge (%d)", a, left)), nil
		}
		amount = a
	}
	pi.Refunded += amount
	re := &refund{ID: "re_" + randomID(24), Intent: id, Currency: pi.Currency, Reason: f.Get("reason"), Status: "succeeded", Amount: amount, Created: s.now().Unix(), Metadata: md}
	if err := tx.put(kindIntent, pi.ID, pi.Created, &pi); err != nil {
		return 0, nil, nil, err
	}
	if err := tx.put(kindRefund, re.ID, re.Created, re); err != nil {
		return 0, nil, nil, err
	}
	var reason any
	if re.Reason != "" {
		reason = re.Reason
	}
	if md == nil {
		md = map[string]string{}
	}
	return http.StatusOK, map[string]any{
		"id": re.ID, "object": "refund", "amount": re.Amount, "currency": re.Currency, "payment_intent": id,
		"charge": pi.LatestCharge, "status": re.Status, "reason": reason, "created": re.Created, "metadata": md,
	}, nil, nil
}

// allowOnly refuses parameters an endpoint does not know, as Stripe does;
// "p[*]" allows every p[…].
func allowOnly(f url.Values, allowed ...string) *apiError {
	keys := make([]string, 0, len(f))
	for k := range f {
		keys = append(keys, k)
	}
	sort.Strings(keys)
next:
	for _, k := range keys {
		for _, a := range allowed {
			if k == a || strings.HasSuffix(a, "[*]") && strings.HasPrefix(k, strings.TrimSuffix(a, "*]")) && strings.HasSuffix(k, "]") {
				continue next
			}
		}
		return invalid(http.StatusBadRequest, "parameter_unknown", k, "Received unknown parameter: "+k)
	}
	return nil
}

func metadata(f url.Values) (map[string]string, *apiError) {
	var md map[string]string
	for k, vs := range f {
		name, ok := strings.CutPrefix(k, "metadata[")
		if !ok {
			continue
		}
		name = strings.TrimSuffix(name, "]")
		if md == nil {
			md = map[string]string{}
		}
		if name == "" || len(name) > maxMetaKey {
			return nil, invalid(http.StatusBadRequest, "parameter_invalid_string", k, fmt.Sprintf("Metadata keys must be 1 to %d characters.", maxMetaKey))
		}
		if len(vs[0]) > maxMetaValue {
			return nil, invalid(http.StatusBadRequest, "parameter_invalid_string", k, fmt.Sprintf("Metadata values can have up to %d characters.", maxMetaValue))
		}
		md[name] = vs[0]
	}
	if len(md) > maxMetaKeys {
		return nil, invalid(http.StatusBadRequest, "parameter_invalid_string", "metadata", fmt.Sprintf("You can specify up to %d metadata keys.", maxMetaKeys))
	}
	return md, nil
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

const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

func randomID(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return string(b)
}

func writeError(w http.ResponseWriter, e *apiError) { writeRaw(w, e.status, errorBody(e)) }

func errorBody(e *apiError) []byte {
	body, _ := json.Marshal(map[string]any{"error": e}) // strings and RawMessage: cannot fail
	return body
}

func writeRaw(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Stripe-Version", "2026-07-29.preview")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// Transport serves requests with this stand-in in process, without a
// listener: test mode can give the stripe method
// &http.Client{Transport: s.Transport()} and any base URL. The request's
// context is honoured before the call; the answer is whole when returned.
func (s *Server) Transport() http.RoundTripper { return inproc.Transport(s) }
