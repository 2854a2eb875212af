package tasks

// Error codes of agent tasks (tasks.go) and AP2 credit purchases
// (ap2.go).
const (
	CodeNotCancelable = "task_not_cancelable"
	// CodeCartMismatch: a payment mandate names another cart, amount or
	// currency than the cart we offered for this task.
	CodeCartMismatch = "payment_mandate_mismatch"
	// CodeMandateReplayed: the payment mandate id was used already.
	CodeMandateReplayed = "payment_mandate_replayed"
	CodeCartExpired     = "cart_expired"
	// CodePurchaseState: the purchase is past the step the request is for.
	CodePurchaseState = "purchase_not_open"
	// CodePaymentUnavailable: no payment method for AP2 charges is
	// configured in this mode.
	CodePaymentUnavailable = "payment_method_not_configured"
)
