package config

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Sentinel errors. Every error this package returns wraps one of them, so
// callers map them with errors.Is: both map to INVALID_CONFIG on the wire.
var (
	// ErrInvalidValue: a value that does not parse as its type or falls
	// outside its valid range, or a combination Kafka rejects at start-up.
	ErrInvalidValue = errors.New("config: invalid value")
	// ErrUnknownConfig: a key that is not a known topic (or broker) config.
	ErrUnknownConfig = errors.New("config: unknown config")
	// ErrReadOnly (with ErrInvalidValue): a broker config that cannot be altered at
	// run time (ValidateDynamicBrokerConfig), which Kafka refuses with "Cannot update
	// these configs dynamically".
	ErrReadOnly = errors.New("config: cannot be updated dynamically")
	// ErrPerBrokerOnly (with ErrInvalidValue): a broker config that can be altered
	// for one broker only, not as the cluster-wide default.
	ErrPerBrokerOnly = errors.New("config: can only be updated for a specific broker")
)

// Error is an invalid or unknown key with the reason. Its message reads
// `config: invalid value "abc" for node.id: not an integer`.
type Error struct {
	Key    string
	Value  string
	Reason string
	// Unknown is set when Key is not a known config at all.
	Unknown bool
	// Level is ErrReadOnly or ErrPerBrokerOnly when the key cannot be altered
	// dynamically at the level asked for (nil otherwise).
	Level error
}

// Error implements error.
func (e *Error) Error() string {
	if e.Unknown {
		return fmt.Sprintf("config: unknown config %q", e.Key)
	}
	if e.Key == "" {
		return "config: " + e.Reason
	}
	return fmt.Sprintf("config: invalid value %q for %s: %s", e.Value, e.Key, e.Reason)
}

// Is makes errors.Is(err, ErrInvalidValue) and errors.Is(err, ErrUnknownConfig) work.
func (e *Error) Is(target error) bool {
	if e.Unknown {
		return target == ErrUnknownConfig
	}
	return target == ErrInvalidValue || (e.Level != nil && target == e.Level)
}

func invalid(key, value, format string, args ...any) error {
	return &Error{Key: key, Value: value, Reason: fmt.Sprintf(format, args...)}
}

// Type is a config's type, numbered as DescribeConfigs v3+ reports it
// (DescribeConfigsResponse ConfigType).
type Type int8

// Config types with their wire numbers.
const (
	TypeUnknown  Type = 0
	TypeBoolean  Type = 1
	TypeString   Type = 2
	TypeInt      Type = 3
	TypeShort    Type = 4
	TypeLong     Type = 5
	TypeDouble   Type = 6
	TypeList     Type = 7
	TypeClass    Type = 8
	TypePassword Type = 9
)

// String is the Java ConfigDef.Type name, e.g. "LONG".
func (t Type) String() string {
	switch t {
	case TypeBoolean:
		return "BOOLEAN"
	case TypeString:
		return "STRING"
	case TypeInt:
		return "INT"
	case TypeShort:
		return "SHORT"
	case TypeLong:
		return "LONG"
	case TypeDouble:
		return "DOUBLE"
	case TypeList:
		return "LIST"
	case TypeClass:
		return "CLASS"
	case TypePassword:
		return "PASSWORD"
	}
	return "UNKNOWN"
}

// Importance is Kafka's ConfigDef.Importance.
type Importance int8

// Importance levels.
const (
	High Importance = iota
	Medium
	Low
)

// String is the Java name, e.g. "HIGH".
func (i Importance) String() string {
	switch i {
	case High:
		return "HIGH"
	case Medium:
		return "MEDIUM"
	}
	return "LOW"
}

// ConfigSource is where a described value comes from, numbered as
// DescribeConfigs v1+ reports it (DescribeConfigsResponse ConfigSource).
type ConfigSource int8

// Config sources with their wire numbers.
const (
	SourceUnknown                    ConfigSource = 0
	SourceDynamicTopicConfig         ConfigSource = 1
	SourceDynamicBrokerConfig        ConfigSource = 2
	SourceDynamicDefaultBrokerConfig ConfigSource = 3
	SourceStaticBrokerConfig         ConfigSource = 4
	SourceDefaultConfig              ConfigSource = 5
	SourceDynamicBrokerLoggerConfig  ConfigSource = 6
)

// String is the Java ConfigSource name, e.g. "STATIC_BROKER_CONFIG".
func (s ConfigSource) String() string {
	switch s {
	case SourceDynamicTopicConfig:
		return "DYNAMIC_TOPIC_CONFIG"
	case SourceDynamicBrokerConfig:
		return "DYNAMIC_BROKER_CONFIG"
	case SourceDynamicDefaultBrokerConfig:
		return "DYNAMIC_DEFAULT_BROKER_CONFIG"
	case SourceStaticBrokerConfig:
		return "STATIC_BROKER_CONFIG"
	case SourceDefaultConfig:
		return "DEFAULT_CONFIG"
	case SourceDynamicBrokerLoggerConfig:
		return "DYNAMIC_BROKER_LOGGER_CONFIG"
	}
	return "UNKNOWN"
}

// Dynamic says whether and how a broker config can be changed at run time
// with IncrementalAlterConfigs, as Kafka's DynamicBrokerConfig classifies it.
type Dynamic int8

const (
	// ReadOnly configs are read from server.properties at start-up only.
	ReadOnly Dynamic = iota
	// PerBroker configs can be altered for one broker only (resource name
	// = the node id), never as a cluster-wide default: listeners and friends.
	PerBroker
	// ClusterWide configs can be altered for one broker or as the cluster
	// default (empty resource name).
	ClusterWide
)

