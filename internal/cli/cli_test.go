package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/faxhub/faxhub/internal/cli"
	"github.com/faxhub/faxhub/internal/inproc"
	"github.com/faxhub/faxhub/internal/testenv"
)

const (
	deliverable = "+12125550100"
	premium     = "+19005550123"
)

// rig runs CLI command lines against a whole in-process faxhub (testenv:
// SQLite, or PostgreSQL under FAXHUB_TESTENV_POSTGRES).
type rig struct {
	t      *testing.T
	env    *testenv.Env
	vars   map[string]string
	config string
	http   *http.Client
	after  func(time.Duration) <-chan time.Time
	stdin  string
	tty    bool
}

func newRig(t *testing.T, opts ...testenv.Option) *rig {
	t.Helper()
	env := testenv.New(t, opts...)
	faxhub := inproc.Transport(env.App.Handler())
	host := hostOf(t, env.Svc.Config().APIURL)
	// faxhub's own URLs (the API, upload and download links) are served
	// in process; anything else (a local webhook receiver) goes out.
	rt := roundTrip(func(r *http.Request) (*http.Response, error) {
		if r.URL.Host == host {
			return faxhub.RoundTrip(r)
		}
		return http.DefaultTransport.RoundTrip(r)
	})
	return &rig{t: t, env: env, config: t.TempDir(), http: &http.Client{Transport: rt},
		vars:  map[string]string{"FAXHUB_API_URL": env.Svc.Config().APIURL, "FAXHUB_API_KEY": env.KeyATest},
		after: instant}
}

type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func hostOf(t *testing.T, u string) string {
	p, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	return p.Host
}

// instant is a poll pause that does not wait: the simulated provider
// finishes a fax on its own, so polling waits on the server's work only.
func instant(time.Duration) <-chan time.Time {
	ch := make(chan time.Time, 1)
	ch <- time.Time{}
	return ch
}

type result struct {
	code           int
	stdout, stderr string
}

func (r *rig) run(args ...string) result {
	return r.runCtx(context.Background(), nil, args...)
}

func (r *rig) runCtx(ctx context.Context, stdout io.Writer, args ...string) result {
	r.t.Helper()
	var out, errb bytes.Buffer
	if stdout == nil {
		stdout = &out
	}
	code := cli.Run(ctx, args, cli.Env{
		Stdin: strings.NewReader(r.stdin), Stdout: stdout, Stderr: &errb,
		Getenv:    func(k string) string { return r.vars[k] },
		ConfigDir: func() (string, error) { return r.config, nil },
		HTTP:      r.http,
		Terminal:  func(io.Writer) bool { return r.tty },
		After:     r.after,
	})
	return result{code, out.String(), errb.String()}
}

func (res result) json(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(res.stdout), v); err != nil {
		t.Fatalf("stdout is not JSON (%v): %q (stderr %q)", err, res.stdout, res.stderr)
	}
}

func (res result) ok(t *testing.T) result {
	t.Helper()
	if res.code != 0 {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", res.code, res.stdout, res.stderr)
	}
	return res
}

