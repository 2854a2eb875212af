package machine

// Error codes of machine: stable and machine-readable, part of the public API.
const (
	CodeMachinePaymentsOff = "machine_payments_disabled"
	// CodeMachinePaymentsMissing: machine payments are switched on but no
	// payment method is wired yet (the machine-payments issue adds them).
	CodeMachinePaymentsMissing = "machine_payments_not_available"
)
