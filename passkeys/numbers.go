package passkeys

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"os"
	"strings"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/documents"
	"github.com/faxhub/faxhub/core/inbox"
	"github.com/faxhub/faxhub/core/numbers"
)

// The owner's fax numbers and inbox: search and buy a number (paid at the
// mode's hosted checkout from the number's page, the checkoutUrl agents
// hand the owner), release one, read received faxes and download their
// PDFs, and in test mode deliver a simulated fax to a test number. Every
// decision is core's; these pages only show and forward.

// queryMode is the mode a page or action names in ?mode= (default test).
func queryMode(r *http.Request) (core.Mode, error) {
	if m := r.URL.Query().Get("mode"); m != "" {
		return core.ParseMode(m)
	}
	return core.ModeTest, nil
}

type numbersBody struct {
	Mode    core.Mode
	Numbers []numbers.Number
	// The search form and its results.
	Search      numbers.Search
	Searched    bool
	Available   []numbers.AvailableNumber
	SearchError string
}

func (c *Console) numbersPage(w http.ResponseWriter, r *http.Request, s *signedIn) {
	mode, err := queryMode(r)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	p := core.OwnerPrincipal(s.owner.ID, mode)
	ns, err := c.svc.Numbers.List(r.Context(), p, r.URL.Query().Get("all") == "1")
	if err != nil {
		c.fail(w, r, err)
		return
	}
	q := r.URL.Query()
	b := numbersBody{Mode: mode, Numbers: ns, Search: numbers.Search{Country: q.Get("country"), AreaCode: q.Get("areaCode"), Locality: q.Get("locality")}}
	if q.Has("search") {
		b.Searched = true
		// A refused search (bad input, numbers not offered there, the
		// provider busy) is shown next to the form, not as an error page.
		b.Available, err = c.svc.Numbers.Search(r.Context(), p, b.Search)
		if err != nil {
			if core.ErrorKind(err) == core.KindInternal {
				c.fail(w, r, err)
				return
			}
			b.SearchError = core.AsError(err).Message
		}
	}
	c.render(w, r, http.StatusOK, "numbers", c.page(s, "Numbers", "numbers", b))
}

// buyNumber reserves the number and sends the owner to its page to pay.
func (c *Console) buyNumber(w http.ResponseWriter, r *http.Request, s *signedIn) {
	mode, err := queryMode(r)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	n, err := c.svc.Numbers.Buy(r.Context(), core.OwnerPrincipal(s.owner.ID, mode), numbers.BuyRequest{Number: r.PostFormValue("number")})
	if err != nil {
		c.fail(w, r, err)
		return
	}
	http.Redirect(w, r, numberPath(n), http.StatusSeeOther)
}

func numberPath(n *numbers.Number) string {
	return "/console/numbers/" + url.PathEscape(n.ID) + "?mode=" + string(n.Mode)
}

// ownerNumber finds one of the owner's numbers in the mode the link names,
// or in either mode.
func (c *Console) ownerNumber(r *http.Request, s *signedIn) (*numbers.Number, error) {
	return inOwnerModes(r, s, c.svc.Numbers.Get)
}

type numberBody struct {
	Number *numbers.Number
	Price  string
	// Payable: awaiting payment and still reserved (a lapsed reservation
	// is refused by core when paid; the page says so up front).
	Payable    bool
	Releasable bool
}

func (c *Console) numberPage(w http.ResponseWriter, r *http.Request, s *signedIn) {
	n, err := c.ownerNumber(r, s)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	b := numberBody{
		Number: n, Price: "$" + n.MonthlyPrice + " " + strings.ToUpper(n.Currency),
		Payable:    n.Status == numbers.AwaitingPayment && (n.ReservedUntil == nil || c.now().Before(*n.ReservedUntil)),
		Releasable: n.Status == numbers.AwaitingPayment || n.Status.Receives(),
	}
	d := c.page(s, "Number "+n.E164, "numbers", b)
	if r.URL.Query().Get("released") == "1" {
		d.Notice = "The number is " + string(n.Status) + "."
	}
	c.render(w, r, http.StatusOK, "number", d)
}

