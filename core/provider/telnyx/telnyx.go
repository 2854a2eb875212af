// Package telnyx is the fax provider of live mode: Telnyx Programmable Fax
// and its number inventory, over Telnyx's REST API v2 with plain net/http,
// and the signed webhook through which Telnyx reports what happened
// (rest/webhooks/telnyx/webhook.go).
//
// Sending is asynchronous: Send hands Telnyx a media_url where faxhub
// serves the document (Telnyx fetches it itself, refusing redirects) and
// a client_state naming the fax and attempt; the call's end arrives as a
// fax.delivered or fax.failed webhook carrying that client_state back.
// Telnyx has no idempotency key for faxes, so an attempt resumed after a
// crash (core sends the same attempt again) may dial twice; core records
// only the first outcome of an attempt.
//
// Number orders carry the faxhub number id as customer_reference, and an
// order is looked up by it before a new one is placed, so an order
// retried after a crash does not buy the number twice.
package telnyx

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/faxes"
	"github.com/faxhub/faxhub/core/inbox"
	"github.com/faxhub/faxhub/core/numbers"
)

// Name is the provider name recorded on attempts, numbers and received faxes.
const Name = "telnyx"

// DefaultAPIURL is Telnyx's API origin.
const DefaultAPIURL = "https://api.telnyx.com"

// maxResponseBytes bounds what is read of one API answer: a page of
// available numbers is the largest, a few tens of KiB.
const maxResponseBytes = 1 << 20

// defaultTimeout bounds one API call when the caller's client has none.
const defaultTimeout = 30 * time.Second

// Config configures the provider.
type Config struct {
	// APIKey is the Telnyx API v2 key (KEY…); never logged.
	APIKey string
	// ConnectionID is the fax application (connection) faxes go out on
	// and numbers are assigned to.
	ConnectionID string
	// DefaultFrom (E.164, optional) is the caller id of a fax sent
	// without one of the owner's numbers.
	DefaultFrom string
	// APIURL replaces DefaultAPIURL (the stand-in in tests).
	APIURL string
	// Quality is the fax resolution asked for (default "high": fine mode).
	Quality    string
	HTTPClient *http.Client
	Now        func() time.Time
	Logger     *slog.Logger
}

// Provider is the Telnyx fax and number provider.
type Provider struct {
	cfg  Config
	base *url.URL
}

var (
	_ faxes.Provider     = (*Provider)(nil)
	_ faxes.Canceler     = (*Provider)(nil)
	_ numbers.Provider   = (*Provider)(nil)
	_ inbox.InboundMedia = (*Provider)(nil)
)

// New checks cfg and returns a provider.
func New(cfg Config) (*Provider, error) {
	switch {
	case cfg.APIKey == "":
		return nil, errors.New("telnyx: the API key is required")
	case cfg.ConnectionID == "":
		return nil, errors.New("telnyx: the connection id is required")
	}
	if cfg.APIURL == "" {
		cfg.APIURL = DefaultAPIURL
	}
	base, err := url.Parse(strings.TrimRight(cfg.APIURL, "/"))
	if err != nil || (base.Scheme != "https" && base.Scheme != "http") || base.Host == "" {
		return nil, fmt.Errorf("telnyx: the API URL %q is not an http(s) origin", cfg.APIURL)
	}
	if cfg.Quality == "" {
		cfg.Quality = "high"
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{Timeout: defaultTimeout}
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Provider{cfg: cfg, base: base}, nil
}

// Name is "telnyx".
func (p *Provider) Name() string { return Name }

// ClientState is the client_state Send gives Telnyx for an attempt; the
// webhook (rest/webhooks/telnyx) reads the fax and attempt back from it
// with ParseClientState.
func ClientState(faxID, attemptID string) string {
	return base64.StdEncoding.EncodeToString([]byte(faxID + " " + attemptID))
}

// ParseClientState reverses ClientState; ok is false for a state faxhub
// did not set (a fax sent by another integration on the account).
func ParseClientState(s string) (faxID, attemptID string, ok bool) {
	if s == "" || len(s) > 512 {
		return "", "", false
	}
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return "", "", false
	}
	faxID, attemptID, ok = strings.Cut(string(b), " ")
	if !ok || !strings.HasPrefix(faxID, core.PrefixFax) || attemptID == "" || strings.ContainsAny(attemptID, " \n") {
		return "", "", false
	}
	return faxID, attemptID, true
}

