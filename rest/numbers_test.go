package rest_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"io"
	"mime/multipart"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/credits"
	"github.com/faxhub/faxhub/core/documents"
	"github.com/faxhub/faxhub/core/faxes"
	"github.com/faxhub/faxhub/core/inbox"
	"github.com/faxhub/faxhub/core/numbers"
	"github.com/faxhub/faxhub/core/services"
	"github.com/faxhub/faxhub/internal/testenv"
)

// offsetClock is the service's clock in these tests: real time (the queue
// runs on it) that a test can move forward.
type offsetClock struct {
	mu     sync.Mutex
	offset time.Duration
}

func (c *offsetClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.offset)
}

func (c *offsetClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.offset += d
}

func newClockHarness(t *testing.T) (*harness, *offsetClock) {
	clk := &offsetClock{}
	return newHarness(t, testenv.WithConfig(func(c *services.Config) { c.Now = clk.Now })), clk
}

// buyAndPay buys number over REST and pays its first month at the test
// checkout, the way the owner does from checkoutUrl, then waits for the
// provider to provision it.
func (h *harness) buyAndPay(key, number string) numbers.Number {
	h.t.Helper()
	var n numbers.Number
	h.do(key, "POST", "/api/v1/numbers", map[string]string{"number": number}, nil).status(http.StatusOK).decode(&n)
	if n.Status != numbers.AwaitingPayment || !strings.HasSuffix(n.CheckoutURL, "/console/numbers/"+n.ID+"?mode=test") || n.MonthlyCents <= 0 {
		h.t.Fatalf("bought: %+v", n)
	}
	ctx := context.Background()
	p := h.env.Principal(h.t, key)
	cs, err := h.env.Svc.Checkout.StartNumber(ctx, p, n.ID)
	if err != nil {
		h.t.Fatal(err)
	}
	if _, err := h.env.Svc.Checkout.Complete(ctx, cs.ID); err != nil {
		h.t.Fatal(err)
	}
	h.env.DrainQueue(h.t)
	h.do(key, "GET", "/api/v1/numbers/"+n.ID, nil, nil).status(http.StatusOK).decode(&n)
	if n.Status != numbers.Active {
		h.t.Fatalf("paid number is %s", n.Status)
	}
	return n
}

type formFile struct {
	name string
	body io.Reader
}

// simulate posts the multipart form of POST /api/v1/inbox/simulate.
func (h *harness) simulate(key string, fields map[string]string, file *formFile) *result {
	h.t.Helper()
	var b bytes.Buffer
	mw := multipart.NewWriter(&b)
	for k, v := range fields {
		if err := mw.WriteField(k, v); err != nil {
			h.t.Fatal(err)
		}
	}
	if file != nil {
		fw, err := mw.CreateFormFile("file", file.name)
		if err != nil {
			h.t.Fatal(err)
		}
		if _, err := io.Copy(fw, file.body); err != nil {
			h.t.Fatal(err)
		}
	}
	if err := mw.Close(); err != nil {
		h.t.Fatal(err)
	}
	return h.do(key, "POST", "/api/v1/inbox/simulate", b.Bytes(), map[string]string{"Content-Type": mw.FormDataContentType()})
}

