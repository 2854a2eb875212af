package app

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/faxes"
	"github.com/faxhub/faxhub/core/services"
)

func TestTelnyxAllOrNothing(t *testing.T) {
	pub := base64.StdEncoding.EncodeToString(ed25519.NewKeyFromSeed(bytes.Repeat([]byte{1}, 32)).Public().(ed25519.PublicKey))
	full := TelnyxOptions{APIKey: "KEYx", ConnectionID: "conn", PublicKey: pub}
	for _, tc := range []struct {
		name    string
		o       TelnyxOptions
		wantErr string // "": no error
		live    bool
	}{
		{"none: live mode not configured", TelnyxOptions{}, "", false},
		{"all three", full, "", true},
		{"with API URL and from", TelnyxOptions{APIKey: "KEYx", ConnectionID: "conn", PublicKey: pub, APIURL: "http://127.0.0.1:1", From: "+12125550199"}, "", true},
		{"key only", TelnyxOptions{APIKey: "KEYx"}, "FAXHUB_TELNYX_CONNECTION_ID, FAXHUB_TELNYX_PUBLIC_KEY missing", false},
		{"no public key", TelnyxOptions{APIKey: "KEYx", ConnectionID: "conn"}, "FAXHUB_TELNYX_PUBLIC_KEY missing", false},
		{"no key", TelnyxOptions{ConnectionID: "conn", PublicKey: pub}, "FAXHUB_TELNYX_API_KEY missing", false},
		{"API URL alone", TelnyxOptions{APIURL: "http://127.0.0.1:1"}, "without FAXHUB_TELNYX_API_KEY", false},
		{"bad public key", TelnyxOptions{APIKey: "KEYx", ConnectionID: "conn", PublicKey: "bm90IGEga2V5"}, "not a base64 Ed25519", false},
		{"bad from", TelnyxOptions{APIKey: "KEYx", ConnectionID: "conn", PublicKey: pub, From: "12125550199"}, "FAXHUB_TELNYX_FROM", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := &App{Options: Options{Telnyx: tc.o}}
			deps := services.Deps{Providers: map[core.Mode]faxes.Provider{}}
			err := a.wireTelnyx(&deps)
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("err = %v, want one naming %q", err, tc.wantErr)
			}
			if err != nil && strings.Contains(err.Error(), "KEYx") {
				t.Errorf("the error repeats the API key: %v", err)
			}
			if got := deps.Providers[core.ModeLive] != nil && deps.Numbers[core.ModeLive] != nil; got != tc.live {
				t.Errorf("live provider wired = %v, want %v", got, tc.live)
			}
			if got := a.telnyxKey != nil; got != tc.live {
				t.Errorf("webhook key set = %v, want %v", got, tc.live)
			}
		})
	}
}

func TestTelnyxWebhookNotConfigured(t *testing.T) {
	a := &App{}
	rec := httptest.NewRecorder()
	a.telnyxWebhookHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/webhooks/telnyx", strings.NewReader("{}")))
	if rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), faxes.CodeProviderUnavailable) {
		t.Errorf("%d %s", rec.Code, rec.Body)
	}
}
