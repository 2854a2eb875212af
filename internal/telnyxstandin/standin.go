// Package telnyxstandin is a local Telnyx: the parts of API v2 faxhub's
// Telnyx adapter uses (faxes, available numbers, number orders, phone
// numbers), with Telnyx's request and answer shapes, and the signed
// webhooks Telnyx would post. It lets the contract suite run a real
// `faxhub serve` in live mode without an account or a telephone line.
//
// Like Telnyx it fetches a fax's media_url itself (a 2xx answer, no
// redirects, a PDF), then posts fax.queued, fax.media.processed,
// fax.sending.started and the outcome, signed with its Ed25519 key over
// "{timestamp}|{body}". The outcome is chosen by the destination (the
// simulator's test numbers, TestNumbers). A webhook that gets no 2xx is
// retried with doubling backoff, as Telnyx does. Control endpoints under
// /standin/ deliver inbound faxes, replay or forge events and hold media
// downloads, for the tests (see Handler).
package telnyxstandin

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/faxhub/faxhub/core/pdfconf"
	"github.com/pdfcpu/pdfcpu/pkg/api"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/model"
)

// TestNumbers maps destinations to what the stand-in's network does with
// a fax to them: the simulator's 555-01xx numbers and a few more. Every
// other number is delivered.
var TestNumbers = map[string]string{
	"+12125550100": "delivered",
	"+12125550101": "user_busy",                         // busy, retried
	"+12125550102": "receiver_no_answer",                // no answer, retried
	"+12125550103": "fax_initial_communication_timeout", // not a fax machine
	"+12125550104": "partial",                           // half the pages, then receiver_call_dropped
	"+12125550105": "fax_signaling_error",               // signaling, retried
	"+12125550106": "api_error",                         // POST /v2/faxes answers 500
	"+12125550107": "invalid_to",                        // POST /v2/faxes answers 422 on /to
	"+12125550108": "receiver_unallocated_number",       // invalid number, final
	"+12125550109": "slow",                              // stays sending until canceled (or SlowCall)
}

// Options configure the stand-in.
type Options struct {
	// Seed (32 bytes) makes the signing key; the public key is what faxhub
	// is given as FAXHUB_TELNYX_PUBLIC_KEY.
	Seed []byte
	// APIKey, when set, is the only bearer token accepted.
	APIKey string
	// WebhookURL receives every event.
	WebhookURL string
	// BaseURL is the stand-in's own origin (inbound media URLs).
	BaseURL string
	// Step is the pause between two events of one fax (default 50 ms);
	// SlowCall how long a "slow" fax stays sending (default 1 minute);
	// OrderDelay how long a number order stays pending (default 300 ms).
	Step, SlowCall, OrderDelay time.Duration
	// RetryBase is the first webhook retry's delay, doubled each time up
	// to 8 s (default 500 ms); Retries bounds the attempts (default 12).
	RetryBase time.Duration
	Retries   int
	// HTTPClient fetches media and posts webhooks (default: a client with
	// a 30 s timeout); redirects are refused whatever it says.
	HTTPClient *http.Client
	Logger     *slog.Logger
}

// Server is the stand-in.
type Server struct {
	o      Options
	key    ed25519.PrivateKey
	client *http.Client
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu        sync.Mutex
	faxes     map[string]*fax
	orders    map[string]*order
	owned     map[string]string // e164 → phone number id
	media     map[string][]byte // inbound fax id → PDF
	events    map[string]sentEvent
	log       []Delivery
	held      chan struct{} // closed when media is released; nil when not held
	callsHeld chan struct{} // closed when calls may end; nil when not held
	waiting   int           // media downloads waiting on the hold
	downloads int
}

type fax struct {
	ID          string `json:"id"`
	To          string `json:"to"`
	From        string `json:"from"`
	MediaURL    string `json:"-"`
	ClientState string `json:"client_state"`
	Status      string `json:"status"`
	Pages       int    `json:"page_count"`
	Direction   string `json:"direction"`
	canceled    chan struct{}
}

type order struct {
	ID                string        `json:"id"`
	Status            string        `json:"status"`
	CustomerReference string        `json:"customer_reference"`
	ConnectionID      string        `json:"connection_id"`
	PhoneNumbers      []orderNumber `json:"phone_numbers"`
	RecordType        string        `json:"record_type"`
}

type orderNumber struct {
	ID          string `json:"id"`
	PhoneNumber string `json:"phone_number"`
	Status      string `json:"status"`
}

