package mpp

import "github.com/faxhub/faxhub/core/machine"

// Core's typed values of machine payments (core/machine) and their wire
// forms: core offers, binds and checks Challenges, takes Credentials and
// returns Receipts; this package renders and reads them.

// FromMachine is the wire form of a challenge core offers.
func FromMachine(c machine.Challenge) Challenge {
	return Challenge{
		ID: c.ID, Realm: c.Realm, Method: c.Method, Intent: c.Intent, Request: c.Request, Expires: c.Expires,
		Digest: c.Digest, Opaque: c.Opaque,
	}
}

// Machine is the challenge as core takes it. Description, display only and
// not bound, has no place there.
func (c *Challenge) Machine() machine.Challenge {
	return machine.Challenge{
		ID: c.ID, Realm: c.Realm, Method: c.Method, Intent: c.Intent, Request: c.Request, Expires: c.Expires,
		Digest: c.Digest, Opaque: c.Opaque,
	}
}

// Machine is the credential as core takes it, its echo decoded into the
// challenge (Credential.Challenge's errors: an *Error, invalid-challenge).
func (c *Credential) Machine() (*machine.Credential, error) {
	ch, err := c.Challenge()
	if err != nil {
		return nil, err
	}
	return &machine.Credential{Challenge: ch.Machine(), Source: c.Source, Payload: c.Payload}, nil
}

// ReceiptOf is the wire form of the receipt core gives with a paid order.
func ReceiptOf(r machine.Receipt) Receipt {
	return Receipt{
		Status: r.Status, Method: r.Method, Timestamp: r.Timestamp, Reference: r.Reference,
		ChallengeID: r.ChallengeID, ExternalID: r.ExternalID,
	}
}

// Binder is machine.Binder on this wire format: a challenge's id is the
// HMAC-SHA256 over the seven slots as Challenge.Bind computes them, the id
// every SDK of the draft computes.
type Binder struct{}

var _ machine.Binder = Binder{}

// Bind returns the id of c under secret; it fails for a challenge the wire
// cannot carry (Challenge.Bind).
func (Binder) Bind(secret []byte, c machine.Challenge) (string, error) {
	w := FromMachine(c)
	if err := w.Bind(secret); err != nil {
		return "", err
	}
	return w.ID, nil
}

// Issue binds c as Bind does and renders it from the same encoding, so a
// challenge offered in a 402 has its request and opaque put in JCS form
// once, not once to bind it and again to render it (issue 32). The header
// is what Header renders for c with its id; it is "" when Header would fail
// (a challenge over MaxChallengeBytes), so that the answer renders it and
// fails as it did before.
func (Binder) Issue(secret []byte, c machine.Challenge) (id, header string, err error) {
	w := FromMachine(c)
	req, opaque, err := w.bind(secret)
	if err != nil {
		return "", "", err
	}
	if header, err = w.render(req, opaque); err != nil {
		header = ""
	}
	return w.ID, header, nil
}
