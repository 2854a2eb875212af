package accounts

// Error codes of accounts: stable and machine-readable, part of the public API.
const (
	CodeInvalidAPIKey = "invalid_api_key"
	CodeOwnerExists   = "owner_exists"
	// CodeLinkInvalid: a sign-up or recovery link that never was, was used
	// or has expired.
	CodeLinkInvalid = "link_invalid"
)
