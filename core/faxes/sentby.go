package faxes

import "github.com/faxhub/faxhub/core"

// SentByUnknown is the door of a fax made before faxes recorded theirs
// (migration 00027) that could not be inferred.
const SentByUnknown core.PrincipalKind = "unknown"

// maxSentByName bounds the name kept with a fax: a credential's name is
// the owner's or an app's text, shown in lists.
const maxSentByName = 200

// SentBy is the door a fax came in by: the kind of principal that made it
// (an API key, a chat app's OAuth grant, an agent registration, a
// delegated agent, a paying machine, the owner in the console), the id of
// its credential and the name the owner knows it by. Never a secret: ids
// and names only, so it can be shown on every door's view of the fax.
type SentBy struct {
	Kind core.PrincipalKind `json:"kind" db:"sent_by_kind"`
	ID   string             `json:"id,omitempty" db:"sent_by_id"`
	Name string             `json:"name,omitempty" db:"sent_by_name"`
}

// SentByPrincipal is the door of a fax p makes.
func SentByPrincipal(p core.Principal) SentBy {
	return SentBy{Kind: p.Kind, ID: p.SubjectID, Name: core.CutUTF8(p.ClientName, maxSentByName)}
}

// SentByMachine is the door of a fax a machine paid for by method (stripe,
// tempo): the payer has no account, so the method names it.
func SentByMachine(method string) SentBy {
	return SentBy{Kind: core.PrincipalMachinePayer, Name: core.CutUTF8(method, maxSentByName)}
}

// SentByAgent is the door of a fax a delegated agent asked for and the
// owner approved: the agent, and the host it runs on.
func SentByAgent(agentID, agentName, hostName string) SentBy {
	name := agentName
	if hostName != "" {
		name += " on " + hostName
	}
	return SentBy{Kind: core.PrincipalDelegated, ID: agentID, Name: core.CutUTF8(name, maxSentByName)}
}

// orUnknown is s, or the unknown door when none was recorded (a stored
// response of a send made before faxes recorded their door).
func (s SentBy) orUnknown() SentBy {
	if s.Kind == "" {
		s.Kind = SentByUnknown
	}
	return s
}
