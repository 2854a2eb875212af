// Package testcheckout is test mode's checkout page: the page a payer
// opens at the URL the test gateway (core/payments/testcheckout) hands out,
// which takes a documented test card and completes the checkout without
// moving money. It is a stand-in of Stripe Checkout, like internal/stripetest
// is of Stripe's API.
package testcheckout

import (
	"context"
	"embed"
	"fmt"
	"html/template"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/checkout"
	"github.com/faxhub/faxhub/core/payments/testcheckout"
	"github.com/faxhub/faxhub/core/web"
)

// CheckoutService is what the page needs from core (*checkout.Service has it).
type CheckoutService interface {
	Get(ctx context.Context, id string) (*checkout.Checkout, error)
	Payable(ctx context.Context, c *checkout.Checkout) error
	Complete(ctx context.Context, id string) (*checkout.Checkout, error)
}

//go:embed templates/page.html
var templateFS embed.FS

var pageTemplate = template.Must(template.ParseFS(templateFS, "templates/page.html"))

// Page is the test checkout page.
type Page struct{ p *checkoutPage }

// NewPage builds the page over svc.
func NewPage(svc CheckoutService, logger *slog.Logger) *Page {
	if logger == nil {
		logger = slog.Default()
	}
	return &Page{&checkoutPage{svc: svc, logger: logger, now: time.Now}}
}

// Register puts GET and POST /checkout/test/{id} on r (base origin); any
// other request under /checkout/test/ is the router's 404 or 405. POSTs
// from other origins are refused, since a paid checkout spends nothing
// real but does queue faxes and add credits.
func (pg *Page) Register(r *web.Router) {
	h := pg.p
	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.render(w, http.StatusForbidden, view{Kind: "problem", Title: "Request refused",
			Message: "This payment was submitted from another site, so it was not processed. Open the checkout link again and pay from this page."})
	}))
	g := r.Group("testcheckout", web.OriginBase, cop.Handler)
	g.HandleFunc(web.Route{Name: "testcheckout.page", Methods: "GET", Path: core.LinkTestCheckout.Path(), Auth: web.AuthCapability}, h.show)
	g.HandleFunc(web.Route{Name: "testcheckout.pay", Methods: "POST", Path: core.LinkTestCheckout.Path(), Auth: web.AuthCapability}, h.pay)
	g.Fallback(core.LinkTestCheckout.PathPrefix(), nil)
}

type checkoutPage struct {
	svc    CheckoutService
	logger *slog.Logger
	now    func() time.Time
}

// view is everything the template shows.
type view struct {
	Kind       string // checkout, receipt or problem
	Title      string
	Message    string
	CheckoutID string
	Item       string
	// DetailLabel and Detail show what the purchase delivers.
	DetailLabel string
	Detail      string
	Amount      string
	ExpiresAt   string
	PaidAt      string
	// Form state after a refused payment.
	Card, Expiry, CVC string
	Field             string // the input at fault
	ErrorTitle, Error string
}

func (p *checkoutPage) show(w http.ResponseWriter, r *http.Request) {
	c, ok := p.load(w, r)
	if !ok {
		return
	}
	if c.Status == checkout.Paid {
		p.render(w, http.StatusOK, receiptView(c))
		return
	}
	v := summaryView(c)
	v.Kind, v.Title = "checkout", "Pay "+v.Amount
	v.Card, v.Expiry, v.CVC = "4242 4242 4242 4242", p.now().AddDate(3, 0, 0).Format("01/06"), "123"
	p.render(w, http.StatusOK, v)
}

