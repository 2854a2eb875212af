package agents

// Error codes of agent registration (spec, Errors) and of the claim and
// jwt-bearer grants (RFC 6749 section 5.2, RFC 8628 section 3.5): the OAuth
// adapter sends them as the "error" member.
const (
	CodeEnrollmentRequired   = "enrollment_required"
	CodeInvalidEnrollment    = "invalid_enrollment"
	CodeLoginHintMismatch    = "login_hint_mismatch"
	CodeEmailMismatch        = "email_mismatch"
	CodeTooManyEnrollments   = "too_many_enrollments"
	CodeInvalidScope         = "invalid_scope"
	CodeInvalidGrant         = "invalid_grant"
	CodeInvalidTarget        = "invalid_target"
	CodeAuthorizationPending = "authorization_pending"
	CodeSlowDown             = "slow_down"
	CodeExpiredToken         = "expired_token"
	CodeAccessDenied         = "access_denied"
)

// Error codes of the owner's claim page.
const (
	CodeClaimLinkInvalid  = "claim_link_invalid" // unknown or superseded link
	CodeClaimWrongOwner   = "claim_wrong_account"
	CodeClaimExpired      = "claim_expired"
	CodeClaimDecided      = "claim_decided"
	CodeClaimWrongCode    = "claim_wrong_code"
	CodeClaimTooManyTries = "claim_too_many_tries"
	CodeClaimScopeWiden   = "claim_scope_not_permitted"
)