func writePDF(t *testing.T, pages int) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "doc.pdf")
	if err := os.WriteFile(p, testenv.MinimalPDF(pages), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

type fax struct {
	ID, Status, To string
	Pages          int
	Cover          bool
}

func TestFaxSendWatchDelivered(t *testing.T) {
	r := newRig(t)
	pdf := writePDF(t, 2)
	res := r.run("fax", "send", pdf, writePDF(t, 1), "--to", deliverable, "--watch", "--json", "--cover-subject", "Hello")
	res.ok(t)
	var f fax
	res.json(t, &f)
	if f.Status != "delivered" || f.To != deliverable || f.Pages != 3 || !f.Cover {
		t.Fatalf("sent fax %+v, want delivered, 2+1 pages and a cover page", f)
	}

	// Text output, status, list, receipt and report of the same fax.
	st := r.run("fax", "status", f.ID).ok(t)
	if !strings.Contains(st.stdout, f.ID) || !strings.Contains(st.stdout, "delivered") {
		t.Errorf("fax status: %q", st.stdout)
	}
	var list struct{ Data []fax }
	r.run("fax", "list", "--json").ok(t).json(t, &list)
	if len(list.Data) != 1 || list.Data[0].ID != f.ID {
		t.Errorf("fax list: %+v", list)
	}
	rc := r.run("fax", "receipt", f.ID).ok(t)
	if strings.Count(strings.TrimSpace(rc.stdout), ".") != 2 {
		t.Errorf("receipt is not a compact JWS: %q", rc.stdout)
	}
	out := filepath.Join(t.TempDir(), "report.pdf")
	r.run("fax", "report", f.ID, "-o", out).ok(t)
	if b, err := os.ReadFile(out); err != nil || !bytes.HasPrefix(b, []byte("%PDF-")) {
		t.Errorf("report: %v %.20q", err, b)
	}
}

func TestRefusedSendExitsWithCode(t *testing.T) {
	r := newRig(t)
	pdf := writePDF(t, 1)
	res := r.run("fax", "send", pdf, "--to", premium)
	if res.code != cli.ExitRefused || !strings.Contains(res.stderr, "premium_rate_destination") {
		t.Fatalf("premium send: exit %d, stderr %q", res.code, res.stderr)
	}
	res = r.run("fax", "send", pdf, "--to", premium, "--json")
	var e struct {
		Error struct {
			Code    string
			Status  int
			Message string
		}
	}
	res.json(t, &e)
	if res.code != cli.ExitRefused || e.Error.Code != "premium_rate_destination" || e.Error.Status != 422 || e.Error.Message == "" {
		t.Fatalf("premium send --json: exit %d, %+v", res.code, e)
	}
	for _, args := range [][]string{
		{"fax", "send", pdf}, // --to missing
		{"fax", "status"},    // id missing
		{"fax", "send", pdf, "--to", deliverable, "--at", "tomorrow"},
		{"fax", "frobnicate"},
		{"fax", "send", filepath.Join(t.TempDir(), "missing.pdf"), "--to", deliverable},
	} {
		if res := r.run(args...); res.code != cli.ExitUsage {
			t.Errorf("%v: exit %d (stderr %q), want %d", args, res.code, res.stderr, cli.ExitUsage)
		}
	}
	r.vars["FAXHUB_API_KEY"] = "fxk_test_wrong"
	if res := r.run("credits"); res.code != cli.ExitAuth || !strings.Contains(res.stderr, "invalid_api_key") {
		t.Errorf("wrong key: exit %d, stderr %q", res.code, res.stderr)
	}
	delete(r.vars, "FAXHUB_API_KEY")
	if res := r.run("credits"); res.code != cli.ExitAuth || !strings.Contains(res.stderr, "login") {
		t.Errorf("no key: exit %d, stderr %q", res.code, res.stderr)
	}
}

func TestScheduledFaxCancel(t *testing.T) {
	r := newRig(t)
	at := time.Now().Add(48 * time.Hour).UTC().Format(time.RFC3339)
	var f fax
	r.run("fax", "send", writePDF(t, 1), "--to", deliverable, "--at", at, "--json", "--idempotency-key", "k-1").ok(t).json(t, &f)
	if f.Status != "scheduled" {
		t.Fatalf("scheduled send: %+v", f)
	}
	// A retry uploads again, so it is a different request under the same
	// key: refused, never a second fax.
	again := r.run("fax", "send", writePDF(t, 1), "--to", deliverable, "--at", at, "--idempotency-key", "k-1")
	if again.code != cli.ExitRefused || !strings.Contains(again.stderr, "idempotency_conflict") {
		t.Errorf("retried send: exit %d %q", again.code, again.stderr)
	}
	var list struct{ Data []fax }
	r.run("fax", "list", "--json").ok(t).json(t, &list)
	if len(list.Data) != 1 {
		t.Errorf("%d faxes after a retried send, want 1", len(list.Data))
	}
	var canceled fax
	r.run("fax", "cancel", f.ID, "--json").ok(t).json(t, &canceled)
	if canceled.Status != "canceled" {
		t.Fatalf("cancel: %+v", canceled)
	}
	if res := r.run("fax", "status", f.ID, "--watch"); res.code != cli.ExitFaxNotSent {
		t.Errorf("watch of a canceled fax: exit %d %q", res.code, res.stderr)
	}
}

func TestCreditsNumbersInbox(t *testing.T) {
	r := newRig(t)
	var cr struct{ Balance, Mode string }
	r.run("credits", "--json").ok(t).json(t, &cr)
	if cr.Balance != "10.00" || cr.Mode != "test" {
		t.Errorf("credits: %+v", cr)
	}
	if out := r.run("credits").ok(t).stdout; !strings.Contains(out, "10.00 USD available") {
		t.Errorf("credits text: %q", out)
	}

	var found struct{ Data []struct{ Number string } }
	r.run("numbers", "search", "--json", "--limit", "2").ok(t).json(t, &found)
	if len(found.Data) == 0 {
		t.Fatal("numbers search found nothing")
	}
	var n struct{ ID, Number, Status string }
	r.run("numbers", "buy", found.Data[0].Number, "--pay-with-credits", "--json").ok(t).json(t, &n)
	r.env.DrainQueue(t)
	var held struct {
		Data []struct{ ID, Number, Status string }
	}
	r.run("numbers", "list", "--json").ok(t).json(t, &held)
	if len(held.Data) != 1 || held.Data[0].Number != found.Data[0].Number {
		t.Fatalf("numbers list: %+v", held)
	}

	in := r.env.DeliverTestFax(t, r.env.Principal(t, r.env.KeyATest), found.Data[0].Number, testenv.MinimalPDF(1))
	var inbox struct{ Data []struct{ ID string } }
	r.run("inbox", "list", "--json").ok(t).json(t, &inbox)
	if len(inbox.Data) != 1 || inbox.Data[0].ID != in.ID {
		t.Fatalf("inbox list: %+v", inbox)
	}
	if out := r.run("inbox", "read", in.ID).ok(t).stdout; !strings.Contains(out, in.ID) {
		t.Errorf("inbox read: %q", out)
	}
	pdf := filepath.Join(t.TempDir(), "in.pdf")
	r.run("inbox", "download", in.ID, "-o", pdf).ok(t)
	if b, err := os.ReadFile(pdf); err != nil || !bytes.HasPrefix(b, []byte("%PDF-")) {
		t.Errorf("inbox download: %v", err)
	}

	var released struct{ Status string }
	r.run("numbers", "release", n.ID, "--json").ok(t).json(t, &released)
	if released.Status == "" || released.Status == n.Status && n.Status != "active" {
		t.Errorf("release: %+v (was %+v)", released, n)
	}
}

func TestLoginWithAPIKey(t *testing.T) {
	r := newRig(t)
	key := r.vars["FAXHUB_API_KEY"]
	delete(r.vars, "FAXHUB_API_KEY")
	if res := r.run("login", "--api-key", "fxk_test_nope"); res.code != cli.ExitAuth {
		t.Fatalf("login with a wrong key: exit %d %q", res.code, res.stderr)
	}
	if _, err := os.Stat(filepath.Join(r.config, "faxhub", "config.json")); err == nil {
		t.Fatal("a refused key was stored")
	}
	r.stdin = key + "\n"
	login := r.run("login", "--profile", "work", "--api-key", "-").ok(t)
	if !strings.Contains(login.stdout, "Logged in") {
		t.Errorf("login with a key from stdin: %q %q", login.stdout, login.stderr)
	}
	st, err := os.Stat(filepath.Join(r.config, "faxhub", "config.json"))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("config file: %v %v", err, st)
	}
	// The stored profile works without FAXHUB_API_KEY; another does not.
	r.run("credits", "--profile", "work").ok(t)
	if res := r.run("credits"); res.code != cli.ExitAuth {
		t.Errorf("default profile: exit %d", res.code)
	}
	r.vars["FAXHUB_PROFILE"] = "work"
	r.run("credits").ok(t)
	// --api-key - reads the key from stdin into another profile.
	r.run("login", "--api-key", "-", "--profile", "other").ok(t)
	r.run("credits", "--profile", "other").ok(t)
	r.stdin = ""
	if res := r.run("login", "--profile", "third", "--api-key", "-"); res.code != cli.ExitUsage {
		t.Errorf("login with nothing on stdin: exit %d", res.code)
	}
	r.run("logout").ok(t)
	if res := r.run("credits"); res.code != cli.ExitAuth {
		t.Errorf("after logout: exit %d", res.code)
	}
}

