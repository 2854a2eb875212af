package jcs

import "testing"

func TestCanonicalize(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"sorted keys nested", `{"b":1,"a":{"d":[3,2],"c":null}}`, `{"a":{"c":null,"d":[3,2]},"b":1}`},
		{"whitespace dropped", " { \"a\" : [ true , false ] } ", `{"a":[true,false]}`},
		{"no html escaping", `{"h":"<a&b>"}`, `{"h":"<a&b>"}`},
		{"unicode kept raw", `{"d":"caf\u00e9 \u2615"}`, `{"d":"café ☕"}`},
		{"line separators raw", `"\u2028\u2029"`, "\"\u2028\u2029\""},
		{"control escapes", `"\u0001\u001f\n\t\b\f\r\"\\\/"`, `"\u0001\u001f\n\t\b\f\r\"\\/"`},
		{"integer", `100`, `100`},
		{"trailing zero fraction", `1.0`, `1`},
		{"exponent form", `1E3`, `1000`},
		{"negative zero", `-0.0`, `0`},
		{"small", `0.000001`, `0.000001`},
		{"smaller", `0.0000001`, `1e-7`},
		{"large", `1e21`, `1e+21`},
		{"below 1e21", `123456789012345678901`, `123456789012345680000`},
		{"shortest float", `4.50`, `4.5`},
		{"rfc 8785 sample", `333333333.33333329`, `333333333.3333333`},
		{"utf16 key order", `{"\ufb33":1,"\ud83d\ude00":2,"a":3}`, "{\"a\":3,\"\U0001F600\":2,\"\uFB33\":1}"},
		{"empty object", `{}`, `{}`},
		{"empty array", `[]`, `[]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Canonicalize([]byte(tt.in))
			if err != nil {
				t.Fatalf("Canonicalize(%s): %v", tt.in, err)
			}
			if string(got) != tt.want {
				t.Fatalf("Canonicalize(%s) = %s, want %s", tt.in, got, tt.want)
			}
		})
	}
}

func TestCanonicalizeRefuses(t *testing.T) {
	for _, in := range []string{``, `{`, `1e400`, `{"a":1} {}`, "\"\xff\""} {
		if got, err := Canonicalize([]byte(in)); err == nil {
			t.Errorf("Canonicalize(%q) = %s, want an error", in, got)
		}
	}
}

func TestMarshal(t *testing.T) {
	type inner struct {
		Z string `json:"z"`
		A int64  `json:"a"`
	}
	v := struct {
		Name  string  `json:"name"`
		Inner inner   `json:"inner"`
		Price float64 `json:"price"`
	}{"<fax>", inner{"x", 7}, 0.07}
	got, err := Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"inner":{"a":7,"z":"x"},"name":"<fax>","price":0.07}`; string(got) != want {
		t.Fatalf("Marshal = %s, want %s", got, want)
	}
	if _, err := Marshal(func() {}); err == nil {
		t.Fatal("Marshal(func) succeeded")
	}
}
