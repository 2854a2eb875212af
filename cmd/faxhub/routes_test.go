package main

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
)

// TestRoutesCommand: `faxhub routes` takes serve's flags and prints the
// router that configuration builds, one line per route, with the metrics
// listener's route marked as such and each route on its origin's host.
func TestRoutesCommand(t *testing.T) {
	args := append([]string{"routes", "--base-url", "http://fax.example:8080", "--api-url", "https://api.fax.example",
		"--metrics-addr", "127.0.0.1:9464", "--machine-payments", "off", "--dev"}, dataArgs(t)...)
	out, err := faxhub(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if !regexp.MustCompile(`^METHOD +HOST +ORIGIN +PATH +NAME +ADAPTER +AUTH$`).MatchString(lines[0]) {
		t.Fatalf("header %q", lines[0])
	}
	row := func(cols ...string) *regexp.Regexp {
		return regexp.MustCompile("(?m)^" + strings.Join(cols, " +") + "$")
	}
	for _, want := range []*regexp.Regexp{
		row("POST", "api.fax.example", "api", regexp.QuoteMeta("/api/v1/faxes"), `rest\.sendFax`, "rest", "api_key"),
		row("GET", "fax.example:8080", "base", regexp.QuoteMeta("/console/static/*"), `passkeys\.static`, "passkeys", "none"),
		row("GET", "fax.example:8080", "base", regexp.QuoteMeta("/console/mailbox"), `passkeys\.mailbox`, "passkeys", "none"),
		row("POST", "fax.example:8080", "base", "/mcp", `mcp\.endpoint`, "mcp", "bearer"),
		row("POST", "api.fax.example", "api", "/webhooks/telnyx", `webhooks\.telnyx`, "webhooks", "signature"),
		row("GET", regexp.QuoteMeta("127.0.0.1:9464"), regexp.QuoteMeta("metrics (listener)"), "/metrics", `app\.metrics`, "app", "none"),
	} {
		if !want.MatchString(out) {
			t.Errorf("no line matching %s in\n%s", want, out)
		}
	}
	// Machine payments off: no built-in Stripe test backend, no mint.
	if strings.Contains(out, "app.stripeTestMint") {
		t.Error("the test mint is listed with machine payments off")
	}
	if n := len(lines) - 1; n < 100 {
		t.Errorf("%d routes", n)
	}
	if _, err := faxhub(t, "routes", "--bogus"); err == nil || !strings.Contains(fmt.Sprint(err), "bogus") {
		t.Errorf("an unknown flag: %v", err)
	}
}
