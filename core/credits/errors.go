package credits

// Error codes of credits: stable and machine-readable, part of the public API.
const (
	CodeInsufficientCredits = "insufficient_credits"
	CodeUnknownPack         = "unknown_credit_pack"
)