func (p *checkoutPage) pay(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
	if err := r.ParseForm(); err != nil {
		p.render(w, http.StatusBadRequest, view{Kind: "problem", Title: "Bad request", Message: "The payment form could not be read. Reload the page and try again."})
		return
	}
	c, ok := p.load(w, r)
	if !ok {
		return
	}
	if c.Status == checkout.Paid {
		// A resubmitted form: it was paid once, and that is all.
		p.render(w, http.StatusOK, receiptView(c))
		return
	}
	v := summaryView(c)
	v.Kind, v.Title = "checkout", "Pay "+v.Amount
	v.Card, v.Expiry, v.CVC = r.PostFormValue("card_number"), r.PostFormValue("expiry"), r.PostFormValue("cvc")
	if status, field, msg := checkCard(v.Card, v.Expiry, v.CVC, p.now()); status != 0 {
		v.Field, v.Error = field, msg
		v.ErrorTitle = "Check the card details."
		if status == http.StatusPaymentRequired {
			v.ErrorTitle = "Your card was declined."
		}
		p.render(w, status, v)
		return
	}
	if _, err := p.svc.Complete(r.Context(), c.ID); err != nil {
		p.fail(w, r, c.ID, err)
		return
	}
	// Post/redirect/get: reloading the receipt must not resubmit the form.
	http.Redirect(w, r, r.URL.Path, http.StatusSeeOther)
}

// load reads the checkout named in the path and renders the error page if
// it cannot be paid here.
func (p *checkoutPage) load(w http.ResponseWriter, r *http.Request) (*checkout.Checkout, bool) {
	id := r.PathValue("id")
	if id == "" || len(id) > 100 {
		p.renderNotFound(w)
		return nil, false
	}
	c, err := p.svc.Get(r.Context(), id)
	if err != nil {
		p.fail(w, r, id, err)
		return nil, false
	}
	// A live checkout is paid at Stripe; pretending this one does not exist
	// keeps a test card from ever paying for live credits or faxes.
	if c.Mode != core.ModeTest {
		p.renderNotFound(w)
		return nil, false
	}
	if c.Status == checkout.Expired || c.Status == checkout.Open && !p.now().Before(c.ExpiresAt) {
		p.renderGone(w)
		return nil, false
	}
	// A draft paid another way in the meantime (sent with credits), or
	// expired: the card form must not be offered.
	if err := p.svc.Payable(r.Context(), c); err != nil {
		p.fail(w, r, c.ID, err)
		return nil, false
	}
	return c, true
}

func (p *checkoutPage) fail(w http.ResponseWriter, r *http.Request, id string, err error) {
	switch core.ErrorKind(err) {
	case core.KindNotFound:
		p.renderNotFound(w)
	case core.KindGone:
		p.renderGone(w)
	case core.KindConflict:
		p.render(w, http.StatusConflict, view{Kind: "problem", Title: "Nothing to pay",
			Message: core.AsError(err).Message + "."})
	default:
		p.logger.ErrorContext(r.Context(), "test checkout failed", "checkout", id, "error", err)
		p.render(w, http.StatusInternalServerError, view{Kind: "problem", Title: "Something went wrong",
			Message: "The payment could not be completed. Nothing was charged; try again in a moment."})
	}
}

func (p *checkoutPage) renderNotFound(w http.ResponseWriter) {
	p.render(w, http.StatusNotFound, view{Kind: "problem", Title: "Checkout not found",
		Message: "There is no test checkout at this address. Check the link you were given."})
}

func (p *checkoutPage) renderGone(w http.ResponseWriter) {
	p.render(w, http.StatusGone, view{Kind: "problem", Title: "This checkout has expired",
		Message: "Nothing was charged. Start a new checkout from where you came from."})
}