// TestE2ENumbersAndInbox is issue 14 end to end over REST: search, buy,
// pay at the test checkout, active; a fax simulated to the number is
// listed, read with its text, and downloaded through its signed link; and
// the refusals on the way.
func TestE2ENumbersAndInbox(t *testing.T) {
	h, clk := newClockHarness(t)
	keyA, keyB, liveA := h.env.KeyATest, h.env.KeyBTest, h.env.KeyALive

	var found struct{ Data []numbers.AvailableNumber }
	h.do(keyA, "GET", "/api/v1/numbers/available?country=us&areaCode=212&limit=2", nil, nil).status(http.StatusOK).decode(&found)
	if len(found.Data) != 2 || !strings.HasPrefix(found.Data[0].E164, "+1212") || found.Data[0].MonthlyPrice == "" || found.Data[0].Currency != core.Currency {
		t.Fatalf("search: %+v", found)
	}
	for _, c := range []struct {
		query  string
		status int
		code   string
	}{
		{"country=USA", 400, core.CodeInvalidRequest},
		{"country=U1", 400, core.CodeInvalidRequest},
		{"country=DE", 422, core.CodeNumbersNotOffered},
		{"areaCode=21a", 400, core.CodeInvalidRequest},
		{"locality=" + strings.Repeat("x", numbers.MaxLocality+1), 400, core.CodeInvalidRequest},
		{"limit=0", 400, core.CodeInvalidRequest},
		{"limit=51", 400, core.CodeInvalidRequest},
		{"country=US&country=CA", 400, core.CodeInvalidRequest},
		{"area_code=212", 400, core.CodeInvalidRequest},
	} {
		h.do(keyA, "GET", "/api/v1/numbers/available?"+c.query, nil, nil).problem(c.status, c.code)
	}
	h.do(keyA, "POST", "/api/v1/numbers", map[string]string{"number": "+12125550999"}, nil).problem(409, numbers.CodeNumberUnavailable)
	h.do(keyA, "POST", "/api/v1/numbers", map[string]string{"number": "+1555"}, nil).problem(422, core.CodeInvalidDestination)
	h.do(keyA, "POST", "/api/v1/numbers", map[string]string{}, nil).problem(400, core.CodeInvalidRequest)
	h.do(keyA, "POST", "/api/v1/numbers", map[string]string{"Number": found.Data[0].E164}, nil).problem(400, core.CodeInvalidRequest)
	h.do(keyA, "GET", "/api/v1/numbers?all=yes", nil, nil).problem(400, core.CodeInvalidRequest)
	h.do(keyA, "GET", "/api/v1/numbers/num_nope", nil, nil).problem(404, core.CodeNotFound)
	h.do(liveA, "GET", "/api/v1/numbers/available", nil, nil).problem(503, numbers.CodeNumbersNotConfigured)

	n := h.buyAndPay(keyA, found.Data[0].E164)
	// B sees nothing of A's number and cannot buy, release or receive on it.
	h.do(keyB, "GET", "/api/v1/numbers/"+n.ID, nil, nil).problem(404, core.CodeNotFound)
	h.do(keyB, "POST", "/api/v1/numbers/"+n.ID+"/release", nil, nil).problem(404, core.CodeNotFound)
	h.do(keyB, "POST", "/api/v1/numbers", map[string]string{"number": n.E164}, nil).problem(409, numbers.CodeNumberUnavailable)
	h.do(liveA, "GET", "/api/v1/numbers/"+n.ID, nil, nil).problem(404, core.CodeNotFound)
	var list struct{ Data []numbers.Number }
	h.do(keyB, "GET", "/api/v1/numbers", nil, nil).status(http.StatusOK).decode(&list)
	if len(list.Data) != 0 {
		t.Fatalf("B's numbers: %+v", list.Data)
	}
	h.do(keyA, "GET", "/api/v1/numbers", nil, nil).status(http.StatusOK).decode(&list)
	if len(list.Data) != 1 || list.Data[0].ID != n.ID || list.Data[0].CheckoutURL != "" {
		t.Fatalf("A's numbers: %+v", list.Data)
	}

	// Simulate a fax to the number; refusals first.
	pdf := testenv.MinimalPDF(2)
	file := func() *formFile { return &formFile{"in.pdf", bytes.NewReader(pdf)} }
	h.simulate(liveA, map[string]string{"to": n.E164}, file()).problem(403, inbox.CodeTestModeOnly)
	h.simulate(keyB, map[string]string{"to": n.E164}, file()).problem(404, core.CodeNotFound)
	h.simulate(keyA, map[string]string{"to": n.E164}, nil).problem(400, core.CodeInvalidRequest)
	h.simulate(keyA, map[string]string{}, file()).problem(400, core.CodeInvalidRequest)
	h.simulate(keyA, map[string]string{"to": n.E164, "subject": "x"}, file()).problem(400, core.CodeInvalidRequest)
	h.simulate(keyA, map[string]string{"to": n.E164}, &formFile{"empty.pdf", bytes.NewReader(nil)}).problem(400, documents.CodeEmptyFile)
	h.do(keyA, "POST", "/api/v1/inbox/simulate", map[string]string{"to": n.E164}, nil).problem(415, core.CodeUnsupportedContentType)
	limit := h.env.Svc.Config().Documents.MaxUploadBytes
	// Oversize: declared (refused before reading) and streamed (chunked,
	// refused while reading).
	h.simulate(keyA, map[string]string{"to": n.E164}, &formFile{"big.pdf", io.LimitReader(zeros{}, limit+1)}).problem(413, documents.CodeFileTooLarge)
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	go func() {
		_ = mw.WriteField("to", n.E164)
		fw, _ := mw.CreateFormFile("file", "big.pdf")
		_, _ = io.Copy(fw, io.LimitReader(zeros{}, limit+1))
		_ = mw.Close()
		_ = pw.Close()
	}()
	h.do(keyA, "POST", "/api/v1/inbox/simulate", pr, map[string]string{"Content-Type": mw.FormDataContentType()}).problem(413, documents.CodeFileTooLarge)
	_ = pr.Close()

	var f inbox.InboundFax
	h.simulate(keyA, map[string]string{"to": n.ID, "from": "+13125550100"}, file()).status(http.StatusOK).decode(&f)
	if f.Status != inbox.Receiving || f.NumberID != n.ID || f.To != n.E164 || f.From != "+13125550100" {
		t.Fatalf("simulated: %+v", f)
	}
	h.env.DrainQueue(t)

	var page core.Page[inbox.InboundFax]
	h.do(keyA, "GET", "/api/v1/inbox?numberId="+n.ID+"&limit=10", nil, nil).status(http.StatusOK).decode(&page)
	if len(page.Data) != 1 || page.Data[0].ID != f.ID || page.Data[0].Text != "" || page.Data[0].Status != inbox.Received {
		t.Fatalf("inbox: %+v", page)
	}
	h.do(keyB, "GET", "/api/v1/inbox", nil, nil).status(http.StatusOK).decode(&page)
	if len(page.Data) != 0 {
		t.Fatalf("B's inbox: %+v", page.Data)
	}
	h.do(keyA, "GET", "/api/v1/inbox?starting_after=inb_x&startingAfter=inb_x", nil, nil).problem(400, core.CodeInvalidRequest)
	h.do(keyA, "GET", "/api/v1/inbox?startingAfter=inb_nope", nil, nil).problem(400, core.CodeInvalidRequest)
	h.do(keyA, "GET", "/api/v1/inbox?number_id="+n.ID, nil, nil).problem(400, core.CodeInvalidRequest)

	var got inbox.InboundFax
	h.do(keyA, "GET", "/api/v1/inbox/"+f.ID, nil, nil).status(http.StatusOK).decode(&got)
	if got.Status != inbox.Received || got.Pages != 2 || got.Bytes == 0 || got.TextStatus == "" {
		t.Fatalf("received fax: %+v", got)
	}
	if _, err := exec.LookPath("pdftotext"); err == nil && (got.TextStatus != inbox.TextExtracted || !strings.Contains(got.Text, "faxhub test page 2")) {
		t.Fatalf("text: %q %s %s", got.Text, got.TextStatus, got.TextNote)
	}
	h.do(keyB, "GET", "/api/v1/inbox/"+f.ID, nil, nil).problem(404, core.CodeNotFound)
	h.do(keyB, "POST", "/api/v1/inbox/"+f.ID+"/download", nil, nil).problem(404, core.CodeNotFound)
	h.do(keyA, "GET", "/api/v1/inbox/inb_nope", nil, nil).problem(404, core.CodeNotFound)

	var link inbox.Link
	h.do(keyA, "POST", "/api/v1/inbox/"+f.ID+"/download", nil, nil).status(http.StatusOK).decode(&link)
	prefix := h.env.Svc.Config().APIURL + core.LinkInboxFile.PathPrefix()
	if !strings.HasPrefix(link.URL, prefix) || !link.ExpiresAt.After(clk.Now()) {
		t.Fatalf("link: %+v", link)
	}
	path := strings.TrimPrefix(link.URL, h.env.Svc.Config().APIURL)
	res := h.do("", "GET", path, nil, nil)
	if res.code != http.StatusOK || !bytes.HasPrefix(res.body, []byte("%PDF-")) {
		t.Fatalf("download: %d %q", res.code, res.body[:min(len(res.body), 40)])
	}
	for k, want := range map[string]string{
		"Content-Type": "application/pdf", "Content-Disposition": `attachment; filename="` + f.ID + `.pdf"`,
		"Cache-Control": "private, no-store", "Content-Length": strconv.Itoa(len(res.body)),
	} {
		if got := res.header.Get(k); got != want {
			t.Errorf("download %s = %q, want %q", k, got, want)
		}
	}
	token := strings.TrimPrefix(path, core.LinkInboxFile.PathPrefix())
	for _, bad := range []string{token + "x", strings.Replace(token, "inb_", "fax_", 1), "inb_x.1.y", strings.Repeat("a", 300)} {
		h.do("", "GET", core.LinkInboxFile.PathPrefix()+bad, nil, nil).problem(404, inbox.CodeDownloadLink)
	}
	// 5 minutes: served a second before, refused a second after (this
	// clock runs with the wall clock; core pins the exact instant).
	if left := link.ExpiresAt.Sub(clk.Now()); left <= inbox.DownloadTTL-2*time.Second || left > inbox.DownloadTTL {
		t.Fatalf("link lives %s, want 5 minutes", left)
	}
	clk.Advance(link.ExpiresAt.Sub(clk.Now()) - time.Second)
	if res := h.do("", "GET", path, nil, nil); res.code != http.StatusOK {
		t.Fatalf("download just before the link expires: %d %s", res.code, res.body)
	}
	clk.Advance(2 * time.Second)
	h.do("", "GET", path, nil, nil).problem(404, inbox.CodeDownloadLink)
	clk.Advance(inbox.DownloadTTL + time.Second)
	h.do("", "GET", path, nil, nil).problem(404, inbox.CodeDownloadLink)

	// Release, twice; the released number no longer receives.
	var rel numbers.Number
	h.do(keyA, "POST", "/api/v1/numbers/"+n.ID+"/release", nil, nil).status(http.StatusOK).decode(&rel)
	if rel.Status != numbers.Released || rel.ReleasedAt == nil {
		t.Fatalf("released: %+v", rel)
	}
	h.do(keyA, "POST", "/api/v1/numbers/"+n.ID+"/release", nil, nil).problem(409, numbers.CodeNumberState)
	h.do(keyA, "DELETE", "/api/v1/numbers/"+n.ID, nil, nil).problem(409, numbers.CodeNumberState)
	h.simulate(keyA, map[string]string{"to": n.ID}, file()).problem(409, inbox.CodeNumberNotReceiving)
	h.do(keyA, "GET", "/api/v1/numbers", nil, nil).status(http.StatusOK).decode(&list)
	if len(list.Data) != 0 {
		t.Fatalf("held numbers after release: %+v", list.Data)
	}
	h.do(keyA, "GET", "/api/v1/numbers?all=true", nil, nil).status(http.StatusOK).decode(&list)
	if len(list.Data) != 1 || list.Data[0].Status != numbers.Released {
		t.Fatalf("all numbers: %+v", list.Data)
	}
}