type sentEvent struct {
	Type       string
	Payload    any
	OccurredAt time.Time
}

// Delivery is one webhook post and faxhub's answer (0: no answer).
type Delivery struct {
	EventID string `json:"event_id"`
	Type    string `json:"event_type"`
	Try     int    `json:"try"`
	Status  int    `json:"status"`
	Forged  string `json:"forged,omitempty"`
}

// New returns a stand-in; Close stops its background work.
func New(o Options) (*Server, error) {
	if len(o.Seed) != ed25519.SeedSize {
		return nil, fmt.Errorf("telnyxstandin: the seed must be %d bytes", ed25519.SeedSize)
	}
	if o.Step <= 0 {
		o.Step = 50 * time.Millisecond
	}
	if o.SlowCall <= 0 {
		o.SlowCall = time.Minute
	}
	if o.OrderDelay <= 0 {
		o.OrderDelay = 300 * time.Millisecond
	}
	if o.RetryBase <= 0 {
		o.RetryBase = 500 * time.Millisecond
	}
	if o.Retries <= 0 {
		o.Retries = 12
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	client := &http.Client{Timeout: 30 * time.Second}
	if o.HTTPClient != nil {
		c := *o.HTTPClient
		client = &c
	}
	// Telnyx refuses redirects on media URLs.
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{
		o: o, key: ed25519.NewKeyFromSeed(o.Seed), ctx: ctx, cancel: cancel, client: client,
		faxes: map[string]*fax{}, orders: map[string]*order{}, owned: map[string]string{}, media: map[string][]byte{}, events: map[string]sentEvent{},
	}
	return s, nil
}

// PublicKey is the base64 Ed25519 key faxhub verifies webhooks with.
func (s *Server) PublicKey() string {
	return base64.StdEncoding.EncodeToString(s.key.Public().(ed25519.PublicKey))
}

// Close stops pending webhooks and calls.
func (s *Server) Close() {
	s.cancel()
	s.mu.Lock()
	if s.held != nil {
		close(s.held)
		s.held = nil
	}
	s.mu.Unlock()
	s.wg.Wait()
}

func (s *Server) newID(prefix string) string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// Handler serves the API and the control endpoints:
//
//	POST /standin/inbound                 {to, from, pdf (base64)} → posts fax.received
//	POST /standin/faxes/{id}/events       {event_type, failure_reason, page_count, forge: ""|"bad_signature"|"old_timestamp"}
//	                                      posts one event about a fax once, synchronously (out of order, forged)
//	POST /standin/events/{id}/redeliver   posts a sent event again, once (a duplicate); with
//	                                      ?retry=1 in the background, retried like a new event
//	POST /standin/media/hold              {hold: bool}: inbound media downloads wait while held
//	POST /standin/calls/hold              {hold: bool}: outbound calls do not end while held
//	GET  /standin/state                   faxes, orders, numbers, webhook deliveries, media downloads
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v2/faxes", s.auth(s.createFax))
	mux.HandleFunc("GET /v2/faxes/{id}", s.auth(s.getFax))
	mux.HandleFunc("POST /v2/faxes/{id}/actions/cancel", s.auth(s.cancelFax))
	mux.HandleFunc("GET /v2/available_phone_numbers", s.auth(s.availableNumbers))
	mux.HandleFunc("POST /v2/number_orders", s.auth(s.createOrder))
	mux.HandleFunc("GET /v2/number_orders", s.auth(s.listOrders))
	mux.HandleFunc("GET /v2/phone_numbers", s.auth(s.listNumbers))
	mux.HandleFunc("DELETE /v2/phone_numbers/{id}", s.auth(s.deleteNumber))
	mux.HandleFunc("GET /media/{id}", s.serveMedia)
	mux.HandleFunc("POST /standin/inbound", s.inbound)
	mux.HandleFunc("POST /standin/faxes/{id}/events", s.forgeEvent)
	mux.HandleFunc("POST /standin/events/{id}/redeliver", s.redeliver)
	mux.HandleFunc("POST /standin/media/hold", s.hold(func(s *Server) *chan struct{} { return &s.held }))
	mux.HandleFunc("POST /standin/calls/hold", s.hold(func(s *Server) *chan struct{} { return &s.callsHeld }))
	mux.HandleFunc("GET /standin/state", s.state)
	return http.MaxBytesHandler(mux, 64<<20)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// apiError answers like Telnyx: {"errors":[{code,title,detail,source}]}.
func apiError(w http.ResponseWriter, status int, code, title, pointer string) {
	e := map[string]any{"code": code, "title": title}
	if pointer != "" {
		e["source"] = map[string]string{"pointer": pointer}
	}
	writeJSON(w, status, map[string]any{"errors": []any{e}})
}

func (s *Server) auth(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || tok == "" || (s.o.APIKey != "" && tok != s.o.APIKey) {
			apiError(w, http.StatusUnauthorized, "10009", "Authentication failed", "")
			return
		}
		next(w, r)
	}
}

