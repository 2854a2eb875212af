package core

// MachineOwnerID owns the documents and faxes of paying machines. The
// migration creates it; it has no passkeys and an e-mail address on the
// reserved .invalid domain, so no one can sign in as it or claim it.
const MachineOwnerID = "own_machine"
