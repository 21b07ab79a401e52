package config

// validCordonedLogDirs accepts only the empty cordoned.log.dirs. Kafka 4.4 (KIP-1066)
// keeps new partition replicas off a cordoned directory (every one with "*") and
// reports it in DescribeLogDirs v5; gokafkad places replicas without looking at log
// directories, so a cordon it was given would be one it does not keep: refused
// instead, at start-up and in IncrementalAlterConfigs.
func validCordonedLogDirs(v any) string {
	if dirs, _ := v.([]string); len(dirs) > 0 {
		return "cordoning log directories is not supported by gokafkad (only the empty list is accepted)"
	}
	return ""
}
