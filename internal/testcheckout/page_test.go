package testcheckout_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/checkout"
	"github.com/faxhub/faxhub/core/faxes"
	"github.com/faxhub/faxhub/core/web"
	checkoutpage "github.com/faxhub/faxhub/internal/testcheckout"
)

// The real service is what cmd/faxhub passes to the page.
var _ checkoutpage.CheckoutService = (*checkout.Service)(nil)

// checkouts is a hand-written CheckoutService with core's semantics:
// not found, expiry (410) and idempotent completion.
type checkouts struct {
	mu        sync.Mutex
	byID      map[string]*checkout.Checkout
	completed map[string]int
	getErr    error
	// unpayable makes CheckoutPayable (and CompleteCheckout) refuse a
	// checkout, as core does for a draft paid another way.
	unpayable map[string]error
}

func (s *checkouts) Payable(_ context.Context, c *checkout.Checkout) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c.Status == checkout.Paid {
		return nil
	}
	return s.unpayable[c.ID]
}

func newCheckouts(cs ...*checkout.Checkout) *checkouts {
	s := &checkouts{byID: map[string]*checkout.Checkout{}, completed: map[string]int{}, unpayable: map[string]error{}}
	for _, c := range cs {
		s.byID[c.ID] = c
	}
	return s
}

func (s *checkouts) Get(_ context.Context, id string) (*checkout.Checkout, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.getErr != nil {
		return nil, s.getErr
	}
	c, ok := s.byID[id]
	if !ok {
		return nil, core.Errorf(core.KindNotFound, core.CodeNotFound, "checkout not found")
	}
	cp := *c
	return &cp, nil
}

func (s *checkouts) Complete(_ context.Context, id string) (*checkout.Checkout, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.byID[id]
	if !ok {
		return nil, core.Errorf(core.KindNotFound, core.CodeNotFound, "checkout not found")
	}
	if c.Status == checkout.Paid {
		cp := *c
		return &cp, nil
	}
	if err := s.unpayable[id]; err != nil {
		return nil, err
	}
	now := time.Now()
	if now.After(c.ExpiresAt) {
		return nil, core.Errorf(core.KindGone, checkout.CodeCheckoutState, "this checkout expired; start a new one")
	}
	s.completed[id]++
	c.Status, c.PaidAt = checkout.Paid, &now
	cp := *c
	return &cp, nil
}

func (s *checkouts) completions(id string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.completed[id]
}

func packCheckout(id string) *checkout.Checkout {
	return &checkout.Checkout{
		ID: id, OwnerID: "own_1", Mode: core.ModeTest, Kind: checkout.KindCreditPack, PackID: "pack_100",
		AmountMicros: 100_000_000, CreditMicros: 105_000_000, Status: checkout.Open,
		CreatedAt: time.Now(), ExpiresAt: time.Now().Add(time.Hour),
	}
}

func draftCheckout(id string) *checkout.Checkout {
	draft := "drf_123"
	return &checkout.Checkout{
		ID: id, OwnerID: "own_1", Mode: core.ModeTest, Kind: checkout.KindDraft, DraftID: &draft,
		AmountMicros: 215_000, Status: checkout.Open, CreatedAt: time.Now(), ExpiresAt: time.Now().Add(time.Hour),
	}
}

func serve(t *testing.T, svc checkoutpage.CheckoutService) *httptest.Server {
	r := web.NewRouter(web.Origins{web.OriginBase: "http://faxhub.test"})
	checkoutpage.NewPage(svc, nil).Register(r)
	srv := httptest.NewServer(r)
	t.Cleanup(srv.Close)
	return srv
}

type page struct {
	status int
	body   string
	header http.Header
}

func do(t *testing.T, srv *httptest.Server, req *http.Request) page {
	t.Helper()
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return page{resp.StatusCode, string(b), resp.Header}
}

func get(t *testing.T, srv *httptest.Server, id string) page {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL+core.LinkTestCheckout.PathPrefix()+id, nil)
	if err != nil {
		t.Fatal(err)
	}
	return do(t, srv, req)
}

func testCardForm() url.Values {
	return url.Values{"card_number": {"4242 4242 4242 4242"}, "expiry": {"12/" + time.Now().AddDate(2, 0, 0).Format("06")}, "cvc": {"123"}}
}

// post submits the form as a same-origin browser would.
func post(t *testing.T, srv *httptest.Server, id string, form url.Values) page {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL+core.LinkTestCheckout.PathPrefix()+id, strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	req.Header.Set("Origin", srv.URL)
	return do(t, srv, req)
}

