package core

// Agent tasks are the long-running things an agent asked for over A2A: a
// fax it drafted and the owner pays at a hosted checkout, credits it buys
// under an AP2 mandate, a fax number the owner pays at a checkout. A task
// row stores only what it follows (its subject: a draft, a credit
// purchase, a number); its state is derived from that subject every time it is read,
// so a payment on the checkout page, a delivery outcome or an owner's
// approval moves the task without anyone writing to it, and any replica
// answers. Adapters map TaskView to their protocol; they decide nothing.

// Operations of tasks (scopes in principal.go).
const (
	OpGetTask    Operation = "get_task"
	OpCancelTask Operation = "cancel_task"
	OpBuyCredits Operation = "buy_credits"
)
