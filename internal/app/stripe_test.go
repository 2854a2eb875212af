package app

import (
	"strings"
	"testing"
)

func TestLiveCheckoutNeedsBothStripeSecrets(t *testing.T) {
	for _, tc := range []struct {
		name    string
		st      StripeOptions
		wantErr string // "" : no error
		wantGW  bool
	}{
		{"neither: live checkouts not configured", StripeOptions{}, "", false},
		{"both", StripeOptions{SecretKey: "sk_test_x", WebhookSecret: "whsec_x"}, "", true},
		{"key without webhook secret: machine payments only", StripeOptions{SecretKey: "sk_test_x"}, "", false},
		{"webhook secret without key", StripeOptions{WebhookSecret: "whsec_x"}, "FAXHUB_STRIPE_SECRET_KEY", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gw, err := liveCheckout(Options{BaseURL: "http://faxhub.test", Stripe: tc.st}, nil)
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("err = %v, want one naming %q", err, tc.wantErr)
			}
			if (gw != nil) != tc.wantGW {
				t.Fatalf("gateway = %v, want one: %v", gw, tc.wantGW)
			}
		})
	}
}