func wantContains(t *testing.T, p page, parts ...string) {
	t.Helper()
	for _, s := range parts {
		if !strings.Contains(p.body, s) {
			t.Errorf("page (status %d) lacks %q", p.status, s)
		}
	}
}

func TestPageShowsWhatIsBought(t *testing.T) {
	srv := serve(t, newCheckouts(packCheckout("chk_pack"), draftCheckout("chk_draft")))

	p := get(t, srv, "chk_pack")
	if p.status != http.StatusOK {
		t.Fatalf("status %d", p.status)
	}
	wantContains(t, p, "TEST MODE — no real money", "$100.00 USD", "pack_100", "$105.00 of fax credit",
		`value="4242 4242 4242 4242"`, `name="cvc"`, `method="post"`, `name="viewport"`)
	if ct := p.header.Get("Content-Type"); ct != "text/html; charset=utf-8" {
		t.Errorf("Content-Type %q", ct)
	}
	if csp := p.header.Get("Content-Security-Policy"); !strings.Contains(csp, "frame-ancestors 'none'") {
		t.Errorf("CSP %q", csp)
	}
	if strings.Contains(p.body, "http://") || strings.Contains(p.body, "https://") || strings.Contains(p.body, "<script") {
		t.Error("the page loads external assets or scripts")
	}

	// A draft's price is charged in whole cents, rounded up.
	p = get(t, srv, "chk_draft")
	wantContains(t, p, "$0.22 USD", "drf_123", "Fax")
}

func TestCardValidation(t *testing.T) {
	svc := newCheckouts(packCheckout("chk_1"))
	srv := serve(t, svc)
	cases := []struct {
		name   string
		field  string
		value  string
		status int
		says   string
	}{
		{"luhn failure", "card_number", "4242 4242 4242 4241", http.StatusUnprocessableEntity, "not valid"},
		{"letters", "card_number", "4242 abcd 4242 4242", http.StatusUnprocessableEntity, "12 to 19 digits"},
		{"empty card", "card_number", "", http.StatusUnprocessableEntity, "Enter a card number"},
		{"real-looking card", "card_number", "4111 1111 1111 1111", http.StatusUnprocessableEntity, "use the test card"},
		{"decline card", "card_number", "4000 0000 0000 0002", http.StatusPaymentRequired, "declined"},
		{"past expiry", "expiry", "01/20", http.StatusUnprocessableEntity, "expired"},
		{"bad expiry", "expiry", "13/30", http.StatusUnprocessableEntity, "MM/YY"},
		{"short cvc", "cvc", "12", http.StatusUnprocessableEntity, "CVC"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			form := testCardForm()
			form.Set(c.field, c.value)
			p := post(t, srv, "chk_1", form)
			if p.status != c.status {
				t.Fatalf("status %d, want %d", p.status, c.status)
			}
			wantContains(t, p, c.says, `role="alert"`, `aria-invalid="true"`, "$100.00 USD")
			if n := svc.completions("chk_1"); n != 0 {
				t.Fatalf("checkout completed %d times", n)
			}
		})
	}
}

func TestPaySucceeds(t *testing.T) {
	svc := newCheckouts(packCheckout("chk_pack"), draftCheckout("chk_draft"))
	srv := serve(t, svc)

	p := post(t, srv, "chk_pack", testCardForm())
	if p.status != http.StatusOK {
		t.Fatalf("status %d: %s", p.status, p.body)
	}
	wantContains(t, p, "Paid. Credits added.", "$105.00 of fax credit", "TEST MODE — no real money")
	if n := svc.completions("chk_pack"); n != 1 {
		t.Fatalf("CompleteCheckout called %d times, want 1", n)
	}
	// Paying again (a resubmitted form) shows the receipt and pays nothing.
	p = post(t, srv, "chk_pack", testCardForm())
	wantContains(t, p, "Paid. Credits added.")
	if n := svc.completions("chk_pack"); n != 1 {
		t.Fatalf("CompleteCheckout called %d times after a resubmission, want 1", n)
	}
	wantContains(t, get(t, srv, "chk_pack"), "Paid. Credits added.")

	p = post(t, srv, "chk_draft", testCardForm())
	wantContains(t, p, "Paid. Your fax is queued.")
	if n := svc.completions("chk_draft"); n != 1 {
		t.Fatalf("draft completed %d times", n)
	}
}