var e164 = regexp.MustCompile(`^\+[1-9][0-9]{6,14}$`)

func (s *Server) createFax(w http.ResponseWriter, r *http.Request) {
	var req struct {
		ConnectionID string `json:"connection_id"`
		To           string `json:"to"`
		From         string `json:"from"`
		MediaURL     string `json:"media_url"`
		ClientState  string `json:"client_state"`
		Quality      string `json:"quality"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		apiError(w, 400, "10015", "Invalid JSON body", "")
		return
	}
	switch {
	case req.ConnectionID == "":
		apiError(w, 422, "10015", "connection_id is required", "/connection_id")
		return
	case !e164.MatchString(req.To) || TestNumbers[req.To] == "invalid_to":
		apiError(w, 422, "10016", "Invalid phone number", "/to")
		return
	case !e164.MatchString(req.From):
		apiError(w, 422, "10016", "Invalid from number", "/from")
		return
	case !strings.HasPrefix(req.MediaURL, "http://") && !strings.HasPrefix(req.MediaURL, "https://"):
		apiError(w, 422, "10015", "media_url must be an http(s) URL", "/media_url")
		return
	case req.Quality != "" && !map[string]bool{"normal": true, "high": true, "very_high": true, "ultra_light": true, "ultra_dark": true}[req.Quality]:
		apiError(w, 422, "10015", "Invalid quality", "/quality")
		return
	case TestNumbers[req.To] == "api_error":
		apiError(w, 500, "90000", "Internal error", "")
		return
	}
	f := &fax{ID: s.newID("tx_fax_"), To: req.To, From: req.From, MediaURL: req.MediaURL, ClientState: req.ClientState,
		Status: "queued", Direction: "outbound", canceled: make(chan struct{})}
	s.mu.Lock()
	s.faxes[f.ID] = f
	s.mu.Unlock()
	s.wg.Add(1)
	go s.call(f)
	writeJSON(w, http.StatusAccepted, map[string]any{"data": s.faxView(f)})
}

func (s *Server) faxView(f *fax) map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	return map[string]any{"id": f.ID, "record_type": "fax", "connection_id": "", "direction": f.Direction, "to": f.To, "from": f.From,
		"status": f.Status, "client_state": f.ClientState, "page_count": f.Pages}
}

func (s *Server) getFax(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	f := s.faxes[r.PathValue("id")]
	s.mu.Unlock()
	if f == nil {
		apiError(w, 404, "10005", "Resource not found", "")
		return
	}
	writeJSON(w, 200, map[string]any{"data": s.faxView(f)})
}

func (s *Server) cancelFax(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	f := s.faxes[r.PathValue("id")]
	ok := f != nil && (f.Status == "queued" || f.Status == "media.processed" || f.Status == "sending")
	if ok {
		f.Status = "canceling"
		close(f.canceled)
	}
	s.mu.Unlock()
	switch {
	case f == nil:
		apiError(w, 404, "10005", "Resource not found", "")
	case !ok:
		apiError(w, 422, "90061", "Fax cannot be canceled in its status", "")
	default:
		writeJSON(w, 200, map[string]any{"result": "ok"})
	}
}

// call plays one outbound fax: fetch the media, post the events, end as
// the destination says.
func (s *Server) call(f *fax) {
	defer s.wg.Done()
	payload := func(extra map[string]any) map[string]any {
		s.mu.Lock()
		defer s.mu.Unlock()
		p := map[string]any{"fax_id": f.ID, "connection_id": "", "direction": "outbound", "to": f.To, "from": f.From,
			"client_state": f.ClientState, "status": f.Status}
		for k, v := range extra {
			p[k] = v
		}
		return p
	}
	set := func(status string) bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		if f.Status == "canceling" || f.Status == "failed" {
			return false
		}
		f.Status = status
		return true
	}
	wait := func(d time.Duration) bool {
		select {
		case <-time.After(d):
			return true
		case <-f.canceled:
			return false
		case <-s.ctx.Done():
			return false
		}
	}
	fail := func(reason string, pages int) {
		s.mu.Lock()
		f.Status, f.Pages = "failed", pages
		s.mu.Unlock()
		s.post("fax.failed", payload(map[string]any{"failure_reason": reason, "page_count": pages}))
	}
	s.post("fax.queued", payload(nil))
	pages, err := s.fetchMedia(f.MediaURL)
	if err != nil {
		s.o.Logger.Info("standin: media download failed", "fax", f.ID, "err", err)
		fail("file_download_failed", 0)
		return
	}
	s.mu.Lock()
	f.Pages = pages
	s.mu.Unlock()
	if !set("media.processed") {
		fail("user_canceled", 0)
		return
	}
	s.post("fax.media.processed", payload(nil))
	if !wait(s.o.Step) || !set("sending") {
		fail("user_canceled", 0)
		return
	}
	s.post("fax.sending.started", payload(nil))
	outcome := TestNumbers[f.To]
	d := s.o.Step
	if outcome == "slow" {
		d = s.o.SlowCall
	}
	if !wait(d) {
		fail("user_canceled", 0)
		return
	}
	s.mu.Lock()
	hold := s.callsHeld
	s.mu.Unlock()
	if hold != nil {
		select {
		case <-hold:
		case <-f.canceled:
			fail("user_canceled", 0)
			return
		case <-s.ctx.Done():
			return
		}
	}
	switch outcome {
	case "", "delivered", "slow":
		if !set("delivered") {
			fail("user_canceled", 0)
			return
		}
		s.post("fax.delivered", payload(map[string]any{"page_count": pages, "call_duration_secs": 15 + 30*pages}))
	case "partial":
		fail("receiver_call_dropped", max(pages/2, 1))
	default:
		fail(outcome, 0)
	}
}

var pageRE = regexp.MustCompile(`/Type\s*/Page[^s]`)

// pageCount counts a PDF's pages as Telnyx does, reading its page tree
// (pdfcpu): a scan for /Type /Page misses pages whose objects sit in
// compressed object streams, as in every document faxhub composes. A PDF
// pdfcpu cannot read falls back to the scan.
func pageCount(b []byte) int {
	if n, err := api.PageCount(bytes.NewReader(b), pdfconf.New(model.VALIDATE)); err == nil && n > 0 {
		return n
	}
	return max(len(pageRE.FindAll(b, -1)), 1)
}

// fetchMedia downloads a media_url as Telnyx does: 2xx only, no
// redirects, a PDF; it returns the page count.
func (s *Server) fetchMedia(u string) (int, error) {
	req, err := http.NewRequestWithContext(s.ctx, http.MethodGet, u, nil)
	if err != nil {
		return 0, err
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return 0, errors.New("the media URL did not answer")
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return 0, fmt.Errorf("the media URL answered %d", resp.StatusCode)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, 50<<20))
	if err != nil {
		return 0, fmt.Errorf("read the media: %w", err)
	}
	if !bytes.HasPrefix(b, []byte("%PDF-")) {
		return 0, errors.New("the media is not a PDF")
	}
	return pageCount(b), nil
}

// post records an event and delivers it, retrying in the background.
func (s *Server) post(typ string, payload any) string {
	id := s.newID("evt_")
	ev := sentEvent{Type: typ, Payload: payload, OccurredAt: time.Now().UTC()}
	s.mu.Lock()
	s.events[id] = ev
	s.mu.Unlock()
	s.retry(id, ev)
	return id
}

// retry delivers ev until faxhub answers 2xx or the tries run out, with
// doubling backoff, as Telnyx does.
func (s *Server) retry(id string, ev sentEvent) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		delay := s.o.RetryBase
		for try := 1; try <= s.o.Retries; try++ {
			if status := s.deliver(id, ev, try, ""); status >= 200 && status <= 299 {
				return
			}
			select {
			case <-time.After(delay):
			case <-s.ctx.Done():
				return
			}
			delay = min(delay*2, 8*time.Second)
		}
	}()
}

// deliver posts one event once and returns faxhub's status (0: none).
// forge "bad_signature" signs with another key, "old_timestamp" signs a
// timestamp ten minutes old.
func (s *Server) deliver(id string, ev sentEvent, try int, forge string) int {
	typ := ev.Type
	body, _ := json.Marshal(map[string]any{
		"data": map[string]any{"event_type": typ, "id": id, "occurred_at": ev.OccurredAt.Format(time.RFC3339Nano), "payload": ev.Payload, "record_type": "event"},
		"meta": map[string]any{"attempt": try, "delivered_to": s.o.WebhookURL},
	})
	ts := time.Now()
	key := s.key
	switch forge {
	case "bad_signature":
		key = ed25519.NewKeyFromSeed(bytes.Repeat([]byte{0xee}, ed25519.SeedSize))
	case "old_timestamp":
		ts = ts.Add(-10 * time.Minute)
	}
	stamp := strconv.FormatInt(ts.Unix(), 10)
	sig := ed25519.Sign(key, append([]byte(stamp+"|"), body...))
	status := 0
	req, err := http.NewRequestWithContext(s.ctx, http.MethodPost, s.o.WebhookURL, bytes.NewReader(body))
	if err == nil {
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("telnyx-timestamp", stamp)
		req.Header.Set("telnyx-signature-ed25519", base64.StdEncoding.EncodeToString(sig))
		if resp, err := s.client.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
			resp.Body.Close()
			status = resp.StatusCode
		}
	}
	s.mu.Lock()
	s.log = append(s.log, Delivery{EventID: id, Type: typ, Try: try, Status: status, Forged: forge})
	s.mu.Unlock()
	s.o.Logger.Info("standin: webhook", "event", id, "type", typ, "try", try, "status", status, "forged", forge)
	return status
}

// inventory is the deterministic number stock: 555-01xx numbers in three
// area codes (fiction-reserved, never a real line).
var inventory = func() []map[string]any {
	var out []map[string]any
	for _, a := range []struct{ ac, state, city string }{{"212", "NY", "New York"}, {"415", "CA", "San Francisco"}, {"312", "IL", "Chicago"}} {
		for i := 150; i < 170; i++ {
			out = append(out, map[string]any{
				"phone_number": fmt.Sprintf("+1%s555%04d", a.ac, i),
				"record_type":  "available_phone_number",
				"region_information": []map[string]string{
					{"region_type": "country_code", "region_name": "US"},
					{"region_type": "state", "region_name": a.state},
					{"region_type": "rate_center", "region_name": strings.ToUpper(a.city)},
					{"region_type": "location", "region_name": a.city},
				},
				"features":         []map[string]string{{"name": "fax"}, {"name": "voice"}},
				"cost_information": map[string]string{"monthly_cost": "1.00", "upfront_cost": "1.00", "currency": "USD"},
				"_ndc":             a.ac, "_city": a.city,
			})
		}
	}
	return out
}()

// FailingNumber is an inventory number whose orders fail.
const FailingNumber = "+13125550169"

func (s *Server) availableNumbers(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if c := q.Get("filter[country_code]"); c != "" && c != "US" {
		writeJSON(w, 200, map[string]any{"data": []any{}, "metadata": map[string]int{"total_results": 0}})
		return
	}
	if f := q["filter[features][]"]; len(f) > 0 && f[0] != "fax" && f[0] != "voice" {
		writeJSON(w, 200, map[string]any{"data": []any{}})
		return
	}
	limit, _ := strconv.Atoi(q.Get("filter[limit]"))
	if limit <= 0 || limit > 100 {
		limit = 50
	}
	ndc, loc := q.Get("filter[national_destination_code]"), strings.ToLower(q.Get("filter[locality]"))
	contains := q.Get("filter[phone_number][contains]")
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []map[string]any{}
	for _, n := range inventory {
		if len(out) == limit {
			break
		}
		if _, taken := s.owned[n["phone_number"].(string)]; taken {
			continue
		}
		if ndc != "" && n["_ndc"] != ndc || loc != "" && !strings.HasPrefix(strings.ToLower(n["_city"].(string)), loc) ||
			contains != "" && !strings.Contains(n["phone_number"].(string), contains) {
			continue
		}
		m := map[string]any{}
		for k, v := range n {
			if !strings.HasPrefix(k, "_") {
				m[k] = v
			}
		}
		out = append(out, m)
	}
	writeJSON(w, 200, map[string]any{"data": out, "metadata": map[string]int{"total_results": len(out)}})
}

func inInventory(e string) bool {
	for _, n := range inventory {
		if n["phone_number"] == e {
			return true
		}
	}
	return false
}

func (s *Server) createOrder(w http.ResponseWriter, r *http.Request) {
	var req struct {
		PhoneNumbers []struct {
			PhoneNumber string `json:"phone_number"`
		} `json:"phone_numbers"`
		ConnectionID      string `json:"connection_id"`
		CustomerReference string `json:"customer_reference"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.PhoneNumbers) != 1 {
		apiError(w, 422, "10015", "phone_numbers must list one number", "/phone_numbers")
		return
	}
	num := req.PhoneNumbers[0].PhoneNumber
	s.mu.Lock()
	_, taken := s.owned[num]
	if taken || !inInventory(num) {
		s.mu.Unlock()
		apiError(w, 422, "85001", "Number not available", "/phone_numbers/0/phone_number")
		return
	}
	o := &order{ID: s.newID("ord_"), Status: "pending", CustomerReference: req.CustomerReference, ConnectionID: req.ConnectionID,
		RecordType: "number_order", PhoneNumbers: []orderNumber{{ID: s.newID("pn_"), PhoneNumber: num, Status: "pending"}}}
	s.orders[o.ID] = o
	s.owned[num] = o.PhoneNumbers[0].ID
	view := *o
	view.PhoneNumbers = append([]orderNumber(nil), o.PhoneNumbers...)
	s.mu.Unlock()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		select {
		case <-time.After(s.o.OrderDelay):
		case <-s.ctx.Done():
			return
		}
		s.mu.Lock()
		o.Status, o.PhoneNumbers[0].Status = "success", "success"
		if num == FailingNumber {
			o.Status, o.PhoneNumbers[0].Status = "failure", "failure"
			delete(s.owned, num)
		}
		done := *o
		done.PhoneNumbers = append([]orderNumber(nil), o.PhoneNumbers...)
		s.mu.Unlock()
		s.post("number_order.complete", done)
	}()
	writeJSON(w, 200, map[string]any{"data": view})
}