// TestWebhooksListenForwardsSigned relays a real event (a fax sent after
// listen started) to a receiver that verifies its signature with the
// Standard Webhooks library, independently of the CLI's signing code.
func TestWebhooksListenForwardsSigned(t *testing.T) {
	r := newRig(t)
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan string, 16)
	receiver := testServer(t, http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		if err := wh.Verify(body, req.Header); err != nil {
			t.Errorf("signature: %v", err)
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		var ev struct{ ID, Type string }
		_ = json.Unmarshal(body, &ev)
		if ev.ID != req.Header.Get("webhook-id") {
			t.Errorf("webhook-id %q for event %q", req.Header.Get("webhook-id"), ev.ID)
		}
		got <- ev.Type
	}))

	// The first pause means the history is read: send a fax then.
	ready, tick := make(chan struct{}), make(chan time.Time)
	var once sync.Once
	r.after = func(time.Duration) <-chan time.Time {
		once.Do(func() { close(ready) })
		return tick
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan result, 1)
	go func() {
		done <- r.runCtx(ctx, io.Discard, "webhooks", "listen", "--forward", receiver+"/hook", "--secret", secret, "--events", "fax.queued")
	}()
	<-ready
	var f fax
	r.run("fax", "send", writePDF(t, 1), "--to", deliverable, "--json").ok(t).json(t, &f)
	tick <- time.Time{}
	if typ := <-got; typ != "fax.queued" {
		t.Errorf("forwarded %q, want fax.queued", typ)
	}
	cancel()
	if res := <-done; res.code != 0 {
		t.Fatalf("listen: exit %d %q", res.code, res.stderr)
	}
}

// On a terminal, send draws an upload progress bar on stderr and a live
// status line (rewritten in place) on stdout.
func TestSendOnTerminal(t *testing.T) {
	r := newRig(t)
	r.tty = true
	res := r.run("fax", "send", writePDF(t, 3), "--to", deliverable, "--watch").ok(t)
	if !strings.Contains(res.stderr, "uploading") {
		t.Errorf("no progress bar on stderr: %q", res.stderr)
	}
	if !strings.Contains(res.stdout, "\r\033[K") || !strings.HasSuffix(strings.TrimSpace(res.stdout), "attempt 1") || !strings.Contains(res.stdout, "delivered") {
		t.Errorf("live status line: %q", res.stdout)
	}
}
