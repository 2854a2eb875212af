package webhooks_test

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/events"
	"github.com/faxhub/faxhub/core/services"
	"github.com/faxhub/faxhub/core/webhooks"
	"github.com/faxhub/faxhub/internal/testenv"
)

var ctx = context.Background()

// delivery is one request a receiver got.
type delivery struct {
	ID, Timestamp, Signature string
	Body                     []byte
	Event                    struct {
		ID        string          `json:"id"`
		Type      events.Type     `json:"type"`
		Timestamp string          `json:"timestamp"`
		Mode      core.Mode       `json:"mode"`
		Data      json.RawMessage `json:"data"`
	}
	// V1 lists the whsec_ secrets whose v1 signature verified (by the
	// Standard Webhooks library); V1a whether faxhub's Ed25519 one did.
	V1  []string
	V1a bool
}

// receiver is an endpoint on loopback that records every delivery and
// verifies it independently: v1 with the Standard Webhooks Go library,
// v1a with crypto/ed25519 and the public key faxhub publishes.
type receiver struct {
	*httptest.Server
	t *testing.T

	mu      sync.Mutex
	secrets []string
	pub     ed25519.PublicKey
	got     []delivery
	// status answers each request (default 200).
	status func(n int) int
}

func newReceiver(t *testing.T) *receiver {
	r := &receiver{t: t}
	r.Server = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.Close)
	return r
}

// trust adds a secret the receiver verifies v1 signatures with.
func (r *receiver) trust(secret string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.secrets = append(r.secrets, secret)
}

// trustKey sets faxhub's published v1a key.
func (r *receiver) trustKey(t *testing.T, svc *services.Set) {
	k, err := svc.Webhooks.SigningKey(ctx)
	if err != nil {
		t.Fatal(err)
	}
	b, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(k.Key, webhooks.PublicKeyPrefix))
	if err != nil || len(b) != ed25519.PublicKeySize {
		t.Fatalf("public key %q: %v", k.Key, err)
	}
	r.mu.Lock()
	r.pub = b
	r.mu.Unlock()
}

func (r *receiver) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	d := delivery{ID: req.Header.Get("webhook-id"), Timestamp: req.Header.Get("webhook-timestamp"), Signature: req.Header.Get("webhook-signature"), Body: body}
	if err := json.Unmarshal(body, &d.Event); err != nil {
		r.t.Errorf("delivery body is not an event: %v: %s", err, body)
	}
	r.mu.Lock()
	for _, s := range r.secrets {
		wh, err := standardwebhooks.NewWebhook(s)
		if err != nil {
			r.t.Errorf("secret %q: %v", s, err)
			continue
		}
		// The timestamp is the attempt's, on the service's clock (which
		// tests may have moved): checked below against it, not here.
		if wh.VerifyIgnoringTimestamp(body, req.Header) == nil {
			d.V1 = append(d.V1, s)
		}
	}
	if r.pub != nil {
		for _, sig := range strings.Fields(d.Signature) {
			if v, ok := strings.CutPrefix(sig, "v1a,"); ok {
				raw, err := base64.StdEncoding.DecodeString(v)
				if err == nil && ed25519.Verify(r.pub, []byte(d.ID+"."+d.Timestamp+"."+string(body)), raw) {
					d.V1a = true
				}
			}
		}
	}
	r.got = append(r.got, d)
	n := len(r.got)
	status := r.status
	r.mu.Unlock()
	code := http.StatusOK
	if status != nil {
		code = status(n)
	}
	w.WriteHeader(code)
	fmt.Fprintf(w, `{"received":%d}`, n)
}

// deliveries returns what the receiver got so far.
func (r *receiver) deliveries() []delivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]delivery(nil), r.got...)
}

// waitFor waits (real time: the queue's workers deliver) until cond holds
// on the deliveries, failing after 20 s.
func (r *receiver) waitFor(t *testing.T, what string, cond func([]delivery) bool) []delivery {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		got := r.deliveries()
		if cond(got) {
			return got
		}
		if time.Now().After(deadline) {
			var types []string
			for _, d := range got {
				types = append(types, string(d.Event.Type))
			}
			t.Fatalf("%s: not within 20 s; got %v", what, types)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// privateEnv is a service with workers whose webhooks may reach loopback
// receivers (httptest servers), as --webhooks-allow-private allows.
func privateEnv(t *testing.T, opts ...testenv.Option) *testenv.Env {
	return testenv.New(t, append([]testenv.Option{testenv.WithConfig(func(c *services.Config) {
		c.Webhooks.AllowPrivate = true
		c.Webhooks.PollInterval = 20 * time.Millisecond
	})}, opts...)...)
}

func typesOf(ds []delivery) []events.Type {
	var out []events.Type
	for _, d := range ds {
		out = append(out, d.Event.Type)
	}
	return out
}

func unixOf(t *testing.T, ts string) time.Time {
	t.Helper()
	n, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		t.Fatalf("webhook-timestamp %q: %v", ts, err)
	}
	return time.Unix(n, 0)
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }
