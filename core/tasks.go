package core

// PrefixContext names a conversation (A2A contextId) that faxhub started
// because the agent sent none.
const PrefixContext = "ctx_"