func (s *Server) listOrders(w http.ResponseWriter, r *http.Request) {
	ref := r.URL.Query().Get("filter[customer_reference]")
	s.mu.Lock()
	out := []order{}
	for _, o := range s.orders {
		if ref == "" || o.CustomerReference == ref {
			c := *o
			c.PhoneNumbers = append([]orderNumber(nil), o.PhoneNumbers...)
			out = append(out, c)
		}
	}
	s.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	writeJSON(w, 200, map[string]any{"data": out})
}

func (s *Server) listNumbers(w http.ResponseWriter, r *http.Request) {
	want := r.URL.Query().Get("filter[phone_number]")
	s.mu.Lock()
	out := []map[string]string{}
	for e, id := range s.owned {
		if want == "" || want == e {
			out = append(out, map[string]string{"id": id, "phone_number": e, "record_type": "phone_number", "status": "active"})
		}
	}
	s.mu.Unlock()
	writeJSON(w, 200, map[string]any{"data": out})
}

func (s *Server) deleteNumber(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	s.mu.Lock()
	defer s.mu.Unlock()
	for e, pid := range s.owned {
		if pid == id {
			delete(s.owned, e)
			writeJSON(w, 200, map[string]any{"data": map[string]string{"id": id, "phone_number": e, "status": "deleted"}})
			return
		}
	}
	apiError(w, 404, "10005", "Resource not found", "")
}

