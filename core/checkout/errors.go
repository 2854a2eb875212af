package checkout

// Error codes of checkout: stable and machine-readable, part of the public API.
const (
	CodeCheckoutUnavailable = "checkout_not_configured"
	CodeCheckoutState       = "checkout_not_payable"
)
