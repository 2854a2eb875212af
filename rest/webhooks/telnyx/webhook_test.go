package telnyx_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/faxes"
	"github.com/faxhub/faxhub/core/inbox"
	"github.com/faxhub/faxhub/core/numbers"
	provider "github.com/faxhub/faxhub/core/provider/telnyx"
	"github.com/faxhub/faxhub/rest/webhooks/telnyx"
)

// fakeSink records what the webhook tells core.
type fakeSink struct {
	mu       sync.Mutex
	outcomes []string
	orders   []string
	inbound  []inbox.InboundNotice
	err      error
}

func (s *fakeSink) RecordProviderOutcome(_ context.Context, faxID, attemptID string, res faxes.ProviderResult) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.outcomes = append(s.outcomes, fmt.Sprintf("%s %s %+v", faxID, attemptID, res))
	return s.err
}

func (s *fakeSink) RecordOrder(_ context.Context, provider, orderRef string, res numbers.OrderResult) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.orders = append(s.orders, fmt.Sprintf("%s %s %+v", provider, orderRef, res))
	return s.err
}

func (s *fakeSink) ReceiveFax(_ context.Context, n inbox.InboundNotice) (*inbox.InboundFax, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.inbound = append(s.inbound, n)
	if s.err != nil {
		return nil, s.err
	}
	return &inbox.InboundFax{ID: "inb_1"}, nil
}

var (
	testNow = time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	seed    = bytes.Repeat([]byte{7}, ed25519.SeedSize)
	privKey = ed25519.NewKeyFromSeed(seed)
)

func newWebhook(sink *fakeSink) http.Handler {
	return telnyx.NewWebhook(telnyx.WebhookConfig{
		PublicKey: privKey.Public().(ed25519.PublicKey), Faxes: sink, Numbers: sink, Inbox: sink, Now: func() time.Time { return testNow }, MaxBody: 4096,
	})
}

// post signs body at ts with key and posts it.
func post(h http.Handler, key ed25519.PrivateKey, ts time.Time, body string) *httptest.ResponseRecorder {
	stamp := strconv.FormatInt(ts.Unix(), 10)
	req := httptest.NewRequest(http.MethodPost, telnyx.WebhookPath, strings.NewReader(body))
	req.Header.Set(telnyx.HeaderTimestamp, stamp)
	req.Header.Set(telnyx.HeaderSignature, base64.StdEncoding.EncodeToString(ed25519.Sign(key, []byte(stamp+"|"+body))))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func faxEvent(typ string, payload map[string]any) string {
	b, _ := json.Marshal(map[string]any{"data": map[string]any{
		"event_type": typ, "id": "evt_1", "occurred_at": "2026-11-27T11:59:00Z", "record_type": "event", "payload": payload,
	}})
	return string(b)
}

func delivered() string {
	return faxEvent("fax.delivered", map[string]any{
		"fax_id": "tx_fax_9", "client_state": provider.ClientState("fax_1", "att_1"), "page_count": 3, "call_duration_secs": 95, "status": "delivered",
	})
}

func TestWebhookSignature(t *testing.T) {
	other := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{9}, ed25519.SeedSize))
	for _, tc := range []struct {
		name   string
		do     func(h http.Handler) *httptest.ResponseRecorder
		status int
		code   string
	}{
		{"good", func(h http.Handler) *httptest.ResponseRecorder { return post(h, privKey, testNow, delivered()) }, 200, ""},
		{"within tolerance", func(h http.Handler) *httptest.ResponseRecorder {
			return post(h, privKey, testNow.Add(-4*time.Minute), delivered())
		}, 200, ""},
		{"other key", func(h http.Handler) *httptest.ResponseRecorder { return post(h, other, testNow, delivered()) }, 401, telnyx.CodeInvalidSignature},
		{"old timestamp", func(h http.Handler) *httptest.ResponseRecorder {
			return post(h, privKey, testNow.Add(-6*time.Minute), delivered())
		}, 401, telnyx.CodeStaleTimestamp},
		{"future timestamp", func(h http.Handler) *httptest.ResponseRecorder {
			return post(h, privKey, testNow.Add(6*time.Minute), delivered())
		}, 401, telnyx.CodeStaleTimestamp},
		{"body changed", func(h http.Handler) *httptest.ResponseRecorder {
			stamp := strconv.FormatInt(testNow.Unix(), 10)
			req := httptest.NewRequest(http.MethodPost, telnyx.WebhookPath, strings.NewReader(delivered()+" "))
			req.Header.Set(telnyx.HeaderTimestamp, stamp)
			req.Header.Set(telnyx.HeaderSignature, base64.StdEncoding.EncodeToString(ed25519.Sign(privKey, []byte(stamp+"|"+delivered()))))
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			return rec
		}, 401, telnyx.CodeInvalidSignature},
		{"timestamp changed", func(h http.Handler) *httptest.ResponseRecorder {
			body := delivered()
			stamp := strconv.FormatInt(testNow.Unix(), 10)
			req := httptest.NewRequest(http.MethodPost, telnyx.WebhookPath, strings.NewReader(body))
			req.Header.Set(telnyx.HeaderTimestamp, strconv.FormatInt(testNow.Unix()+1, 10))
			req.Header.Set(telnyx.HeaderSignature, base64.StdEncoding.EncodeToString(ed25519.Sign(privKey, []byte(stamp+"|"+body))))
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			return rec
		}, 401, telnyx.CodeInvalidSignature},
		{"unsigned", func(h http.Handler) *httptest.ResponseRecorder {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, telnyx.WebhookPath, strings.NewReader(delivered())))
			return rec
		}, 401, telnyx.CodeInvalidSignature},
		{"oversized", func(h http.Handler) *httptest.ResponseRecorder {
			return post(h, privKey, testNow, faxEvent("fax.queued", map[string]any{"pad": strings.Repeat("x", 5000)}))
		}, 413, telnyx.CodeWebhookTooLarge},
		{"not an event", func(h http.Handler) *httptest.ResponseRecorder { return post(h, privKey, testNow, `{"hello":1}`) }, 400, core.CodeInvalidRequest},
		{"GET", func(h http.Handler) *httptest.ResponseRecorder {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, telnyx.WebhookPath, nil))
			return rec
		}, 405, core.CodeMethodNotAllowed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sink := &fakeSink{}
			rec := tc.do(newWebhook(sink))
			if rec.Code != tc.status {
				t.Fatalf("status %d, want %d: %s", rec.Code, tc.status, rec.Body)
			}
			if tc.status == 200 {
				if len(sink.outcomes) != 1 {
					t.Errorf("outcomes %v", sink.outcomes)
				}
				return
			}
			if len(sink.outcomes)+len(sink.orders)+len(sink.inbound) != 0 {
				t.Errorf("a refused event reached core: %v", sink.outcomes)
			}
			if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "application/problem+json") {
				t.Errorf("Content-Type %q", ct)
			}
			var p map[string]any
			_ = json.Unmarshal(rec.Body.Bytes(), &p)
			if p["code"] != tc.code {
				t.Errorf("code %v, want %s", p["code"], tc.code)
			}
		})
	}
}

