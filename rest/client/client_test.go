package client_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/faxhub/faxhub/internal/inproc"
	"github.com/faxhub/faxhub/internal/testenv"
	"github.com/faxhub/faxhub/rest/client"
	"github.com/faxhub/faxhub/rest/client/api"
)

const (
	deliverable = "+12125550100"
	premium     = "+19005550123"
)

// newClient starts a whole faxhub (testenv: SQLite, or PostgreSQL under
// FAXHUB_TESTENV_POSTGRES) and returns a client authenticated with owner
// A's test key.
func newClient(t *testing.T, opts ...testenv.Option) (*client.Client, *testenv.Env) {
	t.Helper()
	env := testenv.New(t, opts...)
	return newClientFor(t, env, env.KeyATest), env
}

// newClientFor is a client of env's whole HTTP surface, in process: the
// URLs faxhub hands out (upload URLs) name its base URL, which the
// transport serves without a listener.
func newClientFor(t *testing.T, env *testenv.Env, key string) *client.Client {
	t.Helper()
	hc := &http.Client{Transport: inproc.Transport(env.App.Handler())}
	c, err := client.New(env.Svc.Config().APIURL, client.StaticToken(key), client.WithHTTPClient(hc))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// fastPolls makes WaitFax poll without pausing: the simulated provider
// ends a fax on its own (SimTimeScale 0), so the test waits on the
// server's work, never on a clock.
func fastPolls(time.Duration) <-chan time.Time {
	ch := make(chan time.Time, 1)
	ch <- time.Time{}
	return ch
}

func TestUploadSendWaitReceipt(t *testing.T) {
	c, _ := newClient(t)
	ctx := context.Background()
	pdf := testenv.MinimalPDF(2)
	var seen []int64
	up, err := c.Upload(ctx, bytes.NewReader(pdf), int64(len(pdf)), func(sent, total int64) {
		if total != int64(len(pdf)) {
			t.Errorf("progress total %d, want %d", total, len(pdf))
		}
		seen = append(seen, sent)
	})
	if err != nil {
		t.Fatal(err)
	}
	if up.Document.Pages != 2 || up.UploadToken == "" {
		t.Fatalf("upload: %+v", up)
	}
	if len(seen) == 0 || seen[len(seen)-1] != int64(len(pdf)) {
		t.Errorf("progress %v does not end at %d", seen, len(pdf))
	}

	key := client.NewIdempotencyKey()
	req := api.SendFaxRequest{To: deliverable, UploadToken: &up.UploadToken}
	f, err := c.SendFax(ctx, key, req)
	if err != nil {
		t.Fatal(err)
	}
	again, err := c.SendFax(ctx, key, req)
	if err != nil {
		t.Fatal(err)
	}
	if again.Id != f.Id {
		t.Errorf("a retry with the same Idempotency-Key made fax %s beside %s", again.Id, f.Id)
	}

	var changes []api.FaxStatus
	done, err := c.WaitFax(ctx, f.Id, client.WaitOptions{After: fastPolls, OnChange: func(f *api.Fax) {
		changes = append(changes, f.Status)
	}})
	if err != nil {
		t.Fatal(err)
	}
	if done.Status != api.FaxStatusDelivered {
		t.Fatalf("fax ended %s, want delivered", done.Status)
	}
	if len(changes) == 0 || changes[len(changes)-1] != api.FaxStatusDelivered {
		t.Errorf("OnChange saw %v", changes)
	}

	rc, err := c.API().GetFaxReceiptWithResponse(ctx, f.Id)
	if err != nil {
		t.Fatal(err)
	}
	if err := client.Check(rc.HTTPResponse, rc.Body); err != nil {
		t.Fatal(err)
	}
	if rc.JSON200 == nil || rc.JSON200.Receipt == "" {
		t.Fatalf("receipt: %s", rc.Body)
	}
}

func TestRefusalIsTypedError(t *testing.T) {
	c, env := newClient(t)
	ctx := context.Background()
	up, err := c.Upload(ctx, bytes.NewReader(testenv.MinimalPDF(1)), -1, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.SendFax(ctx, "", api.SendFaxRequest{To: premium, UploadToken: &up.UploadToken})
	var e *client.Error
	if !errors.As(err, &e) {
		t.Fatalf("premium send: %v, want *client.Error", err)
	}
	if e.Status != http.StatusUnprocessableEntity && e.Status != http.StatusBadRequest {
		t.Errorf("status %d", e.Status)
	}
	if e.Code != "premium_rate_destination" || e.Detail == "" || client.CodeOf(err) != e.Code {
		t.Errorf("error %+v", e)
	}

	bad := newClientFor(t, env, "fxk_test_nope")
	if _, err := bad.GetFax(ctx, "fax_x"); client.CodeOf(err) != "invalid_api_key" {
		t.Errorf("bad key: %v", err)
	}
	if _, err := c.GetFax(ctx, "fax_missing"); client.CodeOf(err) != "not_found" {
		t.Errorf("missing fax: %v", err)
	}
	if _, err := c.Upload(ctx, bytes.NewReader([]byte("not a document")), 14, nil); client.CodeOf(err) != "unsupported_file_type" {
		t.Errorf("text upload: %v", err)
	}
}

func TestWaitFaxBacksOffAndHonoursContext(t *testing.T) {
	c, env := newClient(t, testenv.WithoutWorkers())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p := env.Principal(t, env.KeyATest)
	tok := env.Upload(t, p, 1)
	f, err := c.SendFax(ctx, "", api.SendFaxRequest{To: deliverable, UploadToken: &tok})
	if err != nil {
		t.Fatal(err)
	}
	// Without workers the fax stays queued: WaitFax keeps polling with
	// growing pauses until the context ends.
	var pauses []time.Duration
	after := func(d time.Duration) <-chan time.Time {
		pauses = append(pauses, d)
		if len(pauses) == 6 {
			cancel()
		}
		return fastPolls(d)
	}
	got, err := c.WaitFax(ctx, f.Id, client.WaitOptions{First: time.Second, Max: 5 * time.Second, After: after})
	if !errors.Is(err, context.Canceled) || got == nil || got.Status != api.FaxStatusQueued {
		t.Fatalf("WaitFax = %v, %v; want the queued fax and context.Canceled", got, err)
	}
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 5 * time.Second, 5 * time.Second, 5 * time.Second}
	if len(pauses) != len(want) {
		t.Fatalf("pauses %v, want %v", pauses, want)
	}
	for i := range want {
		if pauses[i] != want[i] {
			t.Fatalf("pauses %v, want %v", pauses, want)
		}
	}
}

func TestNewRefusesBadURL(t *testing.T) {
	for _, u := range []string{"", "localhost:8080", "ftp://x", "http://"} {
		if _, err := client.New(u, nil); err == nil {
			t.Errorf("New(%q) accepted", u)
		}
	}
}