// payNumber starts the hosted checkout of the number's first month, like
// a draft's pay button.
func (c *Console) payNumber(w http.ResponseWriter, r *http.Request, s *signedIn) {
	c.payAwaiting(w, r, s, func(ctx context.Context, p core.Principal, n *numbers.Number) (string, error) {
		cs, err := c.svc.Checkout.StartNumber(ctx, p, n.ID)
		if err != nil {
			return "", err
		}
		return cs.CheckoutURL, nil
	})
}

// payNumberWithCredits pays the first month from the mode's credits.
func (c *Console) payNumberWithCredits(w http.ResponseWriter, r *http.Request, s *signedIn) {
	c.payAwaiting(w, r, s, func(ctx context.Context, p core.Principal, n *numbers.Number) (string, error) {
		paid, err := c.svc.Numbers.PayWithCredits(ctx, p, n.ID)
		if err != nil {
			return "", err
		}
		return numberPath(paid), nil
	})
}

// payAwaiting runs pay for the owner's number named by the path while it
// awaits payment, and redirects where pay says; a number paid already
// goes back to its page.
func (c *Console) payAwaiting(w http.ResponseWriter, r *http.Request, s *signedIn, pay func(context.Context, core.Principal, *numbers.Number) (string, error)) {
	n, err := c.ownerNumber(r, s)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	if n.Status != numbers.AwaitingPayment {
		http.Redirect(w, r, numberPath(n), http.StatusSeeOther)
		return
	}
	to, err := pay(r.Context(), core.OwnerPrincipal(s.owner.ID, n.Mode), n)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	http.Redirect(w, r, to, http.StatusSeeOther)
}

// releaseNumber needs the confirmation box ticked: a released number
// cannot be had back, and the rest of its month is not refunded.
func (c *Console) releaseNumber(w http.ResponseWriter, r *http.Request, s *signedIn) {
	if r.PostFormValue("confirm") != "yes" {
		c.fail(w, r, core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "tick the box to confirm that you want to give this number up"))
		return
	}
	n, err := c.ownerNumber(r, s)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	n, err = c.svc.Numbers.Release(r.Context(), core.OwnerPrincipal(s.owner.ID, n.Mode), n.ID)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	http.Redirect(w, r, numberPath(n)+"&released=1", http.StatusSeeOther)
}

type inboxBody struct {
	Mode  core.Mode
	Faxes []inbox.InboundFax
	// Next is the cursor of the next page.
	Next string
	// TestNumbers are the numbers a simulated fax can be delivered to
	// (test mode only).
	TestNumbers []numbers.Number
	MaxUpload   int64
}

func (c *Console) inboxPage(w http.ResponseWriter, r *http.Request, s *signedIn) {
	mode, err := queryMode(r)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	p := core.OwnerPrincipal(s.owner.ID, mode)
	page, err := c.svc.Inbox.List(r.Context(), p, inbox.Query{StartingAfter: r.URL.Query().Get("after"), Limit: 50})
	if err != nil {
		c.fail(w, r, err)
		return
	}
	b := inboxBody{Mode: mode, Faxes: page.Data, Next: page.Next, MaxUpload: c.svc.Config().Documents.MaxUploadBytes}
	if mode == core.ModeTest {
		ns, err := c.svc.Numbers.List(r.Context(), p, false)
		if err != nil {
			c.fail(w, r, err)
			return
		}
		for _, n := range ns {
			if n.Status.Receives() {
				b.TestNumbers = append(b.TestNumbers, n)
			}
		}
	}
	c.render(w, r, http.StatusOK, "inbox", c.page(s, "Inbox", "inbox", b))
}

// ownerInboxFax finds one of the owner's received faxes like ownerNumber.
func (c *Console) ownerInboxFax(r *http.Request, s *signedIn) (*inbox.InboundFax, error) {
	return inOwnerModes(r, s, c.svc.Inbox.Get)
}