func TestWebhookEvents(t *testing.T) {
	cs := provider.ClientState("fax_1", "att_1")
	for _, tc := range []struct {
		name                  string
		body                  string
		outcome, order, inbox string
	}{
		{"queued", faxEvent("fax.queued", map[string]any{"fax_id": "tx_fax_9", "client_state": cs}), "", "", ""},
		{"media processed", faxEvent("fax.media.processed", map[string]any{"fax_id": "tx_fax_9", "client_state": cs}), "", "", ""},
		{"sending started", faxEvent("fax.sending.started", map[string]any{"fax_id": "tx_fax_9", "client_state": cs}), "", "", ""},
		{"delivered", delivered(), "fax_1 att_1 {Status:delivered ProviderRef:tx_fax_9 PagesSent:3 FailureCode: FailureReason: Retryable:false Duration:1m35s}", "", ""},
		{"busy", faxEvent("fax.failed", map[string]any{"fax_id": "tx_fax_9", "client_state": cs, "failure_reason": "user_busy", "call_duration_secs": 4}),
			"fax_1 att_1 {Status:failed ProviderRef:tx_fax_9 PagesSent:0 FailureCode:busy FailureReason:user_busy Retryable:true Duration:4s}", "", ""},
		{"partial", faxEvent("fax.failed", map[string]any{"fax_id": "tx_fax_9", "client_state": cs, "failure_reason": "receiver_call_dropped", "page_count": 2}),
			"fax_1 att_1 {Status:partial ProviderRef:tx_fax_9 PagesSent:2 FailureCode:call_dropped FailureReason:receiver_call_dropped Retryable:false Duration:0s}", "", ""},
		{"canceled", faxEvent("fax.failed", map[string]any{"fax_id": "tx_fax_9", "client_state": cs, "failure_reason": "user_canceled"}),
			"fax_1 att_1 {Status:failed ProviderRef:tx_fax_9 PagesSent:0 FailureCode:canceled FailureReason:user_canceled Retryable:false Duration:0s}", "", ""},
		{"not ours", faxEvent("fax.delivered", map[string]any{"fax_id": "tx_fax_9", "client_state": "b3RoZXI="}), "", "", ""},
		{"received", faxEvent("fax.received", map[string]any{"fax_id": "tx_in_1", "direction": "inbound", "to": "+12125550150", "from": "+12125550100", "media_url": "https://s3.example/in.pdf?sig=1", "page_count": 2}),
			"", "", "{Provider:telnyx ProviderRef:tx_in_1 To:+12125550150 From:+12125550100 MediaURL:https://s3.example/in.pdf?sig=1 DocumentKey: Pages:2 ReceivedAt:2026-11-27 11:59:00 +0000 UTC}"},
		{"order complete", faxEvent("number_order.complete", map[string]any{"id": "ord_9", "status": "success", "phone_numbers": []any{map[string]any{"id": "pn_1", "phone_number": "+12125550150"}}}),
			"", "telnyx ord_9 {Status:active OrderRef:ord_9 ProviderRef:pn_1 FailureReason:}", ""},
		{"order failed", faxEvent("number_order.status_update", map[string]any{"id": "ord_9", "status": "failure", "phone_numbers": []any{map[string]any{"id": "pn_1", "status": "failure"}}}),
			"", "telnyx ord_9 {Status:failed OrderRef:ord_9 ProviderRef: FailureReason:Telnyx could not provision the number (failure)}", ""},
		{"order still pending", faxEvent("number_order.status_update", map[string]any{"id": "ord_9", "status": "pending"}), "", "", ""},
		{"unknown type", faxEvent("call.initiated", map[string]any{"call_control_id": "x"}), "", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sink := &fakeSink{}
			h := newWebhook(sink)
			// The second delivery is a duplicate: core makes it harmless,
			// the webhook passes the same data and answers 200 again.
			for range 2 {
				if rec := post(h, privKey, testNow, tc.body); rec.Code != 200 {
					t.Fatalf("status %d: %s", rec.Code, rec.Body)
				}
			}
			check := func(what string, got []string, want string) {
				t.Helper()
				if want == "" {
					if len(got) != 0 {
						t.Errorf("%s: %v, want none", what, got)
					}
					return
				}
				if len(got) != 2 || got[0] != want || got[1] != want {
					t.Errorf("%s:\n got %q\nwant %q twice", what, got, want)
				}
			}
			check("outcome", sink.outcomes, tc.outcome)
			check("order", sink.orders, tc.order)
			var inbox []string
			for _, n := range sink.inbound {
				inbox = append(inbox, fmt.Sprintf("%+v", n))
			}
			check("inbox", inbox, tc.inbox)
		})
	}
}

