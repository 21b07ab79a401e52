package config

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strings"
	"unicode/utf8"
)

// ReadProperties parses Java .properties text as java.util.Properties.load
// does: lines starting with # or ! (after leading blanks) are comments; a
// key ends at the first unescaped '=', ':' or blank, and blanks plus one
// optional '='/':' separate it from the value; a line ending in an odd
// number of backslashes continues on the next line, whose leading blanks
// are dropped; \t \n \r \f \uXXXX are escapes and a backslash before any
// other character stands for that character. Values keep trailing blanks
// out: gokafkad trims them, as Kafka's ConfigDef does when parsing. A
// later duplicate key wins.
func ReadProperties(r io.Reader) (map[string]string, error) {
	out := map[string]string{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
	var (
		logical strings.Builder
		cont    bool
		startNo int
		lineNo  int
	)
	flush := func() error {
		line := logical.String()
		logical.Reset()
		k, v, err := splitProperty(line)
		if err != nil {
			return fmt.Errorf("config: properties line %d: %w", startNo, err)
		}
		if k != "" || v != "" {
			out[k] = strings.TrimRight(v, " \t\f")
		}
		return nil
	}
	for sc.Scan() {
		lineNo++
		line := strings.TrimSuffix(sc.Text(), "\r")
		if cont {
			line = strings.TrimLeft(line, " \t\f")
		} else {
			trimmed := strings.TrimLeft(line, " \t\f")
			if trimmed == "" || trimmed[0] == '#' || trimmed[0] == '!' {
				continue
			}
			line = trimmed
			startNo = lineNo
		}
		if n := trailingBackslashes(line); n%2 == 1 {
			logical.WriteString(line[:len(line)-1])
			cont = true
			continue
		}
		logical.WriteString(line)
		cont = false
		if err := flush(); err != nil {
			return nil, err
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("config: reading properties: %w", err)
	}
	if cont {
		if err := flush(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// ReadPropertiesFile reads a server.properties file with ReadProperties.
func ReadPropertiesFile(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	defer f.Close()
	return ReadProperties(f)
}

func trailingBackslashes(s string) int {
	n := 0
	for i := len(s) - 1; i >= 0 && s[i] == '\\'; i-- {
		n++
	}
	return n
}

// splitProperty splits one logical line (leading blanks removed) into
// its unescaped key and value.
func splitProperty(line string) (string, string, error) {
	keyEnd, valStart := len(line), len(line)
	for i := 0; i < len(line); i++ {
		c := line[i]
		if c == '\\' {
			i++ // skip the escaped character
			continue
		}
		if c == '=' || c == ':' || c == ' ' || c == '\t' || c == '\f' {
			keyEnd = i
			j := i
			for j < len(line) && (line[j] == ' ' || line[j] == '\t' || line[j] == '\f') {
				j++
			}
			if c != '=' && c != ':' && j < len(line) && (line[j] == '=' || line[j] == ':') {
				j++
			} else if c == '=' || c == ':' {
				j = i + 1
			}
			for j < len(line) && (line[j] == ' ' || line[j] == '\t' || line[j] == '\f') {
				j++
			}
			valStart = j
			break
		}
	}
	k, err := unescape(line[:keyEnd])
	if err != nil {
		return "", "", err
	}
	v, err := unescape(line[valStart:])
	if err != nil {
		return "", "", err
	}
	return k, v, nil
}

func unescape(s string) (string, error) {
	if !strings.Contains(s, `\`) {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' {
			b.WriteByte(c)
			continue
		}
		i++
		if i >= len(s) {
			break // a lone trailing backslash is dropped, as Java does
		}
		switch s[i] {
		case 't':
			b.WriteByte('\t')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 'f':
			b.WriteByte('\f')
		case 'u':
			if i+5 > len(s) {
				return "", fmt.Errorf("malformed \\uXXXX escape in %q", s)
			}
			var r rune
			for _, h := range s[i+1 : i+5] {
				d, ok := hexVal(h)
				if !ok {
					return "", fmt.Errorf("malformed \\uXXXX escape in %q", s)
				}
				r = r<<4 | d
			}
			i += 4
			// A surrogate pair written as two escapes becomes one rune.
			if r >= 0xD800 && r < 0xDC00 && i+7 <= len(s) && strings.HasPrefix(s[i+1:], `\u`) {
				var lo rune
				ok := true
				for _, h := range s[i+3 : i+7] {
					d, good := hexVal(h)
					ok = ok && good
					lo = lo<<4 | d
				}
				if ok && lo >= 0xDC00 && lo < 0xE000 {
					r = 0x10000 + (r-0xD800)<<10 + (lo - 0xDC00)
					i += 6
				}
			}
			if !utf8.ValidRune(r) {
				r = utf8.RuneError
			}
			b.WriteRune(r)
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String(), nil
}

func hexVal(h rune) (rune, bool) {
	switch {
	case h >= '0' && h <= '9':
		return h - '0', true
	case h >= 'a' && h <= 'f':
		return h - 'a' + 10, true
	case h >= 'A' && h <= 'F':
		return h - 'A' + 10, true
	}
	return 0, false
}

// ParseOverride splits a --override argument "key=value". The key is
// trimmed and must not be empty; the value is kept as given (it may be
// empty, and may itself contain '=').
func ParseOverride(s string) (key, value string, err error) {
	k, v, ok := strings.Cut(s, "=")
	k = strings.TrimSpace(k)
	if !ok || k == "" {
		return "", "", fmt.Errorf("%w: override %q is not key=value", ErrInvalidValue, s)
	}
	return k, v, nil
}