func TestUnpayableCheckouts(t *testing.T) {
	live := packCheckout("chk_live")
	live.Mode = core.ModeLive
	expired := packCheckout("chk_expired")
	expired.ExpiresAt = time.Now().Add(-time.Minute)
	marked := packCheckout("chk_marked")
	marked.Status = checkout.Expired
	svc := newCheckouts(live, expired, marked)
	srv := serve(t, svc)

	for _, c := range []struct {
		id     string
		status int
		says   string
	}{
		{"chk_unknown", http.StatusNotFound, "Checkout not found"},
		{"chk_live", http.StatusNotFound, "Checkout not found"},
		{"chk_expired", http.StatusGone, "expired"},
		{"chk_marked", http.StatusGone, "expired"},
	} {
		for _, p := range []page{get(t, srv, c.id), post(t, srv, c.id, testCardForm())} {
			if p.status != c.status {
				t.Errorf("%s: status %d, want %d", c.id, p.status, c.status)
			}
			wantContains(t, p, c.says, "TEST MODE — no real money")
			if strings.Contains(p.body, `name="card_number"`) {
				t.Errorf("%s: the error page offers the card form", c.id)
			}
		}
		if n := svc.completions(c.id); n != 0 {
			t.Errorf("%s completed %d times", c.id, n)
		}
	}
}

func TestExpiresBetweenPageAndPay(t *testing.T) {
	// The page was open while the checkout ran out: CompleteCheckout's 410
	// becomes the expired page.
	c := packCheckout("chk_race")
	svc := &racingCheckouts{checkouts: newCheckouts(c)}
	srv := serve(t, svc)
	p := post(t, srv, "chk_race", testCardForm())
	if p.status != http.StatusGone {
		t.Fatalf("status %d, want 410", p.status)
	}
}

type racingCheckouts struct{ *checkouts }

func (r *racingCheckouts) Complete(ctx context.Context, id string) (*checkout.Checkout, error) {
	return nil, core.Errorf(core.KindGone, checkout.CodeCheckoutState, "this checkout expired; start a new one")
}

func TestInternalErrorHidesDetails(t *testing.T) {
	svc := newCheckouts()
	svc.getErr = errors.New("checkout: dial tcp 10.0.0.5:5432: connection refused")
	srv := serve(t, svc)
	p := get(t, srv, "chk_1")
	if p.status != http.StatusInternalServerError {
		t.Fatalf("status %d", p.status)
	}
	if strings.Contains(p.body, "10.0.0.5") {
		t.Fatal("the error page shows the internal error")
	}
}

func TestCrossOriginPostRefused(t *testing.T) {
	svc := newCheckouts(packCheckout("chk_1"))
	srv := serve(t, svc)
	for name, headers := range map[string]map[string]string{
		"sec-fetch-site": {"Sec-Fetch-Site": "cross-site"},
		"origin":         {"Origin": "https://evil.example"},
	} {
		t.Run(name, func(t *testing.T) {
			req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL+"/checkout/test/chk_1", strings.NewReader(testCardForm().Encode()))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			for k, v := range headers {
				req.Header.Set(k, v)
			}
			p := do(t, srv, req)
			if p.status != http.StatusForbidden {
				t.Fatalf("status %d, want 403", p.status)
			}
			wantContains(t, p, "another site")
			if n := svc.completions("chk_1"); n != 0 {
				t.Fatalf("a cross-origin POST completed the checkout (%d)", n)
			}
		})
	}
}

// A draft that was sent with credits while its checkout page was open: the
// page no longer offers the card form and a submitted form says the fax is
// paid already (409), charging nothing.
func TestDraftPaidElsewhere(t *testing.T) {
	svc := newCheckouts(draftCheckout("chk_draft"))
	srv := serve(t, svc)
	svc.unpayable["chk_draft"] = core.Errorf(core.KindConflict, faxes.CodeDraftState, "this fax was paid already; nothing more is charged")
	p := get(t, srv, "chk_draft")
	if p.status != http.StatusConflict || !strings.Contains(p.body, "paid already") || strings.Contains(p.body, "card_number") {
		t.Fatalf("GET: %d %s", p.status, p.body)
	}
	p = post(t, srv, "chk_draft", testCardForm())
	if p.status != http.StatusConflict || !strings.Contains(p.body, "paid already") {
		t.Fatalf("POST: %d %s", p.status, p.body)
	}
	if svc.completed["chk_draft"] != 0 {
		t.Fatal("completed a checkout of a paid draft")
	}
}
