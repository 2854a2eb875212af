package webhooks

// Error codes of webhooks: stable and machine-readable, part of the
// public API.
const (
	// CodeInvalidURL: an endpoint URL faxhub will not deliver to (not
	// https, credentials in it, too long, a private address, …); the
	// detail says which rule it broke.
	CodeInvalidURL = "invalid_webhook_url"
	// CodeTooManyEndpoints: the owner has MaxEndpoints endpoints in the
	// mode already.
	CodeTooManyEndpoints = "too_many_webhook_endpoints"
	// CodeEndpointDisabled: redelivering to a disabled endpoint; enable it
	// first (a test event may be sent to a disabled endpoint).
	CodeEndpointDisabled = "webhook_endpoint_disabled"
)