func (p *checkoutPage) render(w http.ResponseWriter, status int, v view) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	var b strings.Builder
	if err := pageTemplate.ExecuteTemplate(&b, "page", v); err != nil {
		p.logger.Error("render test checkout page", "error", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.WriteHeader(status)
	_, _ = w.Write([]byte(b.String()))
}

func summaryView(c *checkout.Checkout) view {
	v := view{CheckoutID: c.ID, Amount: formatCents(core.CentsUp(c.AmountMicros)),
		ExpiresAt: c.ExpiresAt.UTC().Format("15:04 UTC on 2 Jan 2006")}
	switch c.Kind {
	case checkout.KindCreditPack:
		v.Item = "Credit pack " + c.PackID
		v.DetailLabel, v.Detail = "Credits", "$"+core.FormatUSD(c.CreditMicros)+" of fax credit"
	case checkout.KindDraft:
		v.Item = "Fax"
		if c.DraftID != nil {
			v.DetailLabel, v.Detail = "Draft", *c.DraftID
		}
	default:
		v.Item = string(c.Kind)
	}
	return v
}

func receiptView(c *checkout.Checkout) view {
	v := summaryView(c)
	v.Kind = "receipt"
	switch c.Kind {
	case checkout.KindCreditPack:
		v.Title, v.Message = "Paid. Credits added.", "$"+core.FormatUSD(c.CreditMicros)+" of fax credit is in your test balance."
	case checkout.KindDraft:
		v.Title, v.Message = "Paid. Your fax is queued.", "It is being sent now; its status shows wherever you started it."
	default:
		v.Title = "Paid."
	}
	if c.PaidAt != nil {
		v.PaidAt = c.PaidAt.UTC().Format("15:04 UTC on 2 Jan 2006")
	}
	return v
}

func formatCents(c int64) string {
	return fmt.Sprintf("$%d.%02d USD", c/100, c%100)
}

// checkCard validates the test card form. It returns 0 when the card pays,
// 422 for a malformed field (naming it) and 402 for the decline card.
func checkCard(number, expiry, cvc string, now time.Time) (status int, field, msg string) {
	digits := strings.Map(func(r rune) rune {
		if r == ' ' || r == '-' {
			return -1
		}
		return r
	}, number)
	switch {
	case digits == "":
		return http.StatusUnprocessableEntity, "card", "Enter a card number."
	case !allDigits(digits) || len(digits) < 12 || len(digits) > 19:
		return http.StatusUnprocessableEntity, "card", "A card number is 12 to 19 digits."
	case !luhnValid(digits):
		return http.StatusUnprocessableEntity, "card", "That card number is not valid: check the digits."
	case digits != testcheckout.TestCardSuccess && digits != testcheckout.TestCardDecline:
		return http.StatusUnprocessableEntity, "card", "This is a test checkout: use the test card 4242 4242 4242 4242 (or 4000 0000 0000 0002 to see a decline)."
	}
	if msg := checkExpiry(expiry, now); msg != "" {
		return http.StatusUnprocessableEntity, "expiry", msg
	}
	if c := strings.TrimSpace(cvc); !allDigits(c) || len(c) < 3 || len(c) > 4 {
		return http.StatusUnprocessableEntity, "cvc", "The CVC is the 3 or 4 digits on the card."
	}
	if digits == testcheckout.TestCardDecline {
		return http.StatusPaymentRequired, "card", "The test decline card was used, so nothing was paid. Use 4242 4242 4242 4242 to pay."
	}
	return 0, "", ""
}

// checkExpiry accepts MM/YY or MM/YYYY; a card is good through the last day
// of its expiry month.
func checkExpiry(s string, now time.Time) string {
	mm, yy, ok := strings.Cut(strings.ReplaceAll(s, " ", ""), "/")
	month, err1 := strconv.Atoi(mm)
	year, err2 := strconv.Atoi(yy)
	if !ok || err1 != nil || err2 != nil || month < 1 || month > 12 || !allDigits(yy) || (len(yy) != 2 && len(yy) != 4) {
		return "Enter the expiry date as MM/YY."
	}
	if len(yy) == 2 {
		year += 2000
	}
	end := time.Date(year, time.Month(month)+1, 1, 0, 0, 0, 0, time.UTC)
	if !now.Before(end) {
		return "That card has expired: use any future date."
	}
	return ""
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// luhnValid checks the card number checksum (ISO/IEC 7812-1).
func luhnValid(digits string) bool {
	sum := 0
	double := false
	for i := len(digits) - 1; i >= 0; i-- {
		d := int(digits[i] - '0')
		if double {
			d *= 2
			if d > 9 {
				d -= 9
			}
		}
		sum += d
		double = !double
	}
	return sum%10 == 0
}
