package web

import (
	"encoding/json"
	"reflect"
	"sort"
)

// UnknownMember is the path (coverPage.fax) of the first member of the
// JSON value body that v's type has no field for, or "" when every member
// is known (or body is not JSON: the decoder says what is wrong with it).
// encoding/json's DisallowUnknownFields names the member but not where it
// is; a door whose arguments nest objects (the send options' coverPage and
// retry) names the whole path, so the agent knows which one to fix.
// Members are visited in name order, so the answer is the same every time.
func UnknownMember(body []byte, v any) string {
	var doc any
	if json.Unmarshal(body, &doc) != nil {
		return ""
	}
	return unknownMember(doc, reflect.TypeOf(v), "")
}

func unknownMember(doc any, t reflect.Type, at string) string {
	t = jsonTarget(t)
	if t == nil {
		return ""
	}
	switch d := doc.(type) {
	case map[string]any:
		var fields map[string]reflect.Type
		switch t.Kind() {
		case reflect.Struct:
			fields = jsonFields(t)
		case reflect.Map:
		default:
			return ""
		}
		names := make([]string, 0, len(d))
		for k := range d {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			next := t
			if fields != nil {
				ft, ok := fields[k]
				if !ok {
					return memberPath(at, k)
				}
				next = ft
			} else {
				next = t.Elem()
			}
			if p := unknownMember(d[k], next, memberPath(at, k)); p != "" {
				return p
			}
		}
	case []any:
		if t.Kind() != reflect.Slice && t.Kind() != reflect.Array {
			return ""
		}
		for _, e := range d {
			if p := unknownMember(e, t.Elem(), at+"[]"); p != "" {
				return p
			}
		}
	}
	return ""
}

// memberPath joins a member's name to its parent's path: plain names as
// they are, anything else quoted (it is the client's text, echoed back).
func memberPath(at, name string) string {
	plain := name != "" && len(name) <= 64
	for _, r := range name {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			plain = false
			break
		}
	}
	if !plain {
		name = printable(name)
	}
	if at == "" {
		return name
	}
	return at + "." + name
}
