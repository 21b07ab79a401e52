package server

import (
	"crypto/tls"
	"errors"
)

func (b *Broker) serverTLS(name string) (*tls.Config, error) {
	return nil, errors.New("server: listener " + name + ": TLS is not supported yet")
}

func (b *Broker) tlsPrincipal(st tls.ConnectionState) (string, error) {
	return anonymousPrincipal, nil
}