// apiError is Telnyx's error document: {"errors":[{code,title,detail,source:{pointer}}]}.
type apiError struct {
	Status int
	Errors []struct {
		Code   string `json:"code"`
		Title  string `json:"title"`
		Detail string `json:"detail"`
		Source struct {
			Pointer string `json:"pointer"`
		} `json:"source"`
	} `json:"errors"`
}

func (e *apiError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "telnyx answered %d", e.Status)
	for i, x := range e.Errors {
		if i == 3 {
			break
		}
		fmt.Fprintf(&b, "; %s %s", x.Code, cut(x.Title, 120))
		if x.Detail != "" {
			fmt.Fprintf(&b, ": %s", cut(x.Detail, 200))
		}
		if x.Source.Pointer != "" {
			fmt.Fprintf(&b, " (%s)", cut(x.Source.Pointer, 60))
		}
	}
	return b.String()
}

// about reports whether an error names the field at pointer (like "/to")
// or mentions word in its title or detail.
func (e *apiError) about(pointer string, words ...string) bool {
	for _, x := range e.Errors {
		if x.Source.Pointer == pointer {
			return true
		}
		text := strings.ToLower(x.Title + " " + x.Detail)
		for _, w := range words {
			if strings.Contains(text, w) {
				return true
			}
		}
	}
	return false
}

// names reports whether an error points at the field at pointer.
func (e *apiError) names(pointer string) bool {
	for _, x := range e.Errors {
		if x.Source.Pointer == pointer {
			return true
		}
	}
	return false
}

func cut(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// call sends one API request with the key and decodes a 2xx answer's JSON
// into out (when not nil). A non-2xx answer is an *apiError.
func (p *Provider) call(ctx context.Context, method, path string, query url.Values, body, out any) error {
	u := *p.base
	u.Path = p.base.Path + path
	u.RawQuery = query.Encode()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), rd)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+p.cfg.APIKey)
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := p.cfg.HTTPClient.Do(req)
	if err != nil {
		// The error names the URL, which carries no secret (the key is a
		// header and media URLs are in bodies).
		return err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes+1))
	if err != nil {
		return fmt.Errorf("read the answer: %w", err)
	}
	if len(raw) > maxResponseBytes {
		return fmt.Errorf("the answer is larger than %d bytes", maxResponseBytes)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		e := &apiError{Status: resp.StatusCode}
		_ = json.Unmarshal(raw, e)
		return e
	}
	if out == nil || len(bytes.TrimSpace(raw)) == 0 {
		return nil
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("decode the answer: %w", err)
	}
	return nil
}

