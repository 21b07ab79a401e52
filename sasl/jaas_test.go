package sasl

import (
	"errors"
	"maps"
	"testing"
)

func TestParseJAAS(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     []JAASEntry
		err      bool
	}{
		{name: "plain", in: `org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" user_admin="admin-secret";`,
			want: []JAASEntry{{LoginModule: PlainLoginModule, Flag: "required", Options: map[string]string{"username": "admin", "password": "admin-secret", "user_admin": "admin-secret"}}}},
		{name: "bare words, flags any case, comments", in: "org.apache.kafka.common.security.scram.ScramLoginModule REQUIRED // the broker\n username=admin /* inline */ password='a\"b\\n';",
			want: []JAASEntry{{LoginModule: ScramLoginModule, Flag: "required", Options: map[string]string{"username": "admin", "password": "a\"b\n"}}}},
		{name: "two entries", in: `a.B required; c.D optional k="v";`,
			want: []JAASEntry{{LoginModule: "a.B", Flag: "required", Options: map[string]string{}}, {LoginModule: "c.D", Flag: "optional", Options: map[string]string{"k": "v"}}}},
		{name: "oauth", in: `org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required unsecuredLoginStringClaim_sub="admin";`,
			want: []JAASEntry{{LoginModule: OAuthBearerLoginModule, Flag: "required", Options: map[string]string{"unsecuredLoginStringClaim_sub": "admin"}}}},
		{name: "empty", in: "  ", err: true},
		{name: "no flag", in: "a.B", err: true},
		{name: "bad flag", in: "a.B always;", err: true},
		{name: "no semicolon", in: `a.B required k="v"`, err: true},
		{name: "no value", in: `a.B required k=;`, err: true},
		{name: "numeric value", in: `a.B required k=4096;`, err: true},
		{name: "no equals", in: `a.B required k "v";`, err: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseJAAS(tc.in)
			if tc.err {
				if err == nil || !errors.Is(err, ErrJAAS) {
					t.Fatalf("got %v, %v", got, err)
				}
				return
			}
			if err != nil || len(got) != len(tc.want) {
				t.Fatalf("got %v, %v", got, err)
			}
			for i := range got {
				if got[i].LoginModule != tc.want[i].LoginModule || got[i].Flag != tc.want[i].Flag || !maps.Equal(got[i].Options, tc.want[i].Options) {
					t.Fatalf("entry %d = %+v, want %+v", i, got[i], tc.want[i])
				}
			}
		})
	}
	if _, err := ParseJAASConfig(`a.B required; c.D required;`); err == nil {
		t.Fatal("two modules accepted for sasl.jaas.config")
	}
}
