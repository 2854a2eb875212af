package approvals

// Error codes of approvals: stable and machine-readable, part of the public API.
const (
	CodeApprovalState    = "approval_not_pending"
	CodeApprovalBinding  = "approval_binding_mismatch"
	CodeUserVerification = "user_verification_required"
)
