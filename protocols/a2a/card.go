package a2a

import (
	"github.com/faxhub/faxhub/core"
)

// The agent card is written here in the A2A 1.0 JSON shape (ProtoJSON of
// the spec's AgentCard) rather than by a2a-go's serializer, which emits
// securityRequirements as {"oauth":[…]} instead of {"oauth":{"list":[…]}}
// (a2aproject/a2a-go#430).

// AgentCard is the card as served.
type AgentCard struct {
	Name                 string                    `json:"name"`
	Description          string                    `json:"description"`
	Version              string                    `json:"version"`
	Provider             CardProvider              `json:"provider"`
	DocumentationURL     string                    `json:"documentationUrl"`
	SupportedInterfaces  []CardInterface           `json:"supportedInterfaces"`
	Capabilities         CardCapabilities          `json:"capabilities"`
	SecuritySchemes      map[string]SecurityScheme `json:"securitySchemes"`
	SecurityRequirements []SecurityRequirement     `json:"securityRequirements"`
	DefaultInputModes    []string                  `json:"defaultInputModes"`
	DefaultOutputModes   []string                  `json:"defaultOutputModes"`
	Skills               []CardSkill               `json:"skills"`
}

// CardProvider is AgentProvider.
type CardProvider struct {
	Organization string `json:"organization"`
	URL          string `json:"url"`
}

// CardInterface is AgentInterface: one URL, binding and protocol version.
type CardInterface struct {
	URL             string `json:"url"`
	ProtocolBinding string `json:"protocolBinding"`
	ProtocolVersion string `json:"protocolVersion"`
}

// CardCapabilities says truthfully what is offered.
type CardCapabilities struct {
	Streaming         bool            `json:"streaming"`
	PushNotifications bool            `json:"pushNotifications"`
	ExtendedAgentCard bool            `json:"extendedAgentCard"`
	Extensions        []CardExtension `json:"extensions"`
}

// CardExtension is AgentExtension.
type CardExtension struct {
	URI         string         `json:"uri"`
	Description string         `json:"description"`
	Required    bool           `json:"required"`
	Params      map[string]any `json:"params,omitempty"`
}

// SecurityScheme holds one scheme; faxhub has only OAuth 2.0.
type SecurityScheme struct {
	OAuth2 *OAuth2Scheme `json:"oauth2SecurityScheme,omitempty"`
}

// OAuth2Scheme is OAuth2SecurityScheme.
type OAuth2Scheme struct {
	Description       string     `json:"description"`
	OAuth2MetadataURL string     `json:"oauth2MetadataUrl"`
	Flows             OAuthFlows `json:"flows"`
}

// OAuthFlows holds the authorization code flow.
type OAuthFlows struct {
	AuthorizationCode *AuthorizationCodeFlow `json:"authorizationCode"`
}

// AuthorizationCodeFlow is AuthorizationCodeOAuthFlow.
type AuthorizationCodeFlow struct {
	AuthorizationURL string            `json:"authorizationUrl"`
	TokenURL         string            `json:"tokenUrl"`
	Scopes           map[string]string `json:"scopes"`
	PKCERequired     bool              `json:"pkceRequired"`
}

// SecurityRequirement is the ProtoJSON of SecurityRequirement: scheme
// name → {"list": scopes}.
type SecurityRequirement struct {
	Schemes map[string]StringList `json:"schemes"`
}

// StringList is the ProtoJSON of a repeated string wrapper.
type StringList struct {
	List []string `json:"list"`
}

// CardSkill is AgentSkill.
type CardSkill struct {
	ID                   string                `json:"id"`
	Name                 string                `json:"name"`
	Description          string                `json:"description"`
	Tags                 []string              `json:"tags"`
	Examples             []string              `json:"examples"`
	InputModes           []string              `json:"inputModes"`
	OutputModes          []string              `json:"outputModes"`
	SecurityRequirements []SecurityRequirement `json:"securityRequirements"`
}

// securityScheme is the card's name of the OAuth scheme.
const securityScheme = "oauth"

// scopeDescriptions are the card's words for the OAuth scopes.
var scopeDescriptions = map[core.Scope]string{
	core.ScopeFaxRead:         "read faxes and the tasks that follow them",
	core.ScopeFaxDraft:        "upload documents, price and draft faxes (the owner pays at a checkout page)",
	core.ScopeFaxSend:         "send drafted faxes with account credits (not used by A2A, which never spends credits)",
	core.ScopeInboxRead:       "read received faxes",
	core.ScopeCreditsRead:     "read the credit balance",
	core.ScopeCreditsCheckout: "create credit checkouts and buy credits under AP2 (each charge approved by the owner with a passkey)",
}

