package security

import (
	"encoding/asn1"
	"encoding/hex"
	"errors"
	"strings"
	"unicode/utf16"
)

// Distinguished names written as Java's X500Principal.getName() writes them (RFC 2253
// form), since that is the string Kafka's ssl.principal.mapping.rules and ACLs see:
// relative distinguished names last to first, joined by ','; the AVAs of a
// multi-valued RDN joined by '+'; the RFC 2253 keywords (CN, C, L, ST, O, OU, STREET,
// DC, UID), any other attribute as its dotted OID; string values with Java's escapes
// (, = + < > # ; " \ and leading / trailing spaces), and a value of another ASN.1
// type, or of an attribute without a keyword, as '#' and the hex of its DER.

// rfc2253Keywords are the attribute types X500Principal.RFC2253 names by keyword.
var rfc2253Keywords = map[string]string{
	"2.5.4.3":                    "CN",
	"2.5.4.6":                    "C",
	"2.5.4.7":                    "L",
	"2.5.4.8":                    "ST",
	"2.5.4.10":                   "O",
	"2.5.4.11":                   "OU",
	"2.5.4.9":                    "STREET",
	"0.9.2342.19200300.100.1.25": "DC",
	"0.9.2342.19200300.100.1.1":  "UID",
}

// rawATV is one AttributeTypeAndValue with its value kept as DER.
type rawATV struct {
	Type  asn1.ObjectIdentifier
	Value asn1.RawValue
}

// rawRDNSET is one RelativeDistinguishedName (a SET OF AttributeTypeAndValue).
type rawRDNSET []rawATV

// errBadName is returned for a subject that is not a DER Name.
var errBadName = errors.New("security: certificate subject is not a valid distinguished name")

// DistinguishedName renders the DER of an X.509 Name (a certificate's RawSubject) as
// X500Principal.getName() does.
func DistinguishedName(rawName []byte) (string, error) {
	var rdns []rawRDNSET
	rest, err := asn1.Unmarshal(rawName, &rdns)
	if err != nil || len(rest) > 0 {
		return "", errBadName
	}
	var sb strings.Builder
	for i := len(rdns) - 1; i >= 0; i-- {
		if i < len(rdns)-1 {
			sb.WriteByte(',')
		}
		for j, atv := range rdns[i] {
			if j > 0 {
				sb.WriteByte('+')
			}
			writeATV(&sb, atv)
		}
	}
	return sb.String(), nil
}

func writeATV(sb *strings.Builder, atv rawATV) {
	kw, known := rfc2253Keywords[atv.Type.String()]
	if !known {
		kw = atv.Type.String()
	}
	sb.WriteString(kw)
	sb.WriteByte('=')
	s, ok := derString(atv.Value)
	if !known || !ok {
		sb.WriteByte('#')
		sb.WriteString(hex.EncodeToString(atv.Value.FullBytes))
		return
	}
	sb.WriteString(escapeRFC2253(s))
}

// derString decodes the string types Java renders as text (DerValue.isDerString, not
// canonical): PrintableString, T61String, IA5String, GeneralString, BMPString,
// UTF8String.
func derString(v asn1.RawValue) (string, bool) {
	if v.Class != asn1.ClassUniversal || v.IsCompound {
		return "", false
	}
	switch v.Tag {
	case asn1.TagUTF8String:
		return string(v.Bytes), true
	case asn1.TagPrintableString, asn1.TagIA5String, asn1.TagT61String, asn1.TagGeneralString:
		// One byte per character (ISO-8859-1), as Java reads them.
		r := make([]rune, len(v.Bytes))
		for i, b := range v.Bytes {
			r[i] = rune(b)
		}
		return string(r), true
	case asn1.TagBMPString:
		if len(v.Bytes)%2 != 0 {
			return "", false
		}
		u := make([]uint16, len(v.Bytes)/2)
		for i := range u {
			u[i] = uint16(v.Bytes[2*i])<<8 | uint16(v.Bytes[2*i+1])
		}
		return string(utf16.Decode(u)), true
	}
	return "", false
}

// escapeRFC2253 escapes a value as Java's AVA.toRFC2253String: a backslash before
// each of , = + < > # ; " \ and before leading and trailing spaces (and carriage
// returns), NUL as \00.
func escapeRFC2253(s string) string {
	var b strings.Builder
	for _, c := range s {
		switch {
		case strings.ContainsRune(",=+<>#;\"\\", c):
			b.WriteByte('\\')
			b.WriteRune(c)
		case c == 0:
			b.WriteString(`\00`)
		default:
			b.WriteRune(c)
		}
	}
	r := []rune(b.String())
	lead := 0
	for lead < len(r) && (r[lead] == ' ' || r[lead] == '\r') {
		lead++
	}
	trail := len(r) - 1
	for trail >= 0 && (r[trail] == ' ' || r[trail] == '\r') {
		trail--
	}
	if lead == 0 && trail == len(r)-1 {
		return string(r)
	}
	var out strings.Builder
	for i, c := range r {
		if i < lead || i > trail {
			out.WriteByte('\\')
		}
		out.WriteRune(c)
	}
	return out.String()
}
