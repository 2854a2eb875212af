// Package mpp is the wire format of the Machine Payments Protocol
// (draft-ryan-httpauth-payment, the "Payment" HTTP authentication scheme):
// HMAC-bound challenges for WWW-Authenticate, credentials from
// Authorization, receipts for Payment-Receipt, RFC 9530 body digests,
// Accept-Payment negotiation and the protocol's problem types.
//
// It is only the format, on the adapter's side: core/machine works on typed
// values (machine.Challenge, machine.Credential, machine.Receipt) and this
// package renders and reads them (machine.go), and computes challenge ids
// for core, rendering a challenge as it binds it (Binder, machine.Binder). It stores nothing (single use of a
// challenge, request ids and charges are core's job), settles nothing (the
// stripe and tempo methods are core/payments' PaymentMethod
// implementations), decides no refusal (rest maps core's refusal kinds to
// its problem types), knows no prices or faxes, and routes no HTTP (the
// machine endpoints live in rest/). It depends on the standard library,
// core/jcs and core/machine's types only.
package mpp