// requirement says: OAuth with these scopes. The card-wide one lists no
// scope (any faxhub token for this resource); each skill names its own.
func requirement(scopes ...string) []SecurityRequirement {
	if scopes == nil {
		scopes = []string{}
	}
	return []SecurityRequirement{{Schemes: map[string]StringList{securityScheme: {List: scopes}}}}
}

// Card returns the agent card. Its URLs are those of the routes it names
// (the endpoint, llms.txt, the authorization server's metadata and
// endpoints); the resource is the endpoint's identifier.
func (h *Handler) Card() (AgentCard, error) {
	base := h.opts.BaseURL
	urls := map[string]string{}
	for _, name := range []string{"a2a.endpoint", "rest.getLLMsTxt", "oauth.metadataIssuer", "oauth.authorize", "oauth.token"} {
		u, err := h.url(name)
		if err != nil {
			return AgentCard{}, err
		}
		urls[name] = u
	}
	scopes := map[string]string{}
	for _, s := range core.FaxScopes() {
		scopes[string(s)] = scopeDescriptions[s]
	}
	schemas := map[string]any{}
	skills := make([]CardSkill, 0, len(h.skills))
	for _, s := range h.skills {
		schemas[s.ID] = s.Schema
		skills = append(skills, CardSkill{
			ID: s.ID, Name: s.Name, Description: s.Description, Tags: s.Tags, Examples: s.Examples,
			InputModes: []string{"application/json"}, OutputModes: []string{"application/json", "text/plain"},
			SecurityRequirements: requirement(string(core.ScopeFor(s.Op))),
		})
	}
	return AgentCard{
		Name: "faxhub",
		Description: "Sends faxes for the signed-in owner. Send one data part {\"skill\": <id>, \"arguments\": {…}} (free text is not interpreted): " +
			"create_upload, then create_fax, which answers a task waiting for the owner to pay at checkoutUrl; follow it until the fax is delivered " +
			"(SendStreamingMessage or SubscribeToTask stream its changes; or poll GetTask). " +
			"A2A never spends account credits. Credits can be bought under AP2 (buy_credits). Never send protected health information through A2A.",
		Version:          h.opts.Version,
		Provider:         CardProvider{Organization: "faxhub", URL: base},
		DocumentationURL: urls["rest.getLLMsTxt"],
		SupportedInterfaces: []CardInterface{
			{URL: urls["a2a.endpoint"], ProtocolBinding: "JSONRPC", ProtocolVersion: "1.0"},
			{URL: urls["a2a.endpoint"], ProtocolBinding: "JSONRPC", ProtocolVersion: "0.3"},
		},
		// Streaming: SendStreamingMessage and SubscribeToTask (stream.go);
		// push notifications (push.go) where the server sends them.
		Capabilities: CardCapabilities{Streaming: true, PushNotifications: h.svc.Tasks.PushAvailable(), Extensions: []CardExtension{
			{URI: ExtensionAP2, Required: false, Params: map[string]any{"roles": []string{"merchant"}},
				Description: "AP2 v0.1 payments: faxhub is the merchant of credit packs (skill buy_credits). Activate it with the A2A-Extensions header; " + ExtensionAP2Sample + " is accepted too."},
			{URI: h.skillArgumentsURI(), Required: false, Params: map[string]any{"schemas": schemas},
				Description: "The JSON Schema of each skill's arguments (params.schemas, by skill id). Informational: nothing to activate."},
		}},
		SecuritySchemes: map[string]SecurityScheme{securityScheme: {OAuth2: &OAuth2Scheme{
			Description:       "OAuth 2.0 authorization code with PKCE (dynamic client registration at the authorization server), or an agent-registration token; request tokens for the resource " + h.Resource() + ". DPoP-bound tokens are not accepted.",
			OAuth2MetadataURL: urls["oauth.metadataIssuer"],
			Flows: OAuthFlows{AuthorizationCode: &AuthorizationCodeFlow{
				AuthorizationURL: urls["oauth.authorize"], TokenURL: urls["oauth.token"], Scopes: scopes, PKCERequired: true,
			}},
		}}},
		SecurityRequirements: requirement(),
		DefaultInputModes:    []string{"application/json"},
		DefaultOutputModes:   []string{"application/json", "text/plain"},
		Skills:               skills,
	}, nil
}