// String is how kafka-configs describes the mode.
func (d Dynamic) String() string {
	switch d {
	case PerBroker:
		return "per-broker"
	case ClusterWide:
		return "cluster-wide"
	}
	return "read-only"
}

// Def defines one config key.
type Def struct {
	Name string
	Type Type
	// Default is Kafka's default in the textual form DescribeConfigs shows.
	// Meaningless when NullDefault is set.
	Default string
	// NullDefault: Kafka's default is null (no value; a fallback applies).
	NullDefault bool
	Importance  Importance
	// Doc is a one-line description.
	Doc string
	// Valid checks a parsed value; nil accepts every value of the type.
	Valid *Validator
	// Dynamic: how the config may be altered at run time (broker configs).
	Dynamic Dynamic
	// Sensitive values are never returned by DescribeConfigs.
	Sensitive bool
	// Ignored configs are accepted and reported but have no effect in
	// gokafkad (thread counts and the like; see the Doc).
	Ignored bool
	// Synonyms are the broker keys a topic config inherits its default
	// from, in precedence order (topic configs only).
	Synonyms []string
}

// ReadOnly reports whether DescribeConfigs marks the config read-only.
func (d *Def) ReadOnly() bool { return d.Dynamic == ReadOnly }

// Validator is a value constraint: a range, a set of strings, a set of list
// elements or a custom check. Exactly one kind is set.
type Validator struct {
	min, max    float64
	hasMin      bool
	hasMax      bool
	in          []string // for STRING: one of; for LIST: every element one of
	custom      func(v any) string
	description string
}

func atLeast(n float64) *Validator { return &Validator{min: n, hasMin: true} }
func between(lo, hi float64) *Validator {
	return &Validator{min: lo, hasMin: true, max: hi, hasMax: true}
}
func oneOf(s ...string) *Validator { return &Validator{in: s} }
func custom(desc string, f func(v any) string) *Validator {
	return &Validator{custom: f, description: desc}
}

// String describes the valid values as Kafka's documentation does,
// e.g. "[1,...]" or "[CreateTime, LogAppendTime]".
func (v *Validator) String() string {
	if v == nil {
		return ""
	}
	switch {
	case v.custom != nil:
		return v.description
	case v.in != nil:
		return "[" + strings.Join(v.in, ", ") + "]"
	case v.hasMin && v.hasMax:
		return "[" + fmtNum(v.min) + ",...," + fmtNum(v.max) + "]"
	case v.hasMin:
		return "[" + fmtNum(v.min) + ",...]"
	}
	return ""
}

func fmtNum(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// check returns "" when v is acceptable, or the reason it is not.
func (v *Validator) check(val any) string {
	if v == nil {
		return ""
	}
	if v.custom != nil {
		return v.custom(val)
	}
	if v.in != nil {
		switch x := val.(type) {
		case string:
			if !contains(v.in, x) {
				return "must be one of " + v.String()
			}
		case []string:
			for _, e := range x {
				if !contains(v.in, e) {
					return fmt.Sprintf("%q is not one of %s", e, v.String())
				}
			}
		}
		return ""
	}
	var f float64
	switch x := val.(type) {
	case int64:
		f = float64(x)
	case float64:
		f = x
	default:
		return ""
	}
	if v.hasMin && f < v.min {
		if v.hasMax {
			return "must be between " + fmtNum(v.min) + " and " + fmtNum(v.max)
		}
		return "must be at least " + fmtNum(v.min)
	}
	if v.hasMax && f > v.max {
		return "must be between " + fmtNum(v.min) + " and " + fmtNum(v.max)
	}
	return ""
}

func contains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}

// parseValue parses s as d's type, as Kafka's ConfigDef.parseType does
// (values are trimmed; booleans are case-insensitive; lists are
// comma-separated with each element trimmed and an empty string meaning an
// empty list), then applies d's validator. The result is int64 for INT,
// SHORT and LONG, float64 for DOUBLE, bool, string or []string.
func (d *Def) parseValue(s string) (any, error) {
	t := strings.TrimSpace(s)
	var v any
	switch d.Type {
	case TypeBoolean:
		switch strings.ToLower(t) {
		case "true":
			v = true
		case "false":
			v = false
		default:
			return nil, invalid(d.Name, s, "expected true or false")
		}
	case TypeInt, TypeShort, TypeLong:
		bits, what := 64, "a long"
		switch d.Type {
		case TypeInt:
			bits, what = 32, "an integer"
		case TypeShort:
			bits, what = 16, "a short"
		}
		n, err := strconv.ParseInt(t, 10, bits)
		if err != nil {
			if errors.Is(err, strconv.ErrRange) {
				return nil, invalid(d.Name, s, "out of range for %s", strings.TrimPrefix(strings.TrimPrefix(what, "an "), "a "))
			}
			return nil, invalid(d.Name, s, "not %s", what)
		}
		v = n
	case TypeDouble:
		f, err := strconv.ParseFloat(t, 64)
		if err != nil || math.IsNaN(f) {
			return nil, invalid(d.Name, s, "not a number")
		}
		v = f
	case TypeList:
		v = splitList(t)
	default:
		v = t
	}
	if reason := d.Valid.check(v); reason != "" {
		return nil, invalid(d.Name, s, "%s", reason)
	}
	return v, nil
}

// splitList splits a comma-separated list, trimming each element; "" is
// the empty list.
func splitList(s string) []string {
	s = strings.TrimSpace(s)
	if s == "" {
		return []string{}
	}
	parts := strings.Split(s, ",")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	return parts
}
