package main

func kcatSuite() Suite    { return Suite{Name: "kcat", Steps: func(*X) []Step { return nil }} }
func javaSuite() Suite    { return Suite{Name: "java", Steps: func(*X) []Step { return nil }} }
func kafkajsSuite() Suite { return Suite{Name: "kafkajs", Steps: func(*X) []Step { return nil }} }
func kafkaPythonSuite() Suite {
	return Suite{Name: "kafka-python", Steps: func(*X) []Step { return nil }}
}
