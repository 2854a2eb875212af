package cli

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/faxhub/faxhub/rest/client"
	"github.com/faxhub/faxhub/rest/client/api"
)

// Bounds of webhooks listen.
const (
	listenPageSize = 100
	// listenMaxPages bounds the pages read per poll: past them, older
	// unseen events are skipped (a burst of more than 1,000 events between
	// two polls).
	listenMaxPages = 10
	// listenSeen bounds the remembered event ids.
	listenSeen = 10_000
	// forwardTimeout bounds one forward to the local receiver.
	forwardTimeout = 15 * time.Second
)

func (s *state) webhooksCmd() *cobra.Command {
	c := group("webhooks", "develop webhook receivers")
	var forward, secret string
	var types []string
	var interval time.Duration
	listen := &cobra.Command{
		Use:   "listen --forward URL",
		Short: "relay your account's new events to a local URL, signed as real webhook deliveries",
		Long: `listen polls the account's events (GET /api/v1/events) and POSTs each new one to --forward with
Standard Webhooks headers (webhook-id, webhook-timestamp, webhook-signature v1) signed by a secret
it prints at start (or --secret), so a local receiver verifies them as it verifies real
deliveries. Events that happened before it started are not relayed. It runs until interrupted.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			u, err := url.Parse(forward)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				return usagef("--forward must be an http(s) URL, e.g. http://localhost:3000/webhooks")
			}
			key, err := listenSecret(secret)
			if err != nil {
				return err
			}
			if interval <= 0 {
				return usagef("--interval must be positive")
			}
			sdk, err := s.client()
			if err != nil {
				return err
			}
			l := &listener{s: s, sdk: sdk, forward: forward, key: key, types: types, interval: interval, seen: map[string]bool{}}
			if secret == "" {
				secret = "whsec_" + base64.StdEncoding.EncodeToString(key)
			}
			return l.run(ctxOf(cmd.Context()), secret)
		},
	}
	f := listen.Flags()
	f.StringVar(&forward, "forward", "", "the URL to POST events to (required)")
	f.StringVar(&secret, "secret", "", "the signing secret (whsec_…; default: a new one, printed)")
	f.StringSliceVar(&types, "events", nil, `only these event types (e.g. fax.delivered,"fax.*")`)
	f.DurationVar(&interval, "interval", 2*time.Second, "how often to poll for new events")
	_ = listen.MarkFlagRequired("forward")
	c.AddCommand(listen)
	return c
}

// listenSecret decodes a whsec_ secret, or makes a new 32-byte one.
func listenSecret(secret string) ([]byte, error) {
	if secret == "" {
		key := make([]byte, 32)
		_, _ = rand.Read(key)
		return key, nil
	}
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if !strings.HasPrefix(secret, "whsec_") || err != nil || len(key) < 24 || len(key) > 64 {
		return nil, usagef("--secret must be whsec_ followed by base64 of 24 to 64 bytes")
	}
	return key, nil
}

type listener struct {
	s        *state
	sdk      *client.Client
	forward  string
	key      []byte
	types    []string
	interval time.Duration
	seen     map[string]bool
	order    []string
}

func (l *listener) run(ctx context.Context, secret string) error {
	out := l.s.env.Stdout
	// What exists now is history: remember it, relay only what follows.
	if _, err := l.poll(ctx); err != nil {
		return err
	}
	if l.s.json {
		writeJSON(out, map[string]string{"ready": l.forward, "secret": secret})
	} else {
		fmt.Fprintf(out, "Ready. Forwarding events to %s\nSigning secret: %s\n", l.forward, secret)
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-l.s.env.After(l.interval):
		}
		fresh, err := l.poll(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			// A refused poll (revoked key) ends listening; a network hiccup
			// is reported and retried at the next tick.
			if client.CodeOf(err) != "" {
				return err
			}
			fmt.Fprintf(l.s.env.Stderr, "faxhub: poll events: %v\n", err)
			continue
		}
		for _, ev := range fresh {
			l.relay(ctx, ev)
		}
	}
}

// event is one listed event: its bytes as the API sent them and the
// fields needed to sign and report it.
type event struct {
	raw      json.RawMessage
	id, kind string
}

// poll returns the events not seen before, oldest first, and remembers
// them.
func (l *listener) poll(ctx context.Context) ([]event, error) {
	var fresh []event
	var after *string
	limit := listenPageSize
	for range listenMaxPages {
		p := &api.ListEventsParams{Limit: &limit, StartingAfter: after}
		if len(l.types) > 0 {
			p.Type = &l.types
		}
		res, err := l.sdk.API().ListEvents(ctx, p)
		if err != nil {
			return nil, err
		}
		body, err := io.ReadAll(io.LimitReader(res.Body, 16<<20))
		res.Body.Close()
		if err != nil {
			return nil, err
		}
		if err := client.Check(res, body); err != nil {
			return nil, err
		}
		var page struct {
			Data       []json.RawMessage `json:"data"`
			HasMore    bool              `json:"hasMore"`
			NextCursor *string           `json:"nextCursor"`
		}
		if err := json.Unmarshal(body, &page); err != nil {
			return nil, fmt.Errorf("decode events: %w", err)
		}
		reachedSeen := false
		for _, raw := range page.Data {
			var head struct{ ID, Type string }
			if err := json.Unmarshal(raw, &head); err != nil {
				return nil, fmt.Errorf("decode event: %w", err)
			}
			if l.seen[head.ID] {
				reachedSeen = true
				continue
			}
			fresh = append(fresh, event{raw: raw, id: head.ID, kind: head.Type})
		}
		if reachedSeen || !page.HasMore || page.NextCursor == nil {
			break
		}
		after = page.NextCursor
	}
	// The list is newest first; relay in the order things happened.
	for i, j := 0, len(fresh)-1; i < j; i, j = i+1, j-1 {
		fresh[i], fresh[j] = fresh[j], fresh[i]
	}
	for _, ev := range fresh {
		l.remember(ev.id)
	}
	return fresh, nil
}

func (l *listener) remember(id string) {
	l.seen[id] = true
	l.order = append(l.order, id)
	if len(l.order) > listenSeen {
		delete(l.seen, l.order[0])
		l.order = l.order[1:]
	}
}

// relay POSTs one event to the local receiver, signed (Standard Webhooks
// v1: HMAC-SHA256 of "id.timestamp.body" with the secret's bytes), and
// prints the outcome. A failed forward is reported, not retried.
func (l *listener) relay(ctx context.Context, ev event) {
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	mac := hmac.New(sha256.New, l.key)
	mac.Write([]byte(ev.id + "." + ts + "."))
	mac.Write(ev.raw)
	sig := "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))

	ctx, cancel := context.WithTimeout(ctx, forwardTimeout)
	defer cancel()
	status, errText := 0, ""
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, l.forward, bytes.NewReader(ev.raw))
	if err == nil {
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("webhook-id", ev.id)
		req.Header.Set("webhook-timestamp", ts)
		req.Header.Set("webhook-signature", sig)
		var res *http.Response
		if res, err = l.s.env.HTTP.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 1<<20))
			res.Body.Close()
			status = res.StatusCode
		}
	}
	if err != nil {
		errText = err.Error()
	}
	if l.s.json {
		writeJSON(l.s.env.Stdout, map[string]any{"event": ev.id, "type": ev.kind, "status": status, "error": errText})
		return
	}
	if err != nil {
		fmt.Fprintf(l.s.env.Stdout, "%s  %s  -> error: %s\n", ev.kind, ev.id, errText)
		return
	}
	fmt.Fprintf(l.s.env.Stdout, "%s  %s  -> %d\n", ev.kind, ev.id, status)
}