// TestWebhookOutOfOrder: a late fax.sending.started after fax.delivered
// changes nothing, a late fax.failed is passed on (core ignores a report
// on a final attempt) and both answer 200.
func TestWebhookOutOfOrder(t *testing.T) {
	sink := &fakeSink{}
	h := newWebhook(sink)
	cs := provider.ClientState("fax_1", "att_1")
	for _, body := range []string{
		delivered(),
		faxEvent("fax.sending.started", map[string]any{"fax_id": "tx_fax_9", "client_state": cs}),
		faxEvent("fax.queued", map[string]any{"fax_id": "tx_fax_9", "client_state": cs}),
	} {
		if rec := post(h, privKey, testNow, body); rec.Code != 200 {
			t.Fatalf("status %d: %s", rec.Code, rec.Body)
		}
	}
	if len(sink.outcomes) != 1 || !strings.Contains(sink.outcomes[0], "Status:delivered") {
		t.Errorf("outcomes %v", sink.outcomes)
	}
}

func TestWebhookSinkErrors(t *testing.T) {
	for _, tc := range []struct {
		err    error
		status int
	}{
		{core.Errorf(core.KindNotFound, core.CodeNotFound, "fax not found"), 200},
		{core.Errorf(core.KindConflict, numbers.CodeNumberState, "number released"), 200},
		{core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "bad"), 200},
		{errors.New("database is down"), 500},
		{core.Errorf(core.KindUnavailable, core.CodeNotReady, "busy"), 503},
	} {
		sink := &fakeSink{err: tc.err}
		h := newWebhook(sink)
		rec := post(h, privKey, testNow, delivered())
		if rec.Code != tc.status {
			t.Errorf("%v: status %d, want %d", tc.err, rec.Code, tc.status)
		}
		if strings.Contains(rec.Body.String(), "database is down") {
			t.Errorf("an internal error leaked: %s", rec.Body)
		}
	}
}

func TestFailureCode(t *testing.T) {
	for _, tc := range []struct {
		reason    string
		code      string
		retryable bool
	}{
		{"user_busy", faxes.FailureBusy, true},
		{"receiver_no_answer", faxes.FailureNoAnswer, true},
		{"fax_initial_communication_timeout", faxes.FailureNotAFax, false},
		{"fax_signaling_error", faxes.FailureSignaling, true},
		{"invalid_ecm_response_from_receiver", faxes.FailureSignaling, true},
		{"receiver_call_dropped", faxes.FailureSignaling, true},
		{"fax_t30_phase_b_timeout", faxes.FailureSignaling, true},
		{"receiver_unallocated_number", faxes.FailureInvalidNumber, false},
		{"destination_invalid", faxes.FailureInvalidNumber, false},
		{"file_download_failed", faxes.FailureMedia, false},
		{"media_too_large", faxes.FailureMedia, false},
		{"user_canceled", faxes.FailureCanceled, false},
		{"USER_BUSY", faxes.FailureBusy, true},
		{"", faxes.FailureProvider, true},
		{"something_new", faxes.FailureProvider, true},
	} {
		code, retry := telnyx.FailureCode(tc.reason)
		if code != tc.code || retry != tc.retryable {
			t.Errorf("%q → %s %v, want %s %v", tc.reason, code, retry, tc.code, tc.retryable)
		}
	}
}