// TestE2ENumberCancelAndFrom: DELETE cancels an unpaid reservation; a send
// from an owned active number is accepted (strict JSON knows from), from
// another number is refused.
func TestE2ENumberCancelAndFrom(t *testing.T) {
	h := newHarness(t)
	key := h.env.KeyATest
	var found struct{ Data []numbers.AvailableNumber }
	h.do(key, "GET", "/api/v1/numbers/available?areaCode=415&limit=2", nil, nil).status(http.StatusOK).decode(&found)
	if len(found.Data) != 2 {
		t.Fatalf("search: %+v", found)
	}
	var n numbers.Number
	h.do(key, "POST", "/api/v1/numbers", map[string]string{"number": found.Data[1].E164}, nil).status(http.StatusOK).decode(&n)
	var canceled numbers.Number
	h.do(key, "DELETE", "/api/v1/numbers/"+n.ID, nil, nil).status(http.StatusOK).decode(&canceled)
	if canceled.Status != numbers.Canceled || canceled.CheckoutURL != "" {
		t.Fatalf("canceled: %+v", canceled)
	}

	// Paid from credits: pending at once, active once provisioned; an
	// owner without the credits gets a 402.
	var active numbers.Number
	h.do(key, "POST", "/api/v1/numbers", map[string]any{"number": found.Data[0].E164, "payWithCredits": true}, nil).status(http.StatusOK).decode(&active)
	if active.Status != numbers.Pending || active.CheckoutURL != "" || active.PaidThrough == nil {
		t.Fatalf("bought with credits: %+v", active)
	}
	h.env.DrainQueue(t)
	h.do(key, "GET", "/api/v1/numbers/"+active.ID, nil, nil).status(http.StatusOK).decode(&active)
	if active.Status != numbers.Active {
		t.Fatalf("paid number is %s", active.Status)
	}
	broke := newHarness(t, testenv.WithoutCredits())
	broke.do(broke.env.KeyATest, "POST", "/api/v1/numbers", map[string]any{"number": found.Data[1].E164, "payWithCredits": true}, nil).problem(402, credits.CodeInsufficientCredits)
	// A reserved number paid later from credits (POST …/pay).
	var reserved, paid numbers.Number
	h.do(key, "POST", "/api/v1/numbers", map[string]string{"number": found.Data[1].E164}, nil).status(http.StatusOK).decode(&reserved)
	h.do(h.env.KeyBTest, "POST", "/api/v1/numbers/"+reserved.ID+"/pay", nil, nil).problem(404, core.CodeNotFound)
	h.do(key, "POST", "/api/v1/numbers/"+reserved.ID+"/pay", nil, nil).status(http.StatusOK).decode(&paid)
	if paid.Status != numbers.Pending || paid.CheckoutURL != "" {
		t.Fatalf("paid from credits: %+v", paid)
	}
	h.do(key, "POST", "/api/v1/numbers/"+reserved.ID+"/pay", nil, nil).problem(409, numbers.CodeNumberState)
	var brokeNum numbers.Number
	broke.do(broke.env.KeyATest, "POST", "/api/v1/numbers", map[string]string{"number": "+14155550189"}, nil).status(http.StatusOK).decode(&brokeNum)
	broke.do(broke.env.KeyATest, "POST", "/api/v1/numbers/"+brokeNum.ID+"/pay", nil, nil).problem(402, credits.CodeInsufficientCredits)
	doc := h.upload(key, testenv.MinimalPDF(1)).Document
	fax := h.sendOK(key, map[string]any{"to": deliverable, "documentId": doc.ID, "from": active.E164})
	if fax.From != active.E164 {
		t.Fatalf("fax from %q, want %s", fax.From, active.E164)
	}
	h.send(key, "k-from-other", map[string]any{"to": deliverable, "documentId": doc.ID, "from": "+12125550100"}).problem(400, numbers.CodeFromNumberNotOwned)
	h.send(h.env.KeyBTest, "k-from-b", map[string]any{"to": deliverable, "documentId": doc.ID, "from": active.ID}).problem(400, numbers.CodeFromNumberNotOwned)
}