// inOwnerModes reads the owner's thing named by the path's id with get, in
// the mode the link names, or else in test mode and then live mode.
func inOwnerModes[T any](r *http.Request, s *signedIn, get func(context.Context, core.Principal, string) (*T, error)) (*T, error) {
	modes := []core.Mode{core.ModeTest, core.ModeLive}
	if r.URL.Query().Get("mode") != "" {
		m, err := queryMode(r)
		if err != nil {
			return nil, err
		}
		modes = []core.Mode{m}
	}
	var err error
	for _, m := range modes {
		var v *T
		v, err = get(r.Context(), core.OwnerPrincipal(s.owner.ID, m), r.PathValue("id"))
		if err == nil || core.ErrorKind(err) != core.KindNotFound {
			return v, err
		}
	}
	return nil, err
}

func (c *Console) inboxFaxPage(w http.ResponseWriter, r *http.Request, s *signedIn) {
	f, err := c.ownerInboxFax(r, s)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	d := c.page(s, "Received fax", "inbox", f)
	if f.Status == inbox.Receiving {
		d.Notice = "This fax is still being read; reload the page in a moment."
	}
	c.render(w, r, http.StatusOK, "inboxfax", d)
}

// inboxDownload sends the browser to a short-lived signed link to the PDF.
func (c *Console) inboxDownload(w http.ResponseWriter, r *http.Request, s *signedIn) {
	f, err := c.ownerInboxFax(r, s)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	link, err := c.svc.Inbox.Download(r.Context(), core.OwnerPrincipal(s.owner.ID, f.Mode), f.ID)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	http.Redirect(w, r, link.URL, http.StatusSeeOther)
}

// Bounds of the simulate form besides its file.
const (
	simulateFormOverhead = 16 << 10
	simulateFormMemory   = 1 << 20
)

// simulateInbound bounds and parses the multipart form of a simulated fax
// before the session and form token are checked (withOwner reads the
// token from the parsed form), then delivers it. Only a signed-in
// browser's body is read.
func (c *Console) simulateInbound(w http.ResponseWriter, r *http.Request) {
	if c.bodySession(w, r) == nil {
		return
	}
	maxFile := c.svc.Config().Documents.MaxUploadBytes
	if r.ContentLength > maxFile+simulateFormOverhead {
		c.fail(w, r, core.Errorf(core.KindTooLarge, documents.CodeFileTooLarge, "the file is larger than %d bytes", maxFile))
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxFile+simulateFormOverhead)
	if err := r.ParseMultipartForm(simulateFormMemory); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			c.fail(w, r, core.Errorf(core.KindTooLarge, documents.CodeFileTooLarge, "the file is larger than %d bytes", maxFile))
			return
		}
		c.fail(w, r, core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "choose a test number and a file to deliver"))
		return
	}
	defer func() { _ = r.MultipartForm.RemoveAll() }()
	c.withOwner(c.deliverSimulated)(w, r)
}

func (c *Console) deliverSimulated(w http.ResponseWriter, r *http.Request, s *signedIn) {
	file, _, err := r.FormFile("file")
	if err != nil {
		c.fail(w, r, core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "choose a file to deliver"))
		return
	}
	defer file.Close()
	tmp, err := os.CreateTemp(c.svc.Config().TempDir, "faxhub-console-simulate-")
	if err != nil {
		c.fail(w, r, err)
		return
	}
	path := tmp.Name()
	defer os.Remove(path) // core consumes it; this covers the failures before
	_, err = tmp.ReadFrom(file)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		c.fail(w, r, err)
		return
	}
	f, err := c.svc.Inbox.Simulate(r.Context(), core.OwnerPrincipal(s.owner.ID, core.ModeTest), inbox.TestInboundFax{
		To: r.PostFormValue("to"), From: strings.TrimSpace(r.PostFormValue("from")), Path: path,
	})
	if err != nil {
		c.fail(w, r, err)
		return
	}
	http.Redirect(w, r, "/console/inbox/"+url.PathEscape(f.ID)+"?mode=test", http.StatusSeeOther)
}