// Send asks Telnyx to fax the document at req.MediaURL to req.To. An
// answer that the number is bad is a final invalid_number failure, one
// that the document is bad a final media_error; anything else Telnyx or
// the network fails with is returned as an error, which core records as a
// retryable provider_error.
func (p *Provider) Send(ctx context.Context, req faxes.ProviderRequest) (faxes.ProviderResult, error) {
	if req.MediaURL == "" {
		return faxes.ProviderResult{}, fmt.Errorf("telnyx fax %s: no media URL to give Telnyx", req.FaxID)
	}
	from := cmpOr(req.From, p.cfg.DefaultFrom)
	if from == "" {
		return faxes.ProviderResult{}, fmt.Errorf("telnyx fax %s: no caller id: set FAXHUB_TELNYX_FROM, or send from one of the owner's numbers", req.FaxID)
	}
	body := map[string]any{
		"connection_id": p.cfg.ConnectionID,
		"to":            req.To,
		"from":          from,
		"media_url":     req.MediaURL,
		"client_state":  ClientState(req.FaxID, req.AttemptID),
		"quality":       p.quality(req.Resolution),
	}
	// The header line is in the PDF already; Telnyx's own equivalent is
	// the caller name the receiving side may show.
	if name := displayName(req.Header); name != "" {
		body["from_display_name"] = name
	}
	var out struct {
		Data struct {
			ID     string `json:"id"`
			Status string `json:"status"`
		} `json:"data"`
	}
	err := p.call(ctx, http.MethodPost, "/v2/faxes", nil, body, &out)
	var ae *apiError
	switch {
	case errors.As(err, &ae) && ae.Status >= 400 && ae.Status < 500 && ae.Status != http.StatusTooManyRequests &&
		ae.Status != http.StatusUnauthorized && ae.Status != http.StatusForbidden:
		if ae.names("/from") || ae.names("/connection_id") {
			// Our configuration, not the fax: retried as provider_error
			// (and logged by core) until the operator fixes it.
			return faxes.ProviderResult{}, fmt.Errorf("telnyx fax %s: %w", req.FaxID, err)
		}
		if ae.about("/to", "number", "destination") {
			return faxes.ProviderResult{Status: faxes.AttemptFailed, FailureCode: faxes.FailureInvalidNumber, FailureReason: ae.Error()}, nil
		}
		if ae.about("/media_url", "media", "file") {
			return faxes.ProviderResult{Status: faxes.AttemptFailed, FailureCode: faxes.FailureMedia, FailureReason: ae.Error()}, nil
		}
		return faxes.ProviderResult{}, fmt.Errorf("telnyx fax %s: %w", req.FaxID, err)
	case err != nil:
		return faxes.ProviderResult{}, fmt.Errorf("telnyx fax %s: %w", req.FaxID, err)
	case out.Data.ID == "":
		return faxes.ProviderResult{}, fmt.Errorf("telnyx fax %s: the answer names no fax id", req.FaxID)
	}
	p.cfg.Logger.InfoContext(ctx, "telnyx fax accepted", "fax", req.FaxID, "attempt", req.AttemptID, "telnyx_fax", out.Data.ID)
	return faxes.ProviderResult{Status: faxes.AttemptSending, ProviderRef: out.Data.ID}, nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// CancelSend asks Telnyx to call back a fax it is sending; the outcome
// arrives as a fax.failed (user_canceled) or fax.delivered webhook.
func (p *Provider) CancelSend(ctx context.Context, providerRef string) error {
	if providerRef == "" {
		return errors.New("telnyx cancel: no fax id")
	}
	if err := p.call(ctx, http.MethodPost, "/v2/faxes/"+url.PathEscape(providerRef)+"/actions/cancel", nil, map[string]any{}, nil); err != nil {
		return fmt.Errorf("telnyx cancel fax %s: %w", providerRef, err)
	}
	return nil
}

// availableNumber is one entry of GET /v2/available_phone_numbers.
type availableNumber struct {
	PhoneNumber       string `json:"phone_number"`
	RegionInformation []struct {
		RegionType string `json:"region_type"`
		RegionName string `json:"region_name"`
	} `json:"region_information"`
}

// SearchNumbers lists fax-capable numbers Telnyx offers that match q.
func (p *Provider) SearchNumbers(ctx context.Context, q numbers.Search) ([]numbers.AvailableNumber, error) {
	country := strings.ToUpper(cmpOr(q.Country, "US"))
	limit := q.Limit
	if limit <= 0 || limit > numbers.MaxSearchLimit {
		limit = numbers.MaxSearchLimit
	}
	v := url.Values{}
	v.Set("filter[country_code]", country)
	if q.AreaCode != "" {
		v.Set("filter[national_destination_code]", q.AreaCode)
	}
	if q.Locality != "" {
		v.Set("filter[locality]", q.Locality)
	}
	if q.Number != "" {
		// Telnyx matches digits; the answer is narrowed to the exact
		// number below.
		v.Set("filter[phone_number][contains]", strings.TrimPrefix(q.Number, "+"))
	}
	v.Add("filter[features][]", "fax")
	v.Set("filter[limit]", fmt.Sprint(limit))
	var out struct {
		Data []availableNumber `json:"data"`
	}
	if err := p.call(ctx, http.MethodGet, "/v2/available_phone_numbers", v, nil, &out); err != nil {
		return nil, fmt.Errorf("telnyx search numbers in %s: %w", country, err)
	}
	res := make([]numbers.AvailableNumber, 0, min(len(out.Data), limit))
	for _, n := range out.Data {
		if len(res) == limit {
			break
		}
		if n.PhoneNumber == "" || q.Number != "" && n.PhoneNumber != q.Number {
			continue
		}
		a := numbers.AvailableNumber{E164: n.PhoneNumber, Country: country}
		for _, r := range n.RegionInformation {
			switch r.RegionType {
			case "country_code":
				a.Country = cmpOr(r.RegionName, a.Country)
			case "state":
				a.Region = r.RegionName
			case "location":
				a.Locality = r.RegionName
			case "rate_center":
				a.Locality = cmpOr(a.Locality, titleCase(r.RegionName))
			}
		}
		res = append(res, a)
	}
	return res, nil
}

// titleCase turns a rate center ("NEW YORK") into a locality ("New York").
func titleCase(s string) string {
	words := strings.Fields(strings.ToLower(s))
	for i, w := range words {
		words[i] = strings.ToUpper(w[:1]) + w[1:]
	}
	return strings.Join(words, " ")
}

// NumberOrder is a Telnyx number order, as its API answers and as its
// number_order.* webhook events carry it.
type NumberOrder struct {
	ID                string `json:"id"`
	Status            string `json:"status"` // pending, success, failure
	CustomerReference string `json:"customer_reference"`
	PhoneNumbers      []struct {
		ID          string `json:"id"`
		PhoneNumber string `json:"phone_number"`
		Status      string `json:"status"`
	} `json:"phone_numbers"`
}

// Result is what a number order means to core.
func (o NumberOrder) Result() numbers.OrderResult {
	r := numbers.OrderResult{Status: numbers.Pending, OrderRef: o.ID}
	switch o.Status {
	case "success":
		r.Status = numbers.Active
		if len(o.PhoneNumbers) > 0 {
			r.ProviderRef = o.PhoneNumbers[0].ID
		}
	case "failure":
		r.Status, r.FailureReason = numbers.Failed, "Telnyx could not provision the number"
		if len(o.PhoneNumbers) > 0 && o.PhoneNumbers[0].Status != "" {
			r.FailureReason += " (" + cut(o.PhoneNumbers[0].Status, 60) + ")"
		}
	}
	return r
}

// OrderNumber orders o.E164 under customer_reference o.NumberID, or
// returns the order already placed under it.
func (p *Provider) OrderNumber(ctx context.Context, o numbers.Order) (numbers.OrderResult, error) {
	if o.NumberID == "" || o.E164 == "" {
		return numbers.OrderResult{}, errors.New("telnyx order: the number id and the number are required")
	}
	var found struct {
		Data []NumberOrder `json:"data"`
	}
	q := url.Values{"filter[customer_reference]": {o.NumberID}}
	if err := p.call(ctx, http.MethodGet, "/v2/number_orders", q, nil, &found); err != nil {
		// Ordering blind could buy the number twice: let the job retry.
		return numbers.OrderResult{}, fmt.Errorf("telnyx look up the order of %s: %w", o.NumberID, err)
	}
	for _, ord := range found.Data {
		if ord.CustomerReference == o.NumberID && ord.ID != "" {
			p.cfg.Logger.InfoContext(ctx, "telnyx number order found", "number", o.NumberID, "order", ord.ID, "status", ord.Status)
			return ord.Result(), nil
		}
	}
	body := map[string]any{
		"phone_numbers":      []map[string]string{{"phone_number": o.E164}},
		"connection_id":      p.cfg.ConnectionID,
		"customer_reference": o.NumberID,
	}
	var out struct {
		Data NumberOrder `json:"data"`
	}
	err := p.call(ctx, http.MethodPost, "/v2/number_orders", nil, body, &out)
	var ae *apiError
	switch {
	case errors.As(err, &ae) && (ae.Status == http.StatusUnprocessableEntity || ae.Status == http.StatusBadRequest || ae.Status == http.StatusNotFound):
		// The number is gone from the inventory, or cannot be ordered.
		return numbers.OrderResult{Status: numbers.Failed, FailureReason: ae.Error()}, nil
	case err != nil:
		return numbers.OrderResult{}, fmt.Errorf("telnyx order %s: %w", o.E164, err)
	case out.Data.ID == "":
		return numbers.OrderResult{}, fmt.Errorf("telnyx order %s: the answer names no order id", o.E164)
	}
	return out.Data.Result(), nil
}

// ReleaseNumber deletes the number from the account, found by its E.164
// form. A number that is already gone is not an error.
func (p *Provider) ReleaseNumber(ctx context.Context, n *numbers.Number) error {
	// The phone number's own id is looked up by its E.164 form every time:
	// the id a number order reports may be the order's line, not the
	// number, and a DELETE of the wrong id answers 404, which would read as
	// "already released" while the number stays rented.
	var out struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	q := url.Values{"filter[phone_number]": {n.E164}}
	if err := p.call(ctx, http.MethodGet, "/v2/phone_numbers", q, nil, &out); err != nil {
		return fmt.Errorf("telnyx find %s to release it: %w", n.E164, err)
	}
	if len(out.Data) == 0 || out.Data[0].ID == "" {
		return nil // not on the account: released already
	}
	id := out.Data[0].ID
	err := p.call(ctx, http.MethodDelete, "/v2/phone_numbers/"+url.PathEscape(id), nil, nil, nil)
	var ae *apiError
	if errors.As(err, &ae) && ae.Status == http.StatusNotFound {
		return nil
	}
	if err != nil {
		return fmt.Errorf("telnyx release %s: %w", n.E164, err)
	}
	return nil
}

// FetchInbound downloads a received fax's document from the media_url
// Telnyx gave (a pre-signed link, usually on another host: the API key is
// sent only to the API's own origin). The caller bounds the bytes read.
func (p *Provider) FetchInbound(ctx context.Context, f *inbox.InboundFax) (io.ReadCloser, error) {
	u, err := url.Parse(f.MediaURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("telnyx fetch inbound %s: the media URL is not an http(s) URL", f.ID)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("telnyx fetch inbound %s: %w", f.ID, err)
	}
	if u.Scheme == p.base.Scheme && u.Host == p.base.Host {
		req.Header.Set("Authorization", "Bearer "+p.cfg.APIKey)
	}
	resp, err := p.cfg.HTTPClient.Do(req)
	if err != nil {
		// Do's error quotes the URL, whose query may be a credential.
		return nil, fmt.Errorf("telnyx fetch inbound %s from %s: %w", f.ID, u.Host, unwrapURLError(err))
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		resp.Body.Close()
		return nil, fmt.Errorf("telnyx fetch inbound %s from %s: answered %d", f.ID, u.Host, resp.StatusCode)
	}
	return resp.Body, nil
}

// unwrapURLError drops the URL (and its signed query) from a client error.
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// quality is Telnyx's name for a fax's resolution: normal is standard
// (204×98), high is fine (204×196); a fax that names none gets the
// configured default.
func (p *Provider) quality(r faxes.Resolution) string {
	switch r {
	case faxes.ResolutionStandard:
		return "normal"
	case faxes.ResolutionFine:
		return "high"
	}
	return p.cfg.Quality
}

// displayName keeps what Telnyx accepts in from_display_name (letters,
// digits, spaces and -_~!.+, at most 128): the header text, cleaned.
func displayName(header string) string {
	var b strings.Builder
	for _, c := range header {
		if unicode.IsLetter(c) && c < unicode.MaxASCII || unicode.IsDigit(c) && c < unicode.MaxASCII || strings.ContainsRune(" -_~!.+", c) {
			b.WriteRune(c)
		}
	}
	return strings.TrimSpace(core.CutUTF8(b.String(), 128))
}