// serveMedia serves an inbound fax's PDF, waiting while media is held.
func (s *Server) serveMedia(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	b, ok := s.media[r.PathValue("id")]
	held := s.held
	if ok && held != nil {
		s.waiting++
	}
	s.mu.Unlock()
	if !ok {
		http.NotFound(w, r)
		return
	}
	if held != nil {
		select {
		case <-held:
		case <-r.Context().Done():
		}
		s.mu.Lock()
		s.waiting--
		s.mu.Unlock()
		if r.Context().Err() != nil {
			return
		}
	}
	s.mu.Lock()
	s.downloads++
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/pdf")
	_, _ = w.Write(b)
}

func (s *Server) inbound(w http.ResponseWriter, r *http.Request) {
	var req struct {
		To, From string
		PDF      []byte `json:"pdf"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || !e164.MatchString(req.To) || !bytes.HasPrefix(req.PDF, []byte("%PDF-")) {
		apiError(w, 400, "10015", "want {to: E.164, from, pdf: base64 PDF}", "")
		return
	}
	id := s.newID("tx_in_")
	s.mu.Lock()
	s.media[id] = req.PDF
	s.faxes[id] = &fax{ID: id, To: req.To, From: req.From, Status: "received", Direction: "inbound", Pages: pageCount(req.PDF), canceled: make(chan struct{})}
	pages := s.faxes[id].Pages
	s.mu.Unlock()
	ev := s.post("fax.received", map[string]any{
		"fax_id": id, "direction": "inbound", "to": req.To, "from": req.From, "status": "received", "page_count": pages,
		"media_url": strings.TrimRight(s.o.BaseURL, "/") + "/media/" + id + "?X-Amz-Signature=" + hex.EncodeToString([]byte(id))[:16],
	})
	writeJSON(w, 200, map[string]any{"fax_id": id, "event_id": ev})
}

// forgeEvent posts one event about a fax once, now: out of order,
// duplicated by hand, or forged.
func (s *Server) forgeEvent(w http.ResponseWriter, r *http.Request) {
	var req struct {
		EventType     string `json:"event_type"`
		FailureReason string `json:"failure_reason"`
		PageCount     int    `json:"page_count"`
		Forge         string `json:"forge"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.EventType == "" {
		apiError(w, 400, "10015", "want {event_type, failure_reason, page_count, forge}", "")
		return
	}
	s.mu.Lock()
	f := s.faxes[r.PathValue("id")]
	s.mu.Unlock()
	if f == nil {
		apiError(w, 404, "10005", "Resource not found", "")
		return
	}
	v := s.faxView(f)
	payload := map[string]any{"fax_id": f.ID, "direction": f.Direction, "to": f.To, "from": f.From, "client_state": v["client_state"],
		"status": v["status"], "page_count": req.PageCount}
	if req.FailureReason != "" {
		payload["failure_reason"] = req.FailureReason
	}
	id := s.newID("evt_")
	ev := sentEvent{Type: req.EventType, Payload: payload, OccurredAt: time.Now().UTC()}
	s.mu.Lock()
	s.events[id] = ev
	s.mu.Unlock()
	status := s.deliver(id, ev, 1, req.Forge)
	writeJSON(w, 200, map[string]any{"event_id": id, "status": status})
}

func (s *Server) redeliver(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	s.mu.Lock()
	ev, ok := s.events[id]
	s.mu.Unlock()
	if !ok {
		apiError(w, 404, "10005", "Resource not found", "")
		return
	}
	if r.URL.Query().Get("retry") == "1" {
		s.retry(id, ev)
		writeJSON(w, 200, map[string]any{"event_id": id, "status": "retrying"})
		return
	}
	writeJSON(w, 200, map[string]any{"event_id": id, "status": s.deliver(id, ev, 1, "")})
}

// hold switches the gate gate(s) points to: closed (held) or open.
func (s *Server) hold(gate func(*Server) *chan struct{}) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Hold bool `json:"hold"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			apiError(w, 400, "10015", "want {hold: bool}", "")
			return
		}
		s.mu.Lock()
		g := gate(s)
		switch {
		case req.Hold && *g == nil:
			*g = make(chan struct{})
		case !req.Hold && *g != nil:
			close(*g)
			*g = nil
		}
		s.mu.Unlock()
		writeJSON(w, 200, map[string]any{"hold": req.Hold})
	}
}

// State is what GET /standin/state answers.
type State struct {
	Faxes          []map[string]any  `json:"faxes"`
	Orders         []order           `json:"orders"`
	Numbers        map[string]string `json:"numbers"`
	Deliveries     []Delivery        `json:"deliveries"`
	MediaDownloads int               `json:"media_downloads"`
	MediaWaiting   int               `json:"media_waiting"`
}

func (s *Server) state(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	st := State{Numbers: map[string]string{}, Deliveries: append([]Delivery(nil), s.log...), MediaDownloads: s.downloads, MediaWaiting: s.waiting}
	fs := make([]*fax, 0, len(s.faxes))
	for _, f := range s.faxes {
		fs = append(fs, f)
	}
	for _, o := range s.orders {
		c := *o
		c.PhoneNumbers = append([]orderNumber(nil), o.PhoneNumbers...)
		st.Orders = append(st.Orders, c)
	}
	for e, id := range s.owned {
		st.Numbers[e] = id
	}
	s.mu.Unlock()
	for _, f := range fs {
		st.Faxes = append(st.Faxes, s.faxView(f))
	}
	writeJSON(w, 200, st)
}
