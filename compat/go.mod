module github.com/gokafkad/gokafkad/compat

go 1.26.8
