// Package testcheckout is test mode's hosted checkout gateway: it sends
// payers to our own test checkout page (internal/testcheckout serves it),
// which takes a documented test card and completes the checkout without
// moving money.
package testcheckout

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/checkout"
)

// Test cards accepted by the test checkout page (Stripe's test numbers, so
// they are familiar and never real).
const (
	TestCardSuccess = "4242424242424242"
	TestCardDecline = "4000000000000002"
)

// TestCheckoutPath is where the test checkout page is served (the
// checkout's id follows).
const TestCheckoutPath = "/checkout/test/"

// TestGateway is the test-mode checkout.Gateway.
type TestGateway struct {
	baseURL string
}

var _ checkout.Gateway = (*TestGateway)(nil)

// NewTestGateway sends payers to the test checkout page under baseURL.
func NewTestGateway(baseURL string) *TestGateway {
	return &TestGateway{baseURL: strings.TrimRight(baseURL, "/")}
}

// Start returns the test page's URL for c; there is no external id.
func (g *TestGateway) Start(ctx context.Context, c *checkout.Checkout, description string) (string, string, error) {
	if c.Mode != core.ModeTest {
		return "", "", fmt.Errorf("start test checkout %s: the test gateway takes test-mode checkouts only, not %s", c.ID, c.Mode)
	}
	return g.baseURL + TestCheckoutPath + url.PathEscape(c.ID), "", nil
}
