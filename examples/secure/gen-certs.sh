#!/bin/sh
# Generates a throw-away CA, a broker certificate (localhost, 127.0.0.1) and a client
# certificate (CN=alice) for examples/secure, into ./certs next to this script.
# Nothing it writes is committed (certs/ is ignored); run it again for fresh keys.
set -eu
cd "$(dirname "$0")"
mkdir -p certs
cd certs
days=30

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days "$days" \
  -subj "/CN=gokafkad example CA" -keyout ca.key -out ca.pem 2>/dev/null

issue() { # name subject extensions
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
    -subj "$2" -keyout "$1.key" -out "$1.csr" 2>/dev/null
  printf '%s\n' "$3" > "$1.ext"
  openssl x509 -req -in "$1.csr" -CA ca.pem -CAkey ca.key -CAcreateserial -days "$days" \
    -extfile "$1.ext" -out "$1.crt" 2>/dev/null
  # PKCS#8 key, then the chain: what ssl.keystore.type=PEM reads from one file.
  openssl pkcs8 -topk8 -nocrypt -in "$1.key" -out "$1.p8"
  cat "$1.p8" "$1.crt" ca.pem > "$1.pem"
  rm -f "$1.csr" "$1.ext" "$1.key"
}

issue broker "/O=gokafkad example/OU=brokers/CN=localhost" \
  "subjectAltName=DNS:localhost,IP:127.0.0.1
extendedKeyUsage=serverAuth,clientAuth"
issue alice "/O=gokafkad example/OU=clients/CN=alice" "extendedKeyUsage=clientAuth"

# The broker's key encrypted with a password (ssl.key.password), and PKCS12 copies
# (ssl.keystore.type=PKCS12) for clients that want them; the password is "example".
openssl pkcs8 -topk8 -v2 aes-256-cbc -passout pass:example -in broker.p8 -out broker.encrypted.p8
openssl pkcs12 -export -in alice.crt -inkey alice.p8 -certfile ca.pem -passout pass:example -out alice.p12
rm -f ca.key ca.srl
echo "wrote $(pwd): ca.pem, broker.pem, broker.encrypted.p8, alice.pem, alice.crt, alice.p8, alice.p12"
