package passkeys_test

import (
	"bytes"
	"context"
	"html"
	"mime/multipart"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/numbers"
	"github.com/faxhub/faxhub/internal/testenv"
)

// simulate posts the test inbox's multipart form.
func (b *browser) simulate(csrf, to string, file []byte) reply {
	b.h.t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	_ = mw.WriteField("csrf", csrf)
	_ = mw.WriteField("to", to)
	_ = mw.WriteField("from", "+13125550100")
	fw, _ := mw.CreateFormFile("file", "in.pdf")
	_, _ = fw.Write(file)
	_ = mw.Close()
	return b.do("POST", "/console/inbox/simulate", &body, mw.FormDataContentType(), nil)
}

func wantRedirect(t *testing.T, what string, r reply, prefix string) string {
	t.Helper()
	loc := r.header.Get("Location")
	if r.status != http.StatusSeeOther || !strings.HasPrefix(loc, prefix) {
		t.Fatalf("%s: %d to %q, want a redirect to %s…\n%s", what, r.status, loc, prefix, r.body)
	}
	return loc
}

var numberLink = regexp.MustCompile(`^/console/numbers/(num_[a-z0-9]+)\?mode=test$`)

// TestNumbersAndInboxPages: an owner finds, buys and pays for a test
// number from the console, receives a simulated fax on it, reads its text
// and downloads it through a signed link; another owner sees none of it;
// a signed-out owner opening the checkoutUrl an agent handed over signs in
// and comes back.
func TestNumbersAndInboxPages(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	a, _ := h.signUp("ada@example.com", "Ada")
	b, _ := h.signUp("bob@example.com", "Bob")
	csrfA, csrfB := a.csrf(), b.csrf()

	r := a.get("/console/numbers")
	wantStatus(t, "numbers page", r, 200)
	for _, want := range []string{"No numbers in test mode", `href="/console/numbers"`, `href="/console/inbox"`, "Find a number"} {
		if !strings.Contains(html.UnescapeString(r.body), want) {
			t.Errorf("numbers page lacks %q", want)
		}
	}
	r = a.get("/console/numbers?mode=test&search=1&country=US&areaCode=212")
	wantStatus(t, "search", r, 200)
	found := regexp.MustCompile(`name="number" value="(\+1212[0-9]+)"`).FindStringSubmatch(html.UnescapeString(r.body))
	if found == nil {
		t.Fatalf("search lists no number to buy:\n%s", r.body)
	}
	e164 := found[1]
	r = a.get("/console/numbers?mode=test&search=1&country=DE")
	if r.status != 200 || !strings.Contains(html.UnescapeString(r.body), "does not rent fax numbers in DE") {
		t.Fatalf("search in DE: %d\n%s", r.status, r.body)
	}
	wantStatus(t, "live numbers", a.get("/console/numbers?mode=live"), 200)
	wantStatus(t, "bad mode", a.get("/console/numbers?mode=prod"), 400)

	// Buying needs the form token; then the number's page asks for payment.
	wantStatus(t, "buy without token", a.form("/console/numbers?mode=test", url.Values{"number": {e164}}), 403)
	loc := wantRedirect(t, "buy", a.form("/console/numbers?mode=test", url.Values{"csrf": {csrfA}, "number": {e164}}), "/console/numbers/num_")
	m := numberLink.FindStringSubmatch(loc)
	if m == nil {
		t.Fatalf("number page %q", loc)
	}
	id := m[1]
	pa := core.OwnerPrincipal(h.ownerID("ada@example.com"), core.ModeTest)
	n, err := h.env.Svc.Numbers.Get(ctx, pa, id)
	if err != nil {
		t.Fatal(err)
	}
	// The checkoutUrl agents hand the owner is this page.
	if u, err := url.Parse(h.env.Svc.Numbers.CheckoutURL(n)); err != nil || u.RequestURI() != loc {
		t.Fatalf("checkoutUrl %v, page %s", u, loc)
	}
	r = a.get(loc)
	if r.status != 200 || !strings.Contains(html.UnescapeString(r.body), "Pay $"+n.MonthlyPrice) || !strings.Contains(html.UnescapeString(r.body), e164) {
		t.Fatalf("number page: %d\n%s", r.status, r.body)
	}

	// The checkoutUrl sends a signed-out browser to sign in and back.
	anon := h.browser()
	wantRedirect(t, "signed out", anon.get(loc), "/signin?next="+url.QueryEscape(loc))
	// Another owner: not found, whatever the action.
	wantStatus(t, "B's view of A's number", b.get(loc), 404)
	wantStatus(t, "B pays A's number", b.form("/console/numbers/"+id+"/pay?mode=test", url.Values{"csrf": {csrfB}}), 404)
	wantStatus(t, "B releases A's number", b.form("/console/numbers/"+id+"/release?mode=test", url.Values{"csrf": {csrfB}, "confirm": {"yes"}}), 404)

	// Pay: the mode's checkout, then the provider sets the number up.
	pay := wantRedirect(t, "pay", a.form("/console/numbers/"+id+"/pay?mode=test", url.Values{"csrf": {csrfA}}), "")
	chk := regexp.MustCompile(`chk_[a-z0-9]+`).FindString(pay)
	if chk == "" {
		t.Fatalf("pay went to %q", pay)
	}
	if _, err := h.env.Svc.Checkout.Complete(ctx, chk); err != nil {
		t.Fatal(err)
	}
	h.env.DrainQueue(t)
	r = a.get(loc)
	if r.status != 200 || !strings.Contains(html.UnescapeString(r.body), "state-active") || strings.Contains(html.UnescapeString(r.body), "Pay $") {
		t.Fatalf("paid number page: %d\n%s", r.status, r.body)
	}
	if r := a.get("/console/numbers"); !strings.Contains(r.body, `action="/console/numbers/`+id+`/release?mode=test"`) {
		t.Fatalf("the list has no release button:\n%s", r.body)
	}
	wantRedirect(t, "pay again", a.form("/console/numbers/"+id+"/pay?mode=test", url.Values{"csrf": {csrfA}}), loc)

	// Or from credits: a second number paid from the test balance.
	loc2 := wantRedirect(t, "buy a second", a.form("/console/numbers?mode=test", url.Values{"csrf": {csrfA}, "number": {"+14155550188"}}), "/console/numbers/num_")
	id2 := numberLink.FindStringSubmatch(loc2)[1]
	if r := a.get(loc2); !strings.Contains(r.body, `/console/numbers/`+id2+`/pay-credits?mode=test`) {
		t.Fatalf("no pay-from-credits button:\n%s", r.body)
	}
	wantStatus(t, "B pays A's number from credits", b.form("/console/numbers/"+id2+"/pay-credits?mode=test", url.Values{"csrf": {csrfB}}), 404)
	wantStatus(t, "pay from credits without token", a.form("/console/numbers/"+id2+"/pay-credits?mode=test", nil), 403)
	wantStatus(t, "pay from no credits", a.form("/console/numbers/"+id2+"/pay-credits?mode=test", url.Values{"csrf": {csrfA}}), 402)
	if _, err := h.env.Svc.Credits.Grant(ctx, pa.OwnerID, core.ModeTest, 5*core.MicrosPerDollar, "test"); err != nil {
		t.Fatal(err)
	}
	wantRedirect(t, "pay from credits", a.form("/console/numbers/"+id2+"/pay-credits?mode=test", url.Values{"csrf": {csrfA}}), loc2)
	if n2, err := h.env.Svc.Numbers.Get(ctx, pa, id2); err != nil || n2.Status != numbers.Pending && n2.Status != numbers.Active {
		t.Fatalf("paid from credits: %+v %v", n2, err)
	}

	// Inbox: the simulate form offers the test number.
	r = a.get("/console/inbox")
	if r.status != 200 || !strings.Contains(html.UnescapeString(r.body), "Simulate an incoming fax") || !strings.Contains(html.UnescapeString(r.body), `<option value="`+id+`">`+e164) {
		t.Fatalf("inbox page: %d\n%s", r.status, r.body)
	}
	if r := a.get("/console/inbox?mode=live"); r.status != 200 || strings.Contains(html.UnescapeString(r.body), "Simulate an incoming fax") {
		t.Fatalf("live inbox: %d", r.status)
	}
	pdf := testenv.MinimalPDF(2)
	wantStatus(t, "simulate without token", a.simulate("", id, pdf), 403)
	wantStatus(t, "simulate signed out", anon.simulate("", id, pdf), 401)
	wantStatus(t, "B simulates to A's number", b.simulate(csrfB, id, pdf), 404)
	wantStatus(t, "oversize simulate", a.simulate(csrfA, id, bytes.Repeat([]byte("x"), int(h.env.Svc.Config().Documents.MaxUploadBytes)+1)), 413)
	faxLoc := wantRedirect(t, "simulate", a.simulate(csrfA, id, pdf), "/console/inbox/inb_")
	h.env.DrainQueue(t)
	faxID := strings.TrimSuffix(strings.TrimPrefix(faxLoc, "/console/inbox/"), "?mode=test")

	r = a.get("/console/inbox?mode=test")
	if r.status != 200 || !strings.Contains(html.UnescapeString(r.body), faxID) || !strings.Contains(html.UnescapeString(r.body), "+13125550100") || !strings.Contains(html.UnescapeString(r.body), "state-received") {
		t.Fatalf("inbox lists: %d\n%s", r.status, r.body)
	}
	r = a.get(faxLoc)
	if r.status != 200 || !strings.Contains(html.UnescapeString(r.body), "Download PDF") {
		t.Fatalf("fax page: %d\n%s", r.status, r.body)
	}
	f, err := h.env.Svc.Inbox.Get(ctx, pa, faxID)
	if err != nil {
		t.Fatal(err)
	}
	if f.Text != "" && !strings.Contains(html.UnescapeString(r.body), "faxhub test page 2") {
		t.Fatalf("fax page lacks the text %q", f.Text)
	}
	if r := b.get("/console/inbox"); strings.Contains(html.UnescapeString(r.body), faxID) {
		t.Fatal("B's inbox lists A's fax")
	}
	wantStatus(t, "B reads A's fax", b.get(faxLoc), 404)
	wantStatus(t, "B downloads A's fax", b.form("/console/inbox/"+faxID+"/download?mode=test", url.Values{"csrf": {csrfB}}), 404)
	link := wantRedirect(t, "download", a.form("/console/inbox/"+faxID+"/download?mode=test", url.Values{"csrf": {csrfA}}),
		h.env.Svc.Config().APIURL+core.LinkInboxFile.PathPrefix()+faxID+".")
	rc, got, err := h.env.Svc.Inbox.OpenDownload(ctx, strings.TrimPrefix(link, h.env.Svc.Config().APIURL+core.LinkInboxFile.PathPrefix()))
	if err != nil || got.ID != faxID {
		t.Fatalf("the signed link opens %v %v", got, err)
	}
	rc.Close()

	// Release needs the box ticked.
	wantStatus(t, "release unconfirmed", a.form("/console/numbers/"+id+"/release?mode=test", url.Values{"csrf": {csrfA}}), 400)
	wantRedirect(t, "release", a.form("/console/numbers/"+id+"/release?mode=test", url.Values{"csrf": {csrfA}, "confirm": {"yes"}}), loc+"&released=1")
	if r := a.get(loc); !strings.Contains(html.UnescapeString(r.body), "state-released") || strings.Contains(html.UnescapeString(r.body), "Release "+e164) {
		t.Fatalf("released page:\n%s", r.body)
	}
	wantStatus(t, "release twice", a.form("/console/numbers/"+id+"/release?mode=test", url.Values{"csrf": {csrfA}, "confirm": {"yes"}}), 409)
}