// TestE2EProviderMedia: a provider fetches a queued or sending fax's PDF
// through its media link, with its length and no redirect; a forged link,
// or one for a fax no longer being sent, is a 404.
func TestE2EProviderMedia(t *testing.T) {
	h := newHarness(t, testenv.WithoutWorkers())
	key := h.env.KeyATest
	pdf := testenv.MinimalPDF(1)
	doc := h.upload(key, pdf).Document
	fax := h.sendOK(key, map[string]any{"to": deliverable, "documentId": doc.ID})

	// The link is the one core hands a provider (core/signedlink.go's
	// format), signed here because the simulated provider fetches nothing.
	token := mediaToken(t, h.env, fax.ID, time.Now().Add(time.Hour))
	res := h.do("", "GET", core.LinkProviderMedia.PathPrefix()+token, nil, nil).status(http.StatusOK)
	if !bytes.HasPrefix(res.body, []byte("%PDF-")) || res.header.Get("Content-Type") != "application/pdf" ||
		res.header.Get("Content-Length") != strconv.Itoa(len(res.body)) || res.header.Get("Location") != "" {
		t.Fatalf("media: %d %v", res.code, res.header)
	}
	h.do("", "GET", core.LinkProviderMedia.PathPrefix()+token[:len(token)-2]+"xx", nil, nil).problem(404, faxes.CodeMediaLinkInvalid)
	h.do("", "GET", core.LinkProviderMedia.PathPrefix()+mediaToken(t, h.env, fax.ID, time.Now().Add(-time.Second)), nil, nil).problem(404, faxes.CodeMediaLinkInvalid)
	h.do(key, "POST", "/api/v1/faxes/"+fax.ID+"/cancel", nil, nil).status(http.StatusOK)
	h.do("", "GET", core.LinkProviderMedia.PathPrefix()+token, nil, nil).problem(404, faxes.CodeMediaLinkInvalid)

	// Once an attempt composed the document as faxed (cover page, header
	// line), the link serves that: the bytes the receipt attests. (A busy
	// line: the fax waits for its retry, composed.)
	sending := h.sendOK(key, map[string]any{"to": "+12125550101", "documentId": doc.ID, "cover": true})
	if err := h.env.Svc.Faxes.Deliver(t.Context(), sending.ID); err != nil {
		t.Fatal(err)
	}
	var got faxes.Fax
	h.do(key, "GET", "/api/v1/faxes/"+sending.ID, nil, nil).status(http.StatusOK).decode(&got)
	res = h.do("", "GET", core.LinkProviderMedia.PathPrefix()+mediaToken(t, h.env, sending.ID, time.Now().Add(time.Hour)), nil, nil).status(http.StatusOK)
	if sum := sha256.Sum256(res.body); got.FaxedSHA256 == "" || hex.EncodeToString(sum[:]) != got.FaxedSHA256 || res.header.Get("Content-Length") != strconv.Itoa(len(res.body)) {
		t.Fatalf("media of a composed fax (%s): %d bytes, want the document as faxed %s", got.Status, len(res.body), got.FaxedSHA256)
	}
}

func mediaToken(t *testing.T, env *testenv.Env, faxID string, exp time.Time) string {
	t.Helper()
	key, err := env.Store.Secret(context.Background(), "provider-media")
	if err != nil {
		t.Fatal(err)
	}
	e := strconv.FormatInt(exp.Unix(), 36)
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte("faxhub link v1|provider-media|" + faxID + "|" + e))
	return faxID + "." + e + "." + base64.RawURLEncoding.EncodeToString(mac.Sum(nil)[:16])
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}
